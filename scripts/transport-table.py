#!/usr/bin/env python3
"""The set-up's transport table: what the KLE transports do on this machine.

scripts/setup.sh runs it after the examples table. It runs the examples
(built by scripts/run-examples.sh) once per KLE transport
(common.TRANSPORTS, forced with LIBOMPTARGET_KLE_TRANSPORT):

- On a machine with a GPU (a device list_devices shows that is neither the
  host nor the CUDA driver stand-in): every example on every GPU under each
  transport (RESULT OK or not, and the launches each transport served), then
  a quick latency comparison, 1-team synchronous launches per transport, the
  no-KLE baseline and the floor (bench/klebench.py compare --quick --teams 1).
- Without one, on the CUDA driver stand-in (test/standin/cuda, the sm_90
  images): per transport, KLE-contract violations the stand-in found (must
  be 0), host-to-device copies and device allocations per launch for the
  KLE, and host ns per launch in the plugin's KLE path, under a banner that
  says no kernel executed. The stand-in computes nothing, so the examples'
  own checks fail there: only violations and crashes count.

How the KLE's copies and allocations are counted on the stand-in: its
per-entry-point call counts (KLE_STANDIN_STATS_FILE) minus what the maps
asked for, which libomptarget reports itself (LIBOMPTARGET_INFO=40: one
"Copying data from host to device" line per map copy, one "Creating new map
entry" line per map allocation), with the memory manager off
(LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0) so that every allocation reaches
the driver; divided by the launches with a KLE (LIBOMPTARGET_KLE_STATS).
A pool's one-time set-up (per process) is included there, spread over the
examples' few launches; the steady-state row per transport comes from
kle-bench (1-team synchronous launches): the difference between runs of 300
and 100 launches, divided by 200, so that set-up cancels.

Exit status 0 unless a violation happened, an example crashed or hung, or
(on a GPU) an example's result was wrong. Python standard library only.
"""
import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))  # the kle package (bench/kle)
from kle import common  # noqa: E402
from kle.common import (TRANSPORTS, STANDIN_UID, status, list_devices,  # noqa: E402
                        parse_stats, run_or_timeout)

PROG = "transport-table"
EXAMPLES = ("reduce_sum", "reduce_minmax", "reduce_array_section", "reduce_udr",
            "reduce_threads", "reduce_nowait")
die = functools.partial(common.die, PROG)


def devices(ex_dir, env):
    """[(number, uid)] from the examples' list_devices."""
    return list_devices(None, env, PROG, cmd=[os.path.join(ex_dir, "list_devices")],
                        timeout=60)


def kle_launches(text):
    """(launches with a KLE, by transport name; host ns per launch, the mean
    over the stats lines that time it, weighted by their launches, or None)
    summed over the KLE stats lines in text (common.parse_stats)."""
    served, ns_total, n_total = {}, 0, 0
    for st in parse_stats(text):
        for name, v in st["launches"].items():
            served[name] = served.get(name, 0) + v
        ns = st["fields"].get("host_ns_per_launch_in_kle_path")
        if ns is not None:
            n = sum(st["launches"].values())
            ns_total += ns * n
            n_total += n
    return served, (ns_total / n_total if n_total else None)


def measure(cmd, env, timeout, counting=True):
    """Runs cmd under the stand-in with the counting settings; returns
    (exit status or None, output, counts) where counts has h2d, alloc,
    map_h2d, map_alloc, viol, served (launches by transport) and ns_sum
    (host ns in the KLE path, summed over launches)."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as f:
        e = dict(env, LIBOMPTARGET_KLE_STATS="1", KLE_STANDIN_STATS_FILE=f.name)
        if counting:
            e.update(LIBOMPTARGET_INFO="40", LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD="0")
        rc, out = run_or_timeout(cmd, e, timeout)
        calls = {}
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                calls[parts[0]] = int(parts[1])
    served, ns = kle_launches(out)
    return rc, out, {
        "viol": calls.get("#violations", 0) + (0 if calls else out.count("VIOLATION")),
        "h2d": sum(v for k, v in calls.items() if "HtoD" in k),
        "alloc": sum(v for k, v in calls.items()
                     if re.fullmatch(r"cuMemAlloc(_v2|Async(_ptsz)?)?", k)),
        # Copy's own KLE line has upstream's wording too (Name=KernelLaunchEnv):
        # it is the KLE's copy, not a map's.
        "map_h2d": sum(1 for l in out.splitlines()
                       if "Copying data from host to device" in l
                       and "Name=KernelLaunchEnv" not in l),
        "map_alloc": out.count("Creating new map entry"),
        "served": served, "ns_sum": (ns or 0) * sum(served.values())}


def standin_table(a, ex_dir):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = a.standin + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env.setdefault("KLE_STANDIN_DELAY_US", "0:0")
    env.pop("KLE_STANDIN_EXPECT", None)
    devs = [d for d in devices(ex_dir, env) if d[1].startswith(STANDIN_UID)]
    if not devs:
        die("the CUDA driver stand-in in %s shows no device to the examples" % a.standin)
    dev = devs[0][0]
    print("KLE transports on the CUDA driver stand-in (no GPU here): %d examples, "
          "sm_90 images, device %d" % (len(EXAMPLES), dev))
    print("NO KERNEL EXECUTED: the stand-in replaces the CUDA driver and checks every launch")
    print("against the KLE contract, but runs no kernel; all figures are host-side only.")
    rows, bad = [], []
    for t in TRANSPORTS:
        tot = {"h2d": 0, "alloc": 0, "map_h2d": 0, "map_alloc": 0, "viol": 0,
               "launches": 0, "ns_sum": 0.0, "ok": 0, "other": 0}
        for ex in EXAMPLES:
            rc, out, c = measure([os.path.join(ex_dir, ex), str(dev)],
                                 dict(env, LIBOMPTARGET_KLE_TRANSPORT=t, KLE_STANDIN_EXPECT=t),
                                 a.timeout)
            # Host time in a run of its own: the info lines the counting run
            # prints are written from inside the KLE path.
            rc2, out2, c2 = measure([os.path.join(ex_dir, ex), str(dev)],
                                    dict(env, LIBOMPTARGET_KLE_TRANSPORT=t,
                                         KLE_STANDIN_EXPECT=t), a.timeout, counting=False)
            c["viol"] += c2["viol"]
            c["ns_sum"] = c2["ns_sum"]
            if rc2 is None:
                rc = None
            viol = c["viol"]
            for k in ("viol", "h2d", "alloc", "map_h2d", "map_alloc", "ns_sum"):
                tot[k] += c[k]
            n = sum(c["served"].values())
            tot["launches"] += c["served"].get(t, 0)
            tot["other"] += n - c["served"].get(t, 0)
            finished = rc is not None and rc >= 0 and " RESULT " in out
            if finished and viol == 0:
                tot["ok"] += 1
            else:
                why = ("hung (killed after %d s)" % a.timeout if rc is None else
                       "%d KLE-contract violation(s)" % viol if viol else status(rc))
                bad.append("%s under %s: %s" % (ex, t, why))
                for line in out.splitlines():
                    if "VIOLATION" in line or "error" in line.lower():
                        bad.append("    " + line.strip())
        rows.append((t, tot))
    steady = {}
    if a.bench and os.access(a.bench, os.X_OK):
        benv = dict(env, KLE_BENCH_DEVICE=str(bench_device(a.bench, env)))
        for t in TRANSPORTS:
            got = {}
            for n, counting in ((100, True), (300, True), (-2000, False)):
                rc, out, c = measure([a.bench, "--launches", str(abs(n))],
                                     dict(benv, LIBOMPTARGET_KLE_TRANSPORT=t,
                                          KLE_STANDIN_EXPECT=t), a.timeout, counting)
                if rc != 0 or c["viol"]:
                    bad.append("kle-bench --launches %d under %s: %s" % (
                        abs(n), t, "%d KLE-contract violation(s)" % c["viol"] if c["viol"]
                        else "hung" if rc is None else status(rc)))
                got[n] = c
            steady[t] = {k: (got[300][k] - got[100][k]) / 200.0
                         for k in ("h2d", "alloc", "map_h2d", "map_alloc")}
            steady[t]["ns_sum"] = got[-2000]["ns_sum"] / max(1, sum(got[-2000]["served"].values()))
            steady[t]["viol"] = sum(g["viol"] for g in got.values())
    print()
    fmt = "%-9s %-23s %10s %9s %11s %12s %13s"
    print(fmt % ("transport", "runs", "violations", "launches", "H2D copies", "device", "host ns"))
    print(fmt % ("", "", "", "with KLE", "for the KLE", "allocations", "in KLE path"))
    print(fmt % ("", "", "", "", "per launch", "per launch", "per launch"))
    for t, s in rows:
        n = s["launches"] + s["other"]
        per = (lambda v: "%.2f" % (v / n)) if n else (lambda v: "-")
        print(fmt % (t, "examples %d/%d OK" % (s["ok"], len(EXAMPLES)), s["viol"], n,
                     per(s["h2d"] - s["map_h2d"]), per(s["alloc"] - s["map_alloc"]),
                     "%.0f" % (s["ns_sum"] / n) if n else "-"))
        if t in steady:
            d = steady[t]
            print(fmt % ("", "kle-bench, 1 team", "%d" % d["viol"], 200,
                         "%.2f" % (d["h2d"] - d["map_h2d"]),
                         "%.2f" % (d["alloc"] - d["map_alloc"]), "%.0f" % d["ns_sum"]))
    print(textwrap.fill(
        "H2D copies and device allocations for the KLE: the driver calls beyond those the "
        "maps asked for. The examples' rows include each process's one-time set-up; the "
        "kle-bench rows (1-team synchronous launches: (300 - 100 launches) / 200; host ns: "
        "the mean over 2000 launches) show the steady state. The memory manager is off "
        "while counting, so every allocation reaches the driver; host ns come from "
        "separate runs with it on and without info output. OK: finished without a "
        "violation (the stand-in computes nothing, so the examples' own result checks "
        "fail).", 100))
    others = [(t, s["other"]) for t, s in rows if s["other"]]
    for t, k in others:
        print("note: %d launch(es) forced to %s were served by another transport "
              "(a fallback; see LIBOMPTARGET_KLE_STATS)" % (k, t))
    viol = sum(s["viol"] for _, s in rows) + int(sum(d["viol"] for d in steady.values()))
    print("KLE-contract violations: %d" % viol)
    return bad


def bench_device(bench, env):
    """kle-bench's number for the stand-in's device (its images differ from
    the examples', so its numbering may too)."""
    for num, uid in list_devices(bench, env, PROG, timeout=60):
        if uid.startswith(STANDIN_UID):
            return num
    die("kle-bench --list-devices shows no stand-in device")


def gpu_table(a, ex_dir, gpus):
    env = dict(os.environ)
    print("KLE transports on %s" % ", ".join("device %d (%s)" % g for g in gpus))
    print()
    print("%-22s %-8s %s" % ("program", "device", "  ".join("%-10s" % t for t in TRANSPORTS)))
    bad = []
    for ex in EXAMPLES:
        for dev, uid in gpus:
            cells = []
            for t in TRANSPORTS:
                e = dict(env, LIBOMPTARGET_KLE_TRANSPORT=t, LIBOMPTARGET_KLE_STATS="1")
                rc, out = run_or_timeout([os.path.join(ex_dir, ex), str(dev)], e, a.timeout)
                served, _ = kle_launches(out)
                ok = rc == 0 and "RESULT OK" in out
                cell = "OK" if ok else ("HANG" if rc is None else "FAIL")
                if ok and served and not served.get(t):
                    cell = "OK(" + ",".join(k for k, v in served.items() if v) + ")"
                if not ok:
                    bad.append("%s on device %d under %s: %s" % (
                        ex, dev, t, "hung" if rc is None else status(rc)))
                cells.append("%-10s" % cell)
            print("%-22s %-8s %s" % (ex, dev, "  ".join(cells)))
    print("OK(x): the result was right but the launches were served by x (a fallback)")
    if not a.bench or not os.access(a.bench, os.X_OK):
        print("\n(no kle-bench: no latency comparison)")
        return bad
    print("\nLaunch latency, 1 team, synchronous (bench/klebench.py compare --quick "
          "--teams 1 --batch 0):", flush=True)
    cmd = [sys.executable, os.path.join(REPO, "bench", "klebench.py"), "compare",
           "--bench", a.bench, "--quick", "--teams", "1", "--batch", "0",
           "--kernel-times", "off", "--out", a.out]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    table = False  # the distributions: from their header to the blank line
    for line in r.stdout.splitlines():
        table = table or line.startswith("benchmark ")
        if table and not line.strip():
            break
        if table or line.startswith(("KLE cost per transport", "HOST-SIDE")):
            print(line)
    if r.returncode:
        bad.append("klebench.py compare --quick failed (%s)" % status(r.returncode))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    build = os.environ.get("KLE_BUILD_DIR", os.path.join(REPO, "build"))
    ap.add_argument("--examples", default=os.path.join(build, "examples"),
                    help="the built examples (scripts/run-examples.sh)")
    ap.add_argument("--standin", default=os.path.join(build, "test", "cuda-standin", "lib"),
                    help="the CUDA driver stand-in's lib dir, used when there is no GPU")
    ap.add_argument("--bench", default=os.path.join(build, "bench", "kle-bench"))
    ap.add_argument("--out", default=os.path.join(build, "bench-results", "setup"),
                    help="where the GPU latency comparison writes its JSON and CSV")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("KLE_EXAMPLE_TIMEOUT", 30)),
                    help="seconds per example run")
    ap.add_argument("--gpu", choices=("auto", "no"), default="auto",
                    help="'no': the stand-in table even where a GPU is found")
    a = ap.parse_args()
    ex_dir = a.examples
    missing = [p for p in ("list_devices",) + EXAMPLES
               if not os.access(os.path.join(ex_dir, p), os.X_OK)]
    if missing:
        die("%s lacks %s; run scripts/run-examples.sh first" % (ex_dir, ", ".join(missing)))
    env = dict(os.environ)
    gpus = [d for d in devices(ex_dir, env)
            if not d[1].startswith("x86_64") and not d[1].startswith(STANDIN_UID)]
    if gpus and a.gpu == "auto":
        bad = gpu_table(a, ex_dir, gpus)
    elif os.path.exists(os.path.join(a.standin, "libcuda.so.1")):
        bad = standin_table(a, ex_dir)
    else:
        print("KLE transports: no GPU and no CUDA driver stand-in (%s): nothing to show"
              % a.standin)
        return 0
    for line in bad:
        print("FAILED: " + line if not line.startswith("    ") else line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
