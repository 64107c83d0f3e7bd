"""klebench.py launch-cost: host work per target region, the fork against stock
LLVM 22.1.8.

Runs bench/launch-cost (one binary, built against the fork; stock's
libraries from scripts/build-stock.sh are put first on LD_LIBRARY_PATH for
the stock runs, which the binary's RUNPATH does not override).

  launch-cost instructions [--device cuda|host|both] [--stock DIR:DIR]
      whole-process instructions per region under callgrind
      (--separate-threads=no): Ir/region = (Ir(N2) - Ir(N1)) / (N2 - N1), so
      start-up and tear-down cancel; per component (kle/instructions.py)
      and counted calls per region (dlsym, strtol, malloc, locks, driver
      calls). Rows on the CUDA driver stand-in: the synchronous 1-team
      reduction under resident and copy (stock: upstream's KLE path, one
      row), the same region without a reduction (no KLE), and a pipelined
      nowait batch (8 teams, reduction, 64 in flight). On the host device
      (x86_64 plugin, OMP_NUM_THREADS=1): the reduction region.
  launch-cost calls --device host|cuda --forbid dlsym,strtol
      the counted calls per region of the fork's reduction region, and exit
      status 1 if a forbidden one is not 0 per region (the regression check
      of test/host/launch_path_calls.test).
  launch-cost latency --stock DIR:DIR [--pairs P] [--device host|cuda]
                         [--kind reduction[:T][@P]|baseline[:T][@P]|nowait]
      region latency (default: the host device's reduction region): P
      interleaved pairs of processes (fork, stock; the order alternates pair
      by pair), each printing the median of its samples of ns per region and
      of the process's CPU time per region (getrusage); the fork/stock ratio
      per pair, their median and a 95% CI (kle.stats.paired_median_ci over the
      pairs in order). On the CUDA driver stand-in (--device cuda) each
      process also runs the floor (kle-floor.h: the same work through the
      CUDA driver directly) sample by sample, and fork and stock are each
      reported as a multiple of it, with its CI.

Counts repeat from run to run; times do not: only the latency mode times,
and only as a paired ratio. JSON of every figure goes to --out.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from kle import common, stats
from kle import instructions as cp
from kle.common import REPO


def die(msg, code=1):
    common.die(common.PROG, msg, code)


def stock_dirs(a):
    if a.stock:
        dirs = a.stock.split(":")
    else:
        b = os.path.join(REPO, "build", "stock")
        dirs = [os.path.join(b, "offload"), os.path.join(b, "libomp", "runtime", "src")]
    for d, lib in zip(dirs, ("libomptarget.so", "libomp.so")):
        if not os.path.exists(os.path.join(d, lib)):
            die("no stock %s in %s: run scripts/build-stock.sh (or pass --stock "
                "OFFLOAD_LIB_DIR:LIBOMP_DIR)" % (lib, d))
    return dirs


def env_for(a, runtime, device, transport=None):
    env = dict(os.environ)
    path = []
    if runtime == "stock":
        path += a.stock_dirs
    elif runtime == "before":
        path.append(a.before)
    if device == "cuda":
        path.append(a.standin)
        env["KLE_STANDIN_DELAY_US"] = "0:0"
        env["KLE_STANDIN_SEED"] = "1"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(path + [env.get("LD_LIBRARY_PATH", "")])
    env["OMP_NUM_THREADS"] = "1"
    # Idle libomp threads (hidden helpers, taskwait) sleep at once instead of
    # spinning for 200 ms, which would count as instructions per region.
    env["KMP_BLOCKTIME"] = "0"
    for v in ("LIBOMPTARGET_KLE_TRANSPORT", "LIBOMPTARGET_INFO", "LIBOMPTARGET_PROFILE",
              "LIBOMPTARGET_DEBUG", "OMP_TARGET_OFFLOAD", "KLE_BENCH_DEVICE"):
        env.pop(v, None)
    if transport:
        env["LIBOMPTARGET_KLE_TRANSPORT"] = transport
    env["KLE_BENCH_DEVICE"] = str(device_number(a, env, device))
    return env


def device_number(a, env, device):
    """The device to measure: the first CUDA device (the stand-in's) for
    cuda; for host, the first device, with no GPU driver on the path (the
    host plugin's). From `launch-cost devices` under this environment."""
    e = dict(env)
    e.pop("KLE_BENCH_DEVICE", None)
    devs = common.list_devices(a.bench, e, common.PROG, cmd=[a.bench, "devices"])
    if not devs:
        die("%s devices found no device" % a.bench)
    if device == "cuda":
        cuda = [n for n, uid in devs if uid.startswith("CUDA")]
        if not cuda:
            die("no CUDA device through the stand-in in %s (devices: %s)" % (a.standin, devs))
        return cuda[0]
    return devs[0][0]


def callgrind(a, env, kind, n, tmp, tag):
    out = os.path.join(tmp, "cg.%s.%d.out" % (tag, n))
    cmd = [a.valgrind, "--tool=callgrind", "-q", "--separate-threads=no",
           "--dump-instr=no", "--dump-line=no", "--callgrind-out-file=" + out,
           a.bench, kind, str(n)]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        die("%s (%s) timed out after %d s (--timeout)" % (" ".join(cmd[-3:]), tag, a.timeout))
    if r.returncode or "regions done" not in r.stdout:
        die("%s (%s) failed with status %d: %s" % (" ".join(cmd[-3:]), tag, r.returncode,
                                                   (r.stderr or r.stdout)[-400:].strip()))
    p = cp.parse(out)
    if not a.keep:
        os.unlink(out)
    return p


def per_region(a, env, kind, tmp, tag):
    """Figures per region from the --repeat pairs of runs: those of the pair
    with the median total (the lower middle one for an even count), and the
    range of the totals."""
    reps = sorted((per_region_once(a, env, kind, tmp, tag) for _ in range(a.repeat)),
                  key=lambda r: r["total"])
    med = dict(reps[(len(reps) - 1) // 2])
    med["total_range"] = [reps[0]["total"], reps[-1]["total"]]
    return med


def per_region_once(a, env, kind, tmp, tag):
    n1, n2 = a.n1, a.n2
    p1 = callgrind(a, env, kind, n1, tmp, tag)
    p2 = callgrind(a, env, kind, n2, tmp, tag)
    d = n2 - n1
    c1, c2 = cp.components(p1), cp.components(p2)
    k1, k2 = cp.counted_calls(p1), cp.counted_calls(p2)
    if p2.total < p1.total:
        # More regions cannot take fewer instructions: the run-to-run
        # variation exceeds N2 - N1 regions' work.
        die("%s: %d regions took fewer instructions than %d (%d < %d): N2 - N1 "
            "= %d regions is too few for the run-to-run variation; widen "
            "--launches (default 50,150)" % (tag, n2, n1, p2.total, p1.total, d))
    return {"total": (p2.total - p1.total) / d,
            "components": {k: (c2[k] - c1[k]) / d for k in cp.COMPONENTS},
            "calls": {k: (k2[k] - k1[k]) / d for k in k1}}


def rows_for(device):
    if device == "cuda":
        return [("reduction", "resident"), ("reduction", "copy"),
                ("baseline", "resident"), ("nowait", "resident")]
    return [("reduction", None)]


def instructions(a):
    res = {"launches": [a.n1, a.n2], "unit": "Ir per region", "rows": []}
    devices = ["cuda", "host"] if a.device == "both" else [a.device]
    with tempfile.TemporaryDirectory() as tmp:
        for dev in devices:
            for kind, transport in rows_for(dev):
                for rt in ("fork", "stock") + (("before",) if a.before else ()):
                    if rt == "stock" and (transport == "copy" or a.no_stock):
                        continue  # stock has one KLE path (upstream's)
                    if rt == "before" and transport == "copy":
                        continue
                    fork_like = rt != "stock"
                    row = {"device": dev, "kind": kind, "runtime": rt,
                           "transport": transport if fork_like else "upstream"}
                    print("measuring %s %s %s %s" % (dev, kind, rt, row["transport"]),
                          file=sys.stderr, flush=True)
                    row.update(per_region(a, env_for(a, rt, dev, transport if fork_like else None),
                                          kind, tmp, "%s-%s-%s" % (dev, kind, rt)))
                    res["rows"].append(row)
    print_instructions(res)
    return res


def print_instructions(res):
    print("WHOLE PROCESS, instructions per target region (callgrind, N=%d vs %d)"
          % tuple(res["launches"]))
    hdr = ["device", "region", "runtime", "total"] + list(cp.COMPONENTS)
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    stock = {}
    for r in res["rows"]:
        if r["runtime"] == "stock":
            stock[(r["device"], r["kind"])] = r["total"]
    for r in res["rows"]:
        label = r["runtime"] + ("" if r["runtime"] == "stock" else " " + (r["transport"] or ""))
        cells = [r["device"], r["kind"], label.strip(), "%.0f" % r["total"] + (
            " (%.0f-%.0f)" % tuple(r["total_range"]) if r["total_range"][0] != r["total_range"][1] else "")]
        cells += ["%.0f" % r["components"][k] for k in cp.COMPONENTS]
        print("| " + " | ".join(cells) + " |")
    print()
    print("Calls per region")
    names = [k for k, _ in cp.COUNTED_CALLS]
    print("| device | region | runtime | " + " | ".join(names) + " |")
    print("|" + "---|" * (3 + len(names)))
    for r in res["rows"]:
        label = r["runtime"] + ("" if r["runtime"] == "stock" else " " + (r["transport"] or ""))
        print("| %s | %s | %s | " % (r["device"], r["kind"], label.strip()) +
              " | ".join("%.2f" % r["calls"][k] for k in names) + " |")
    print()
    for r in res["rows"]:
        s = stock.get((r["device"], r["kind"]))
        if r["runtime"] == "fork" and s:
            print("ratio fork/stock %s %s %s: %.3f" % (r["device"], r["kind"], r["transport"] or "",
                                                     r["total"] / s))


def calls(a):
    env = env_for(a, "fork", a.device, None)
    with tempfile.TemporaryDirectory() as tmp:
        r = per_region(a, env, "reduction", tmp, "calls")
    for k, v in r["calls"].items():
        print("calls per region %s %.2f" % (k, v))
    bad = [k for k in a.forbid.split(",") if k and r["calls"].get(k, 0) != 0]
    unknown = [k for k in a.forbid.split(",") if k and k not in r["calls"]]
    if unknown:
        die("--forbid names calls that are not counted: %s" % ",".join(unknown))
    for k in bad:
        print("FORBIDDEN per-region call: %s %.2f per region" % (k, r["calls"][k]))
    return r, 1 if bad else 0


def latency(a):
    common.require_scipy()
    dev = "cuda" if a.device == "cuda" else "host"
    floor = dev == "cuda"
    pairs = []
    for i in range(a.pairs):
        order = ("fork", "stock") if i % 2 == 0 else ("stock", "fork")
        got = {}
        for rt in order:
            cmd = [a.bench, a.kind, str(a.regions), str(a.samples)] + (["floor"] if floor else [])
            try:
                r = subprocess.run(cmd, env=env_for(a, rt, dev), capture_output=True,
                                   text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                die("%s (%s) timed out after %d s (--timeout)" % (" ".join(cmd), rt, a.timeout))
            if r.returncode:
                die("%s (%s) failed with status %d: %s" % (" ".join(cmd), rt, r.returncode,
                                                           common.complaint(r.stderr)))
            v = {}
            for line in r.stdout.splitlines():
                k, _, x = line.partition(" ")
                if k.endswith("ns_per_region"):
                    v.setdefault(k, []).append(float(x))
            if not v.get("ns_per_region") or (floor and not v.get("floor_ns_per_region")):
                die("%s (%s) printed no samples: %s" % (" ".join(cmd), rt, r.stdout[-200:]))
            got[rt] = {k: statistics.median(x) for k, x in v.items()}
            if floor:
                # Paired in the process: each sample's region over its floor.
                got[rt]["x_floor"] = statistics.median(
                    x / f for x, f in zip(v["ns_per_region"], v["floor_ns_per_region"]))
        pairs.append(got)
        print("pair %d: fork %.0f ns, stock %.0f ns, ratio %.3f" %
              (i + 1, got["fork"]["ns_per_region"], got["stock"]["ns_per_region"],
               got["fork"]["ns_per_region"] / got["stock"]["ns_per_region"]), file=sys.stderr)
    ratio = stats.paired_median_ci(
        [p["fork"]["ns_per_region"] / p["stock"]["ns_per_region"] for p in pairs])
    res = {"device": dev, "kind": a.kind, "pairs": pairs, "regions_per_sample": a.regions,
           "samples": a.samples, "median_ratio": ratio[0], "ci95": list(ratio[1:])}
    for rt in ("fork", "stock"):
        for k in ("ns_per_region", "cpu_ns_per_region", "floor_ns_per_region",
                  "floor_cpu_ns_per_region"):
            if k in pairs[0][rt]:
                res["%s_%s" % (rt, k)] = statistics.median(p[rt][k] for p in pairs)
        if floor:
            res[rt + "_x_floor"] = list(stats.paired_median_ci([p[rt]["x_floor"] for p in pairs]))
    where = "CUDA DRIVER STAND-IN (host-side overhead only)" if dev == "cuda" else "HOST DEVICE"
    print("%s %s-region latency, %d interleaved pairs of processes (each: median of %d "
          "samples of %d regions)" % (where, a.kind, a.pairs, a.samples, a.regions))
    for rt in ("fork", "stock"):
        line = "%s %.0f ns per region (median over pairs), CPU %.0f ns per region (%.2f x wall)" % (
            rt, res[rt + "_ns_per_region"], res[rt + "_cpu_ns_per_region"],
            res[rt + "_cpu_ns_per_region"] / res[rt + "_ns_per_region"])
        if floor:
            line += "; %.2f x floor [%.2f, %.2f]" % tuple(res[rt + "_x_floor"])
        print(line)
    if floor:
        # The floor of the fork's processes and of stock's: the same program.
        f = [p[rt]["floor_ns_per_region"] for p in pairs for rt in ("fork", "stock")]
        fc = [p[rt]["floor_cpu_ns_per_region"] for p in pairs for rt in ("fork", "stock")]
        res["floor_ns_per_region"] = statistics.median(f)
        res["floor_cpu_ns_per_region"] = statistics.median(fc)
        print("floor %.0f ns per region (median over processes), CPU %.0f ns per region "
              "(%.2f x wall)" % (res["floor_ns_per_region"], res["floor_cpu_ns_per_region"],
                                 res["floor_cpu_ns_per_region"] / res["floor_ns_per_region"]))
    print("median ratio fork/stock %.3f, 95%% CI [%.3f, %.3f]" % ratio)
    return res


def main(argv):
    ap = argparse.ArgumentParser(prog=common.PROG, description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("instructions", "calls", "latency"))
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "launch-cost"))
    ap.add_argument("--standin", default=os.path.join(REPO, "build", "test", "cuda-standin", "lib"))
    ap.add_argument("--stock", default="", help="stock libomptarget and libomp directories, "
                    "DIR:DIR (default: build/stock's, from scripts/build-stock.sh)")
    ap.add_argument("--no-stock", action="store_true", help="instructions: the fork only")
    ap.add_argument("--before", default="", help="instructions: also rows 'before' with the "
                    "libomptarget and libomp in this directory (e.g. the fork without some patches)")
    ap.add_argument("--device", default="both", choices=("cuda", "host", "both"),
                    help="instructions and calls: where (default both); latency: host "
                         "(default) or cuda (the stand-in, with the floor)")
    ap.add_argument("--kind", default="reduction",
                    help="latency: the region, reduction[:TEAMS][@THREADS], "
                         "baseline[:TEAMS][@THREADS] (from THREADS host threads at once) or "
                         "nowait (default reduction, 1 team, 1 thread)")
    ap.add_argument("--launches", default="50,150", help="N1,N2 regions per callgrind run")
    ap.add_argument("--forbid", default="dlsym,strtol")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of runs per row (median)")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--regions", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--keep", action="store_true", help="keep callgrind files (in a temp dir)")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    try:
        a.n1, a.n2 = (int(x) for x in a.launches.split(","))
    except ValueError:
        die("--launches wants N1,N2, not %r" % a.launches)
    if not 1 <= a.n1 < a.n2:
        # N1 = 0 would leave the first region's one-time work (device and
        # image initialization) in the difference.
        die("--launches wants 1 <= N1 < N2, not %r" % a.launches)
    kt, _, p = a.kind.partition("@")
    k, _, t = kt.partition(":")
    if k not in ("reduction", "baseline", "nowait") or (
            ":" in kt and (k == "nowait" or not t.isdigit() or not 1 <= int(t) <= 65536)) or (
            "@" in a.kind and (k == "nowait" or not p.isdigit() or not 2 <= int(p) <= 64)):
        die("--kind wants reduction[:TEAMS][@THREADS], baseline[:TEAMS][@THREADS] (1 to "
            "65536 teams, 2 to 64 host threads) or nowait, not %r" % a.kind)
    for name in ("repeat", "pairs", "regions", "samples"):
        if getattr(a, name) < 1:
            die("--%s wants a number from 1, not %d" % (name, getattr(a, name)))
    if a.timeout < 1:
        die("--timeout wants a positive number of seconds per run, not %d" % a.timeout)
    if a.before:
        # env_for only puts --before first on the library path: a directory
        # without a libomptarget would measure the fork as "before".
        want = "(want the directory of the libomptarget.so to compare with)"
        if not os.path.isdir(a.before):
            die("--before %s is not a directory %s" % (a.before, want))
        if not glob.glob(os.path.join(glob.escape(a.before), "libomptarget.so*")):
            die("--before %s holds no libomptarget.so* %s" % (a.before, want))
    if not os.access(a.bench, os.X_OK):
        die("%s is not an executable; build bench/ (README)" % a.bench)
    if a.mode != "latency" and not shutil.which(a.valgrind):
        die("valgrind not found (Debian package 'valgrind')")
    if a.mode == "latency" and a.device == "both":
        a.device = "host"
    if a.mode != "calls" and a.device != "host" and not os.path.exists(
            os.path.join(a.standin, "libcuda.so.1")):
        die("no CUDA driver stand-in at %s (build the fork's tests)" % a.standin)
    a.stock_dirs = [] if a.mode == "calls" or a.no_stock else stock_dirs(a)
    # Before any run: a bad --out must not cost the figures at the end.
    if a.out:
        a.out = common.check_out_file(a.out, common.PROG, "launch-cost.json")
    rc = 0
    if a.mode == "instructions":
        res = instructions(a)
    elif a.mode == "calls":
        res, rc = calls(a)
    else:
        res = latency(a)
    if a.out:
        def write():
            with open(a.out, "w") as f:
                json.dump(res, f, indent=1)
        common.save_or_die(write, "--out %s" % a.out, common.PROG, res)
    return rc
