"""klebench.py instructions: host instructions per launch of the KLE transports
under callgrind; and the callgrind reading launch-cost shares (parse,
components, counted_calls, differences).

Runs `kle-bench --launches N` under `valgrind --tool=callgrind
--separate-threads=no` on the CUDA driver stand-in, per transport (forced
with LIBOMPTARGET_KLE_TRANSPORT, checked by the stand-in's
KLE_STANDIN_EXPECT) and for N1 < N2 launches (default 50, 150):
Ir/launch = (Ir(N2) - Ir(N1)) / (N2 - N1), so start-up and tear-down
cancel; all threads together. Counts do not grow with load, but thread
interleaving moves malloc's state (copy and staged by a few per cent), so
each transport runs --repeat pairs (default 3); the KLE path rows come from
the pair with the median "KLE path excl. driver calls" (so they add up), the
whole process is its own median; the JSON has every repetition.

Rows:
  whole process         every instruction of the process.
  KLE path incl. driver the inclusive cost of every call into KLE code
                        (KLE_FN) from outside it (prepare, finish,
                        recycleCompletedQueue, ...), plus synchronize's and
                        queryAsync's dataDelete calls (their
                        AssociatedAllocations loop frees only what KLE code
                        put there: per-launch reduction buffers, copy's and
                        staged's device KLE).
  driver calls in KLE   the inclusive cost of calls into the driver library
                        (here the stand-in) whose caller chain
                        (--separate-callers on cu*) passes through the KLE
                        path; the plugin's dlopen trampolines stay plugin-side.
  KLE path excl. driver the plugin's own cost: THE TARGET (zerocopy's and
                        resident's each at most a quarter of copy's).
  allocations           dataAlloc from KLE code and those dataDelete calls.
  KLE path excl. driver and allocations: the rest.
The whole process is also split by component (self Ir: COMPONENTS) with
calls per launch (COUNTED_CALLS). The stand-in's driver calls are its CPU
emulation, not the real driver's cost: only the figures without them are
plugin-side facts. Output: the table (HOST-SIDE, CUDA driver stand-in), the
ratios to copy, PASS/MISS for the target, JSON (--out, checked before the
first valgrind run); one progress line per valgrind run on stderr.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

from kle import common
from kle.common import list_devices, complaint, check_out_file, save_or_die, TRANSPORTS, REPO

# KLE code, every class and function of the fork's KLE files
# (offload/plugins-nextgen/common/{src,include}/KLE*): namespace kle (the
# slot pool KLESlotPoolTy, KLESlotBufferCacheTy, KLEImageABICacheTy,
# KLEDeviceSlabAllocatorTy, imageHasStockReductionKernel, ...) and, in the
# plugin namespace, whatever is named KLE: KLETransportTy (KLETransport.cpp,
# KLETransportPaths.cpp), KLELaunchTy, KLEEnvIntegerTy, readKLEEnvInteger and
# parseKLETransportMode (KLEEnvironment), benchKLETransport and
# (un)registerKLEBenchTransport (KLEBenchSwitch), chooseKLETransport
# (KLETransportPolicy), and toString(KLETransportKindTy). Not the plugins'
# supportsZeroCopyKLE (a device's answer, like upstream's other queries).
KLE_FN = re.compile(r"^(kle::|llvm::omp::target::plugin::(\w*KLE\w*(::|\()|"
                    r"toString\(llvm::omp::target::plugin::KLETransportKindTy\)))")
# The AssociatedAllocations loops that free what KLETransportTy::prepare
# allocated.
SYNC_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::(synchronize|queryAsync)\(")
DELETE_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::dataDelete\(")
ALLOC_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::dataAlloc\(")
SEPARATE_CALLERS = 16



def die(msg, code=1):
    common.die(common.PROG, msg, code)


# The parts of a process (component()): libomptarget's own code; the plugins
# linked into it (namespace llvm::omp::target::plugin or kle, and the dlopen
# trampolines cu*, hsa_*); libomp; libLLVM; libc (with libstdc++, libm,
# libgcc_s, libpthread); the loader (dlsym, lazy binding); the driver or its
# stand-in; the benchmark program; anything else.
COMPONENTS = ("libomptarget", "plugin", "libomp", "LLVM", "libc", "loader",
              "stand-in", "program", "other")
PLUGIN_FN = re.compile(r"^(llvm::omp::target::plugin::|kle::|cu[A-Z]\w*$|hsa_\w+$)")


class Profile:
    def __init__(self):
        self.total = 0
        self.self_ir = {}   # (object file, fn) -> self Ir
        self.calls = {}     # (object file, callee fn) -> calls
        # Names as callgrind writes them, --separate-callers contexts
        # ("callee'caller1'caller2...") kept:
        self.fn_ob = {}     # fn -> object file (where it was first seen)
        self.edges = {}     # (caller fn, callee fn) -> [calls, inclusive Ir]


def _base(fn):
    return fn.split("'", 1)[0]


def parse(path):
    """A Profile of one callgrind output file (see the module's doc)."""
    names = {"ob": {}, "fl": {}, "fn": {}}

    def name(kind, s):
        m = re.match(r"\((\d+)\)\s*(.*)$", s)
        if not m:
            return s
        if m.group(2):
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), s)

    p = Profile()
    ir_col, npos, pending, total, summary = None, 1, 0, None, None
    ob = fn = cfn = cob = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if ir_col is None:
                    raise ValueError("cost line before events: in %s" % path)
                costs = line.split()[npos:]
                ir = int(costs[ir_col]) if ir_col < len(costs) else 0
                if pending:
                    # The inclusive cost of a call: not self.
                    e = p.edges.setdefault((fn, cfn), [0, 0])
                    e[0] += pending
                    e[1] += ir
                    pending = 0
                else:
                    k = (ob, _base(fn))
                    p.self_ir[k] = p.self_ir.get(k, 0) + ir
                continue
            key, _, val = line.partition("=")
            if key == "fn":
                fn = name("fn", val)
                p.fn_ob.setdefault(fn, ob)
            elif key == "ob":
                ob = name("ob", val)
            elif key == "cob":
                cob = name("ob", val)
            elif key in ("fl", "fi", "fe", "cfi", "cfl", "jfi"):
                name("fl", val)
            elif key == "cfn":
                cfn = name("fn", val)
            elif key == "jfn":
                name("fn", val)
            elif key == "calls":
                pending = int(val.split()[0])
                k = (cob or ob, _base(cfn))
                p.calls[k] = p.calls.get(k, 0) + pending
                cob = None
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                if "Ir" not in events:
                    raise ValueError("no Ir event in %s" % path)
                ir_col = events.index("Ir")
            elif line.startswith("positions:"):
                npos = len(line.split(":", 1)[1].split())
            elif line.startswith("totals:"):
                total = int(line.split()[1 + ir_col])
            elif line.startswith("summary:"):
                summary = int(line.split()[1 + ir_col])
    if ir_col is None:
        raise ValueError("not a callgrind output file: %s" % path)
    p.total = total if total is not None else summary if summary is not None \
        else sum(p.self_ir.values())
    return p


def component(fn, ob):
    """The component (one of COMPONENTS) of function fn in object file ob."""
    b = os.path.basename(ob or "")
    if b.startswith("libomptarget"):
        return "plugin" if PLUGIN_FN.search(fn) else "libomptarget"
    if b.startswith("libomp.so") or b.startswith("libomp-"):
        return "libomp"
    if b.startswith("libLLVM"):
        return "LLVM"
    if re.match(r"lib(c|stdc\+\+|m|gcc_s|pthread)[.-]", b):
        return "libc"
    if b.startswith("ld-linux") or b.startswith("ld-2"):
        return "loader"
    if b.startswith("libcuda.so") or b.startswith("libhsa-runtime64"):
        return "stand-in"
    if b and "." not in b:
        return "program"
    return "other"


def components(p):
    """{component: self Ir} of a Profile."""
    out = dict.fromkeys(COMPONENTS, 0)
    for (ob, fn), ir in p.self_ir.items():
        out[component(fn, ob)] += ir
    return out


# Calls counted per launch: what the launch path should not need, and the
# allocator and lock traffic. Each name is a regular expression matched
# against whole function names (callgrind's, without arguments' types for C).
COUNTED_CALLS = (
    ("dlsym", r"dlsym(@.*)?|___dlsym"),
    ("strtol", r"(__isoc23_)?strtol(@.*)?"),
    ("timeTraceProfilerBegin", r"llvm::timeTraceProfilerBegin\(.*"),
    ("malloc", r"malloc(@.*)?"),
    ("operator new", r"operator new\(.*"),
    ("free", r"free(@.*)?"),
    ("pthread_mutex_lock", r"(__)?pthread_mutex_lock(@.*)?"),
    ("cuCtxSetCurrent", r"cuCtxSetCurrent"),
    ("cuEventRecord", r"cuEventRecord"),
    ("cuStreamWaitEvent", r"cuStreamWaitEvent"),
)


def counted_calls(p):
    """{name: calls} for COUNTED_CALLS in a Profile. The cu* counts are the
    driver library's (the stand-in's) functions, not the plugin's dlopen
    trampolines of the same name."""
    out = {}
    for label, rx in COUNTED_CALLS:
        r = re.compile(r"^(%s)$" % rx)
        n = 0
        for (ob, fn), calls in p.calls.items():
            if not r.match(fn):
                continue
            if label.startswith("cu") and component(fn, ob) != "stand-in":
                continue
            n += calls
        out[label] = n
    return out



def base(fn):
    """The function itself, without a --separate-callers context."""
    return fn.split("'", 1)[0]


def is_driver(fn, fn_ob):
    return os.path.basename(fn_ob.get(fn) or "").startswith("libcuda.so")


def kle_depth(chain):
    """Where a call with this caller chain (innermost first) enters the KLE
    path: the index of the first KLE function, or of dataDelete called from
    synchronize/queryAsync; None if it is not on the KLE path."""
    for i, f in enumerate(chain):
        if KLE_FN.search(f):
            return i
        if DELETE_FN.search(f) and i + 1 < len(chain) and SYNC_FN.search(chain[i + 1]):
            return i
    return None


def measure(path):
    """The metrics of one callgrind run (absolute Ir and calls, not per launch)."""
    parts = parse(path)
    total, fn_ob, edges = parts.total, parts.fn_ob, parts.edges
    kle = 0
    entries = {}
    driver = 0
    driver_calls = {}
    alloc = [0, 0]   # calls to GenericDeviceTy::dataAlloc from KLE code
    free = [0, 0]    # the AssociatedAllocations loop's dataDelete calls
    depth = 0        # deepest caller of a driver call found in KLE code
    for (caller, callee), (calls, ir) in edges.items():
        if caller is None:
            continue
        cb, eb = base(caller), base(callee)
        # Calls into KLE code from outside it.
        if KLE_FN.search(eb) and not KLE_FN.search(cb):
            kle += ir
            k = re.sub(r"^llvm::omp::target::plugin::", "", eb).split("(")[0]
            e = entries.setdefault(k, [0, 0])
            e[0] += calls
            e[1] += ir
        if ALLOC_FN.search(eb) and KLE_FN.search(cb):
            alloc[0] += calls
            alloc[1] += ir
        # The AssociatedAllocations loop's frees.
        if DELETE_FN.search(eb) and SYNC_FN.search(cb):
            kle += ir
            free[0] += calls
            free[1] += ir
            e = entries.setdefault("dataDelete from " + SYNC_FN.search(cb).group(1), [0, 0])
            e[0] += calls
            e[1] += ir
        # Calls from the plugin into the driver library made on the KLE path:
        # the callee's context lists its callers, innermost first; the first
        # one is `caller` itself.
        if is_driver(callee, fn_ob) and not is_driver(caller, fn_ob):
            at = kle_depth(callee.split("'")[1:])
            if at is not None:
                driver += ir
                depth = max(depth, at + 1)
                d = driver_calls.setdefault(eb, [0, 0])
                d[0] += calls
                d[1] += ir
    return {"total": total, "kle": kle, "kle_driver": driver,
            "components": components(parts),
            "calls": counted_calls(parts),
            "kle_entries": entries, "kle_driver_calls": driver_calls,
            "kle_data_alloc": alloc, "kle_data_delete": free,
            "kle_driver_max_depth": depth}


def run_one(a, env, transport, n, tmp):
    a.runs_done += 1
    print("%s: run %d/%d: valgrind kle-bench --launches %d under %s"
          % (common.PROG, a.runs_done, a.runs, n, transport), file=sys.stderr, flush=True)
    out = os.path.join(tmp, "callgrind.%s.%d.out" % (transport, n))
    cmd = [a.valgrind, "--tool=callgrind", "-q", "--separate-threads=no",
           "--dump-instr=no", "--dump-line=no",
           "--separate-callers%d=cu*" % SEPARATE_CALLERS,
           "--callgrind-out-file=" + out, a.bench, "--launches", str(n)]
    # KLE_STANDIN_EXPECT makes the stand-in check every launch's dyn_ptr
    # placement for this transport, so a fallback (zerocopy or staged to
    # copy) fails the run. (Not LIBOMPTARGET_KLE_STATS or _INFO: they would
    # add work to the KLE path being measured.)
    e = dict(env, LIBOMPTARGET_KLE_TRANSPORT=transport, KLE_STANDIN_EXPECT=transport)
    t0 = time.time()
    try:
        r = common.run(cmd, e, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        die("valgrind on kle-bench --launches %d (%s) ran over %d s (--timeout)"
            % (n, transport, a.timeout))
    secs = time.time() - t0
    if r.returncode or "launches done" not in r.stdout:
        why = [l for l in r.stderr.splitlines() if "VIOLATION" in l][:1]
        die("valgrind kle-bench --launches %d (%s) failed with status %d%s: %s"
            % (n, transport, r.returncode,
               " (the stand-in saw a launch not served by %s)" % transport if why else "",
               (why[0] if why else complaint(r.stderr))))
    m = re.findall(r"kle-standin: launches=(\d+) violations=(\d+)", r.stderr)
    if not m or m[-1] != (str(n), "0"):
        die("kle-bench --launches %d (%s): the stand-in reported %s, not %d launches "
            "without violations" % (n, transport, "launches=%s violations=%s" % m[-1]
                                    if m else "nothing", n))
    try:
        res = measure(out)
    except (OSError, ValueError) as err:
        die("cannot read callgrind output: %s" % err)
    res["seconds"] = round(secs, 2)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(out, a.keep)
    os.unlink(out)
    return res


def per_launch(r1, r2, dn, key):
    return (r2[key] - r1[key]) / dn


def per_launch_map(r1, r2, dn, key):
    ks = sorted(set(r1[key]) | set(r2[key]))
    z = [0, 0]
    return {k: {"calls": (r2[key].get(k, z)[0] - r1[key].get(k, z)[0]) / dn,
                "ir": (r2[key].get(k, z)[1] - r1[key].get(k, z)[1]) / dn} for k in ks}


METRICS = ["whole_process", "kle_path_incl_driver", "kle_path_driver_calls",
           "kle_path_excl_driver", "allocations",
           "kle_path_excl_driver_and_allocations"]


def launch_metrics(r1, r2, n1, n2):
    """Per-launch metrics from a run with N1 and one with N2 launches."""
    dn = float(n2 - n1)
    kle = per_launch(r1, r2, dn, "kle")
    drv = per_launch(r1, r2, dn, "kle_driver")
    # Device allocations on the KLE path: dataAlloc from KLE code and the
    # AssociatedAllocations frees (memory-manager hits, no driver call).
    rb = ((r2["kle_data_alloc"][1] - r1["kle_data_alloc"][1]) +
          (r2["kle_data_delete"][1] - r1["kle_data_delete"][1])) / dn
    return {
        "whole_process": per_launch(r1, r2, dn, "total"),
        "kle_path_incl_driver": kle,
        "kle_path_driver_calls": drv,
        "kle_path_excl_driver": kle - drv,
        "allocations": rb,
        "kle_path_excl_driver_and_allocations": kle - drv - rb,
        "kle_entries": per_launch_map(r1, r2, dn, "kle_entries"),
        "kle_driver_entry_points": per_launch_map(r1, r2, dn, "kle_driver_calls"),
        "components": {k: (r2["components"][k] - r1["components"][k]) / dn
                       for k in COMPONENTS},
        "calls": {k: (r2["calls"][k] - r1["calls"][k]) / dn for k in r1["calls"]},
        "runs": {str(n1): r1, str(n2): r2},
    }


def main(argv):
    PROG = common.PROG
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kle-bench"))
    ap.add_argument("--standin", default=os.path.join(REPO, "build", "test", "cuda-standin", "lib"),
                    help="CUDA driver stand-in lib dir (holds libcuda.so.1)")
    ap.add_argument("--launches", default="50,150",
                    help="the two launch counts N1,N2 (N1 < N2); Ir/launch = "
                         "(Ir(N2) - Ir(N1)) / (N2 - N1)")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="comma-separated subset of " + ",".join(TRANSPORTS))
    ap.add_argument("--repeat", type=int, default=3,
                    help="pairs of runs per transport; the table shows the pair with "
                         "the median KLE path excl. driver calls")
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per valgrind run")
    ap.add_argument("--keep", default="", help="keep the callgrind output files in this dir")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-results",
                                                  "kle-instructions.json"),
                    help="the JSON file to write (its directory is created; checked "
                         "before the first valgrind run)")
    a = ap.parse_args(argv)

    try:
        n1, n2 = [int(x) for x in a.launches.split(",")]
    except ValueError:
        die("--launches wants two integers N1,N2, got %r" % a.launches)
    if not 0 < n1 < n2:
        die("--launches wants 0 < N1 < N2, got %d,%d" % (n1, n2))
    if a.repeat < 1:
        die("--repeat must be at least 1")
    transports = [t for t in a.transports.split(",") if t]
    bad = [t for t in transports if t not in TRANSPORTS]
    if bad or not transports:
        die("--transports: unknown %s (valid: %s)" % (bad, ", ".join(TRANSPORTS)))
    # Before any valgrind run: a bad --out must not cost the results at the end.
    a.out = check_out_file(a.out, PROG, "kle-instructions.json")
    vg = shutil.which(a.valgrind)
    if not vg:
        die("valgrind not found (%s); install the Debian package 'valgrind' "
            "(apt-get install valgrind)" % a.valgrind)
    a.valgrind = vg
    if not os.access(a.bench, os.X_OK):
        die("%s is not an executable kle-bench; build bench/ first (README, Benchmarks)" % a.bench)
    if not os.path.exists(os.path.join(a.standin, "libcuda.so.1")):
        die("no CUDA driver stand-in: no libcuda.so.1 in %s; build test/standin "
            "(test/standin/cuda/README.md) or pass --standin" % a.standin)

    env = dict(os.environ)
    for k in ("LIBOMPTARGET_KLE_TRANSPORT", "LIBOMPTARGET_INFO", "LIBOMPTARGET_DEBUG",
              "LIBOMPTARGET_KLE_STATS", "LIBOMPTARGET_KLE_MAX_SLOTS", "KLE_STANDIN_VERBOSE",
              "KLE_STANDIN_FAIL", "KLE_STANDIN_STATS", "KLE_STANDIN_STATS_FILE",
              "KLE_STANDIN_KERNEL_US", "KLE_CUDA_STANDIN_DEVICES"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = a.standin + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env["KLE_STANDIN_DELAY_US"] = "0:0"
    env["KLE_STANDIN_SEED"] = "1"
    devs = [d for d in list_devices(a.bench, env, PROG) if d[1].startswith("CUDA")]
    if not devs:
        die("kle-bench sees no CUDA device through the stand-in in %s" % a.standin)
    num, uid = devs[0]
    env["KLE_BENCH_DEVICE"] = str(num)

    results = {}
    a.runs, a.runs_done = 2 * a.repeat * len(transports), 0
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="klebench-instructions.") as tmp:
        for t in transports:
            reps = []
            for rep in range(a.repeat):
                r1 = run_one(a, env, t, n1, tmp)
                r2 = run_one(a, env, t, n2, tmp)
                reps.append(launch_metrics(r1, r2, n1, n2))
                depth = max(r1["kle_driver_max_depth"], r2["kle_driver_max_depth"])
                if depth > SEPARATE_CALLERS - 4:
                    print(PROG + ": warning: a driver call was found %d callers "
                          "below KLE code, near the --separate-callers depth %d: deeper "
                          "ones would be missed" % (depth, SEPARATE_CALLERS), file=sys.stderr)
            # The median repetition by the target's metric (so that every
            # figure in a column comes from one pair of runs and adds up).
            reps.sort(key=lambda r: r["kle_path_excl_driver"])
            med = reps[(len(reps) - 1) // 2]
            res = {k: med[k] for k in METRICS + ["kle_entries", "kle_driver_entry_points",
                                                  "components", "calls"]}
            # The whole process is independent of that choice: its own median.
            res["whole_process"] = sorted(r["whole_process"] for r in reps)[(len(reps) - 1) // 2]
            res["range"] = {k: [min(r[k] for r in reps), max(r[k] for r in reps)]
                            for k in METRICS}
            res["repetitions"] = reps
            results[t] = res
    elapsed = time.time() - t0

    rows = [("whole_process", "whole process"),
            ("kle_path_incl_driver", "KLE path incl. driver calls"),
            ("kle_path_driver_calls", "  driver calls in KLE path"),
            ("kle_path_excl_driver", "KLE path excl. driver calls *"),
            ("allocations", "  device allocations"),
            ("kle_path_excl_driver_and_allocations", "KLE path excl. driver and allocations")]
    print("Host instructions per launch (Ir/launch), HOST-SIDE, CUDA driver stand-in")
    print("device %d (%s); callgrind on kle-bench --launches N (synchronous 1-team "
          "teams reduction);" % (num, uid))
    print("Ir/launch = (Ir(N=%d) - Ir(N=%d)) / %d%s" % (
        n2, n1, n2 - n1, ", median of %d pairs of runs" % a.repeat if a.repeat > 1 else ""))
    print("%-38s" % "metric" + "".join("%12s" % t for t in transports))
    for key, label in rows:
        print("%-38s" % label + "".join("%12.1f" % results[t][key] for t in transports))
    print("* the target's metric. Driver calls: the stand-in's CPU emulation of the driver, "
          "not the real driver's cost.\nDevice allocations: dataAlloc/dataDelete on the KLE "
          "path (copy: device KLE and reduction buffer per launch; staged: device KLE; "
          "zerocopy and resident: none, the slot keeps its reduction buffer).")
    # The whole process by component (self instructions; bench/py),
    # from the same pair of runs as the KLE path rows, and the calls counted.
    print("\nWhole process by component (self Ir/launch, the KLE path rows' pair of runs)")
    for k in COMPONENTS:
        print("%-38s" % ("  " + k) + "".join("%12.1f" % results[t]["components"][k]
                                             for t in transports))
    print("Calls per launch")
    for k, _ in COUNTED_CALLS:
        print("%-38s" % ("  " + k) + "".join("%12.2f" % results[t]["calls"][k]
                                             for t in transports))
    print("Stock LLVM 22.1.8 side by side: bench/klebench.py launch-cost instructions.")

    meta = {
        "machine": platform.node(),
        "device": "%d %s" % (num, uid),
        "driver": "CUDA driver stand-in",
        "host_side_only": True,
        "llvm": "22.1.8",
        "git": common.git_revision(),
        "valgrind": subprocess.run([a.valgrind, "--version"], capture_output=True,
                                   text=True).stdout.strip(),
        "launches": [n1, n2],
        "repeat": a.repeat,
        "unit": "Ir (host instructions, all threads) per launch",
        "seconds": round(elapsed, 1),
    }
    # Issue 13's CPU target: the KLE path of the transports that make no
    # per-launch device operation (zerocopy, resident) costs at most a quarter
    # of copy's, excluding the driver's own (emulated) work.
    limit = 0.25
    target = None
    key = "kle_path_excl_driver"
    judged = [t for t in ("zerocopy", "resident") if t in results]
    if judged and "copy" in results:
        c = results["copy"]
        target = {"metric": key, "copy": c[key], "limit": limit, "transports": {}}
        for t in judged:
            z = results[t]
            ratio = lambda k: z[k] / c[k] if c[k] > 0 else float("inf")
            ok = c[key] > 0 and z[key] <= limit * c[key]
            print("\nKLE path %s/copy: %.2f excluding driver calls (target), %.2f including "
                  "them, %.2f excluding driver calls and allocations" % (
                      t, ratio(key), ratio("kle_path_incl_driver"),
                      ratio("kle_path_excl_driver_and_allocations")))
            print("%s: target %s <= 1/4 copy on the KLE path excl. driver calls: %s "
                  "%.1f Ir/launch, copy %.1f, a quarter of copy %.1f" % (
                      "PASS" if ok else "MISS", t, t, z[key], c[key], limit * c[key]))
            target["transports"][t] = {
                "value": z[key], "ratio": ratio(key),
                "ratio_incl_driver": ratio("kle_path_incl_driver"),
                "ratio_transport_only": ratio("kle_path_excl_driver_and_allocations"),
                "met": ok}
        target["met"] = all(v["met"] for v in target["transports"].values())

    data = {"meta": meta, "results": results, "target": target}

    def write():
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(data, f, indent=1)
    save_or_die(write, "--out %s" % a.out, PROG, data)
    print("\nwrote %s (%.0f s)" % (a.out, elapsed))

