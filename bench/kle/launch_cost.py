"""klebench.py launch-cost: host work per target region, the fork against stock
LLVM 22.1.8 (bench/launch-cost; stock's libraries from scripts/build-stock.sh).

  instructions  whole-process Ir per region under callgrind, (Ir(N2) -
                Ir(N1)) / (N2 - N1), by component, with counted calls
  calls         the fork's counted calls per region; exit status 1 if a
                --forbid one is not 0
  latency       region latency from --pairs interleaved pairs of processes:
                the median fork/stock ratio with a 95% CI; --device cuda also
                reports each as a multiple of the floor (kle-floor.h)
"""
import glob
import os
import re
import sys
import tempfile

from kle import common, stats
from kle import instructions as cg
from kle.common import REPO, fail as die

def env_for(a, runtime, device, transport=None):
    env = {k: v for k, v in os.environ.items() if k not in (
        "LIBOMPTARGET_KLE_TRANSPORT", "LIBOMPTARGET_INFO", "LIBOMPTARGET_PROFILE",
        "LIBOMPTARGET_DEBUG", "OMP_TARGET_OFFLOAD", "KLE_BENCH_DEVICE")}
    path = {"stock": a.stock_dirs, "before": [a.before]}.get(runtime, [])
    if device == "cuda":
        path = path + [a.standin]
        env.update(KLE_STANDIN_DELAY_US="0:0", KLE_STANDIN_SEED="1")
    # Idle libomp threads sleep at once (spinning would count as instructions).
    env.update(LD_LIBRARY_PATH=os.pathsep.join(path + [env.get("LD_LIBRARY_PATH", "")]),
               OMP_NUM_THREADS="1", KMP_BLOCKTIME="0")
    if transport:
        env["LIBOMPTARGET_KLE_TRANSPORT"] = transport
    devs = common.list_devices(a.bench, env, common.PROG, cmd=[a.bench, "devices"])
    if not devs:
        die("%s devices found no device" % a.bench)
    cuda = [n for n, uid in devs if uid.startswith("CUDA")]
    if device == "cuda" and not cuda:
        die("no CUDA device through the stand-in in %s (devices: %s)" % (a.standin, devs))
    env["KLE_BENCH_DEVICE"] = str(cuda[0] if device == "cuda" else devs[0][0])
    return env

def per_region(a, env, kind, tag):
    """Figures per region of the median of --repeat pairs of runs."""
    reps = sorted((cg.difference(a, [a.bench, kind], env, tag, "regions done")[1]
                   for _ in range(a.repeat)), key=lambda r: r["total"])
    return dict({k: reps[(len(reps) - 1) // 2][k] for k in ("total", "components", "calls")},
                total_range=[reps[0]["total"], reps[-1]["total"]])

def instructions(a):
    res = {"launches": [a.n1, a.n2], "unit": "Ir per region", "rows": []}
    # Synchronous regions only: a nowait batch's count depends on timing
    # (threads poll while kernels run); its latency is `latency --kind nowait`.
    rows = {"cuda": [("reduction", "resident"), ("reduction", "copy"),
                     ("baseline", "resident")],
            "host": [("reduction", None)]}
    for dev in ["cuda", "host"] if a.device == "both" else [a.device]:
        for kind, transport in rows[dev]:
            for rt in ("fork", "stock") + (("before",) if a.before else ()):
                if rt != "fork" and (transport == "copy" or (rt == "stock" and a.no_stock)):
                    continue  # stock has one KLE path (upstream's)
                t = transport if rt != "stock" else None
                row = {"device": dev, "kind": kind, "runtime": rt,
                       "transport": t or ("upstream" if rt == "stock" else None)}
                print("measuring %s %s %s %s" % (dev, kind, rt, row["transport"]),
                      file=sys.stderr, flush=True)
                row.update(per_region(a, env_for(a, rt, dev, t), kind,
                                      "%s-%s-%s" % (dev, kind, rt)))
                res["rows"].append(row)
    print("WHOLE PROCESS, instructions per target region (callgrind, N=%d vs %d)"
          % tuple(res["launches"]))

    def table(head, cells):
        print("| " + " | ".join(["device", "region", "runtime"] + head) + " |")
        print("|" + "---|" * (3 + len(head)))
        for r in res["rows"]:
            label = r["runtime"] + ("" if r["runtime"] == "stock" else " " + (r["transport"] or ""))
            print("| " + " | ".join([r["device"], r["kind"], label.strip()] + cells(r)) + " |")
    table(["total"] + list(cg.COMPONENTS), lambda r: ["%.0f" % r["total"] + (
        " (%.0f-%.0f)" % tuple(r["total_range"]) if len(set(r["total_range"])) > 1 else "")] +
        ["%.0f" % r["components"][k] for k in cg.COMPONENTS])
    print("\nCalls per region")
    names = [k for k, _ in cg.COUNTED_CALLS]
    table(names, lambda r: ["%.2f" % r["calls"][k] for k in names])
    print()
    stock = {(r["device"], r["kind"]): r["total"] for r in res["rows"] if r["runtime"] == "stock"}
    for r in res["rows"]:
        s = stock.get((r["device"], r["kind"]))
        if r["runtime"] == "fork" and s:
            print("ratio fork/stock %s %s %s: %.3f" % (r["device"], r["kind"],
                                                     r["transport"] or "", r["total"] / s))
    return res, 0

def calls(a):
    """The counted calls per region; exit status 1 if a --forbid one is not 0."""
    r = per_region(a, env_for(a, "fork", a.device), "reduction", "calls")
    for k, v in r["calls"].items():
        print("calls per region %s %.2f" % (k, v))
    forbid = [k for k in a.forbid.split(",") if k]
    unknown = [k for k in forbid if k not in r["calls"]]
    if unknown:
        die("--forbid names calls that are not counted: %s" % ",".join(unknown))
    bad = [k for k in forbid if r["calls"][k] != 0]
    for k in bad:
        print("FORBIDDEN per-region call: %s %.2f per region" % (k, r["calls"][k]))
    return r, 1 if bad else 0

MIN_PAIRS_CI = 6  # fewer pairs give no block-bootstrap CI worth printing

def latency(a):
    np, _ = common.require_scipy()
    dev = "cuda" if a.device == "cuda" else "host"
    floor = dev == "cuda"
    pairs = []
    for i in range(a.pairs):
        got = {}
        for rt in ("fork", "stock") if i % 2 == 0 else ("stock", "fork"):
            cmd = [a.bench, a.kind, str(a.regions), str(a.samples)] + (["floor"] if floor else [])
            r = common.run_checked(cmd, env_for(a, rt, dev), a.timeout,
                                   "%s (%s)" % (" ".join(cmd), rt))
            v = {}
            for k, _, x in (line.partition(" ") for line in r.stdout.splitlines()):
                if k.endswith("ns_per_region"):
                    v.setdefault(k, []).append(float(x))
            if not v.get("ns_per_region") or (floor and not v.get("floor_ns_per_region")):
                die("%s (%s) printed no samples: %s" % (" ".join(cmd), rt, r.stdout[-200:]))
            got[rt] = {k: float(np.median(x)) for k, x in v.items()}
            if floor:  # paired in the process: each sample over its floor
                got[rt]["x_floor"] = float(np.median(
                    np.divide(v["ns_per_region"], v["floor_ns_per_region"])))
        pairs.append(got)
        print("pair %d: fork %.0f ns, stock %.0f ns, ratio %.3f" %
              (i + 1, got["fork"]["ns_per_region"], got["stock"]["ns_per_region"],
               got["fork"]["ns_per_region"] / got["stock"]["ns_per_region"]), file=sys.stderr)
    def ci(values):  # (median, low, high); no bounds from too few pairs
        m = stats.paired_median_ci(values)
        return m if len(values) >= MIN_PAIRS_CI else (m[0], None, None)

    def shown(m, sep=" ", label="", digits=3):  # " [lo, hi]", or why there is none
        return "%s%s[%.*f, %.*f]" % (sep, label, digits, m[1], digits, m[2]) \
            if m[1] is not None else " (no CI: fewer than %d pairs)" % MIN_PAIRS_CI
    ratio = ci([p["fork"]["ns_per_region"] / p["stock"]["ns_per_region"] for p in pairs])
    res = {"device": dev, "kind": a.kind, "pairs": pairs, "regions_per_sample": a.regions,
           "samples": a.samples, "median_ratio": ratio[0], "ci95": list(ratio[1:])}
    for rt in ("fork", "stock", "floor"):
        src = [(p[rt], "") for p in pairs] if rt != "floor" else \
            [(p[r], "floor_") for p in pairs for r in ("fork", "stock")]
        for k in ("ns_per_region", "cpu_ns_per_region"):
            if (src[0][1] + k) in src[0][0]:
                res["%s_%s" % (rt, k)] = float(np.median([x[pre + k] for x, pre in src]))
        if floor and rt != "floor":
            res[rt + "_x_floor"] = list(ci([p[rt]["x_floor"] for p in pairs]))
    where = "CUDA DRIVER STAND-IN (host-side overhead only)" if floor else "HOST DEVICE"
    print("%s %s-region latency, %d interleaved pairs of processes (each: median of %d "
          "samples of %d regions)" % (where, a.kind, a.pairs, a.samples, a.regions))
    for rt in ("fork", "stock", "floor") if floor else ("fork", "stock"):
        ns, cpu = res[rt + "_ns_per_region"], res[rt + "_cpu_ns_per_region"]
        print("%s %.0f ns per region (median over %s), CPU %.0f ns per region (%.2f x wall)%s"
              % (rt, ns, "processes" if rt == "floor" else "pairs", cpu, cpu / ns,
                 "; %.2f x floor%s" % (res[rt + "_x_floor"][0], shown(res[rt + "_x_floor"], digits=2))
                 if floor and rt != "floor" else ""))
    print("median ratio fork/stock %.3f%s" % (ratio[0], shown(ratio, ", ", "95% CI ")))
    return res, 0

def main(argv):
    ap = cg.parser("launch-cost", 1, "regions", "regions")
    ap.description = common.summary(__doc__)
    ap.add_argument("mode", choices=("instructions", "calls", "latency"))
    ap.add_argument("--stock", default="", help="stock libomptarget and libomp directories, "
                    "DIR:DIR (default: build/stock's, from scripts/build-stock.sh)")
    ap.add_argument("--no-stock", action="store_true", help="instructions: the fork only")
    ap.add_argument("--before", default="", help="instructions: also rows 'before' with the "
                    "libomptarget and libomp in this directory (e.g. the fork without some "
                    "patches)")
    ap.add_argument("--device", default="both", choices=("cuda", "host", "both"),
                    help="instructions and calls: where (default both); latency: host "
                         "(default; cuda for nowait) or cuda (the stand-in, with the floor)")
    ap.add_argument("--kind", default="reduction",
                    help="latency: the region, reduction[:TEAMS][@THREADS], "
                         "baseline[:TEAMS][@THREADS] or nowait (default reduction)")
    ap.add_argument("--forbid", default="dlsym,strtol",
                    help="calls: exit status 1 if one of these counted calls is made per "
                         "region (default %(default)s)")
    ap.add_argument("--pairs", type=int, default=20,
                    help="latency: interleaved pairs of processes (default %(default)s; a CI "
                         "from 6)")
    ap.add_argument("--regions", type=int, default=2000,
                    help="latency: regions per sample (default %(default)s)")
    ap.add_argument("--samples", type=int, default=5,
                    help="latency: samples per process, their median kept (default "
                         "%(default)s)")
    ap.add_argument("--out", default="", help="the JSON file to write")
    a = ap.parse_args(argv)
    cg.check(a, ("repeat", "pairs", "regions", "samples"))
    m = re.fullmatch(r"nowait|(?:reduction|baseline)(?::(\d+))?(?:@(\d+))?", a.kind)
    if not m or not 1 <= int(m[1] or 1) <= 65536 or not 2 <= int(m[2] or 2) <= 64:
        die("--kind wants reduction[:TEAMS][@THREADS], baseline[:TEAMS][@THREADS] (1 to "
            "65536 teams, 2 to 64 host threads) or nowait, not %r" % a.kind)
    if a.before:  # a directory without a libomptarget would measure the fork
        want = "(want the directory of the libomptarget.so to compare with)"
        if not os.path.isdir(a.before):
            die("--before %s is not a directory %s" % (a.before, want))
        if not glob.glob(os.path.join(glob.escape(a.before), "libomptarget.so*")):
            die("--before %s holds no libomptarget.so* %s" % (a.before, want))
    common.need_bench(a.bench)
    if a.mode != "latency":
        cg.find_valgrind(a)
    if a.mode == "latency" and a.device == "both":
        a.device = "cuda" if a.kind == "nowait" else "host"
    if a.mode == "latency" and a.kind == "nowait" and a.device == "host":
        die("--kind nowait runs on --device cuda only: stock LLVM 22.1.8 can crash on nowait "
            "regions on the host device (SIGSEGV in __kmpc_give_task, every run of 2,000 "
            "regions; the fork's patch 0005)")
    if a.mode != "calls" and a.device != "host" and not os.path.exists(
            os.path.join(a.standin, "libcuda.so.1")):
        die("no CUDA driver stand-in at %s (build the fork's tests)" % a.standin)
    a.stock_dirs = []
    if a.mode != "calls" and not a.no_stock:
        b = os.path.join(REPO, "build", "stock")
        a.stock_dirs = a.stock.split(":") if a.stock else [
            os.path.join(b, "offload"), os.path.join(b, "libomp", "runtime", "src")]
        for d, lib in zip(a.stock_dirs, ("libomptarget.so", "libomp.so")):
            if not os.path.exists(os.path.join(d, lib)):
                die("no stock %s in %s: run scripts/build-stock.sh (or pass --stock "
                    "OFFLOAD_LIB_DIR:LIBOMP_DIR)" % (lib, d))
    if a.out:  # before any run: a bad --out must not cost the figures
        a.out = common.check_out(a.out, common.PROG, "launch-cost.json")
    with tempfile.TemporaryDirectory(prefix="klebench-launch-cost.") as a.tmp:
        res, rc = {"instructions": instructions, "calls": calls, "latency": latency}[a.mode](a)
    if a.out:
        common.save_json(a.out, res, common.PROG)
    return rc
