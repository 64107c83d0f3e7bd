"""klebench.py instructions: host instructions per launch of each KLE transport
under callgrind on the CUDA driver stand-in, (Ir(N2) - Ir(N1)) / (N2 - N1),
median of --repeat pairs of runs: the whole process and the KLE path (KLE_FN,
plus synchronize's and queryAsync's dataDelete of what KLE code allocated)
with and without its driver calls and device allocations, by component, and
calls per launch. Also the callgrind reading launch-cost shares.
"""
import argparse
import collections
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time

from kle import common
from kle.common import list_devices, complaint, note, TRANSPORTS, REPO, fail as die

# KLE code: the plugin's *KLE* names, the slot's hostState and toString of a
# KLE enum; not supportsZeroCopyKLE, nor KLECopyBackTy (a map's copy back).
KLE_FN = re.compile(r"^llvm::omp::target::plugin::((?!KLECopyBackTy::)\w*KLE\w*(::|\()|hostState\(|"
                    r"toString\(llvm::omp::target::plugin::KLE\w*Ty\))")
SYNC_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::(synchronize|queryAsync)\(")
DELETE_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::dataDelete\(")
ALLOC_FN = re.compile(r"^llvm::omp::target::plugin::GenericDeviceTy::dataAlloc\(")
SEPARATE_CALLERS = 16

# A process's parts by object file (component()).
COMPONENTS = ("libomptarget", "plugin", "libomp", "LLVM", "libc", "loader",
              "stand-in", "program", "other")
PLUGIN_FN = re.compile(r"^(llvm::omp::target::plugin::|cu[A-Z]\w*$|hsa_\w+$)")
OBJECTS = (("libomp", r"libomp(\.so|-)"), ("LLVM", r"libLLVM"),
           ("libc", r"lib(c|stdc\+\+|m|gcc_s|pthread)[.-]"), ("loader", r"ld-(linux|2)"),
           ("stand-in", r"libcuda\.so|libhsa-runtime64"))

# Calls counted per launch, by whole function name (cu*: the driver's own).
COUNTED_CALLS = (
    ("dlsym", r"dlsym(@.*)?|___dlsym"), ("strtol", r"(__isoc23_)?strtol(@.*)?"),
    ("timeTraceProfilerBegin", r"llvm::timeTraceProfilerBegin\(.*"),
    ("pthread_once", r"(__)?pthread_once(@.*)?"),
    ("PluginManager::getDevice", r"PluginManager::getDevice\(.*"),
    ("MappingInfoTy::getTgtPtrBegin", r"MappingInfoTy::getTgtPtrBegin\(.*"),
    ("malloc", r"malloc(@.*)?"), ("operator new", r"operator new\(.*"),
    ("free", r"free(@.*)?"), ("pthread_mutex_lock", r"(__)?pthread_mutex_lock(@.*)?"),
    ("cuCtxSetCurrent", r"cuCtxSetCurrent"), ("cuEventRecord", r"cuEventRecord"),
    ("cuStreamWaitEvent", r"cuStreamWaitEvent"),
    ("KernelTraceInfoRecordTy::emplace", r"llvm::omp::target::plugin::KernelTraceInfoRecordTy::emplace\(.*"))
# Calls counted only where libomptarget or a plugin makes them.
RUNTIME_CALLS = (("pthread_mutex_lock by the runtime", dict(COUNTED_CALLS)["pthread_mutex_lock"]),)

# The table's rows: (JSON key, label).
ROWS = (("whole_process", "whole process"),
        ("kle_path_incl_driver", "KLE path incl. driver calls"),
        ("kle_path_driver_calls", "  driver calls in KLE path"),
        ("kle_path_excl_driver", "KLE path excl. driver calls *"),
        ("allocations", "  device allocations"),
        ("kle_path_excl_driver_and_allocations", "KLE path excl. driver and allocations"))

def base(fn):  # without a --separate-callers context
    return fn.split("'", 1)[0]

def parse(path):
    """(total Ir, {(object, fn): self Ir}, {(object, callee): calls},
    {fn: object}, {(caller, callee): [calls, inclusive Ir]}) of a callgrind
    file; --separate-callers contexts kept in fn_ob and edges."""
    names, fn_ob, total = {}, {}, {}
    self_ir, calls = collections.Counter(), collections.Counter()
    edges = collections.defaultdict(lambda: [0, 0])

    def name(kind, s):  # "(id) name" defines id, "(id)" uses it
        m = re.match(r"\((\d+)\)\s*(.*)$", s)
        if not m:
            return s
        if m.group(2):
            names[kind, m.group(1)] = m.group(2)
        return names.get((kind, m.group(1)), s)

    ir_col, npos, pending = None, 1, 0
    ob = fn = cfn = cob = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line[0].isdigit() or line[0] in "+-*":
                if ir_col is None:
                    raise ValueError("cost line before events: in %s" % path)
                costs = line.split()[npos:]
                ir = int(costs[ir_col]) if ir_col < len(costs) else 0
                if pending:  # the inclusive cost of a call
                    edges[fn, cfn][0] += pending
                    edges[fn, cfn][1] += ir
                    pending = 0
                else:
                    self_ir[ob, base(fn)] += ir
                continue
            key, _, val = line.partition("=")
            if key == "fn":
                fn = name("fn", val)
                fn_ob.setdefault(fn, ob)
            elif key == "cfn":
                cfn = name("fn", val)
            elif key in ("ob", "cob"):
                ob, cob = (name("ob", val), cob) if key == "ob" else (ob, name("ob", val))
            elif key in ("jfn", "fl", "fi", "fe", "cfi", "cfl", "jfi"):
                name("fn" if key == "jfn" else "fl", val)
            elif key == "calls":
                pending = int(val.split()[0])
                calls[cob or ob, base(cfn)] += pending
                cob = None
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                if "Ir" not in events:
                    raise ValueError("no Ir event in %s" % path)
                ir_col = events.index("Ir")
            elif line.startswith("positions:"):
                npos = len(line.split(":", 1)[1].split())
            elif line.startswith(("totals:", "summary:")):
                total[line.split(":")[0]] = int(line.split()[1 + ir_col])
    if ir_col is None:
        raise ValueError("not a callgrind output file: %s" % path)
    return (total.get("totals", total.get("summary", sum(self_ir.values()))),
            self_ir, calls, fn_ob, edges)

def component(fn, ob):
    b = os.path.basename(ob or "")
    if b.startswith("libomptarget"):
        return "plugin" if PLUGIN_FN.search(fn) else "libomptarget"
    for comp, rx in OBJECTS:
        if re.match(rx, b):
            return comp
    return "program" if b and "." not in b else "other"

def kle_depth(chain):
    """Where in a caller chain (innermost first) the KLE path starts, or None."""
    for i, f in enumerate(chain):
        if KLE_FN.search(f) or (DELETE_FN.search(f) and i + 1 < len(chain)
                                and SYNC_FN.search(chain[i + 1])):
            return i
    return None

def measure(path):
    """The figures of one callgrind file (whole run)."""
    total, self_ir, calls, fn_ob, edges = parse(path)
    m = {"total": total, "kle": 0, "kle_driver": 0, "kle_entries": {},
         "kle_driver_calls": {}, "kle_data_alloc": [0, 0], "kle_data_delete": [0, 0],
         "kle_driver_max_depth": 0, "components": dict.fromkeys(COMPONENTS, 0), "calls": {}}
    for (ob, fn), ir in self_ir.items():
        m["components"][component(fn, ob)] += ir
    for label, rx in COUNTED_CALLS:
        r = re.compile(r"^(%s)$" % rx)
        m["calls"][label] = sum(n for (ob, fn), n in calls.items() if r.match(fn) and (
            not label.startswith("cu") or component(fn, ob) == "stand-in"))

    for label, rx in RUNTIME_CALLS:
        r = re.compile(r"^(%s)$" % rx)
        m["calls"][label] = sum(n for (caller, callee), (n, _) in edges.items()
                                if caller and r.match(base(callee)) and component(
                                    base(caller), fn_ob.get(caller)) in ("libomptarget", "plugin"))

    def add(key, n, ir, entry=None):
        e = m[key] if entry is None else m[key].setdefault(entry, [0, 0])
        e[0] += n
        e[1] += ir

    def is_driver(fn):
        return os.path.basename(fn_ob.get(fn) or "").startswith("libcuda.so")
    for (caller, callee), (n, ir) in edges.items():
        if caller is None:
            continue
        cb, eb = base(caller), base(callee)
        if KLE_FN.search(eb) and not KLE_FN.search(cb):  # into KLE code
            m["kle"] += ir
            add("kle_entries", n, ir,
                re.sub(r"^llvm::omp::target::plugin::", "", eb).split("(")[0])
        if ALLOC_FN.search(eb) and KLE_FN.search(cb):
            add("kle_data_alloc", n, ir)
        if DELETE_FN.search(eb) and SYNC_FN.search(cb):  # the frees
            m["kle"] += ir
            add("kle_data_delete", n, ir)
            add("kle_entries", n, ir, "dataDelete from " + SYNC_FN.search(cb).group(1))
        # Into the driver on the KLE path (the context: callers, innermost first).
        if is_driver(callee) and not is_driver(caller):
            at = kle_depth(callee.split("'")[1:])
            if at is not None:
                m["kle_driver"] += ir
                m["kle_driver_max_depth"] = max(m["kle_driver_max_depth"], at + 1)
                add("kle_driver_calls", n, ir, eb)
    return m

def per_unit(r1, r2, dn):
    """(r2 - r1) / dn, through nested dicts and lists (a key r1 lacks is 0)."""
    if isinstance(r2, dict) or isinstance(r1, dict):
        r1, r2 = r1 or {}, r2 or {}
        return {k: per_unit(r1.get(k), r2.get(k), dn) for k in dict.fromkeys([*r1, *r2])}
    if isinstance(r2, list) or isinstance(r1, list):
        return [per_unit(x, y, dn) for x, y in zip(r1 or [0] * len(r2), r2 or [0] * len(r1))]
    return ((r2 or 0) - (r1 or 0)) / dn

def callgrind(a, cmd, env, tag, done, extra=()):
    """(measure() of cmd under callgrind, its stderr); exits with one line
    unless it prints done."""
    out = os.path.join(a.tmp, "cg.%s.%s.out" % (tag, cmd[-1]))
    vg = [a.valgrind, "--tool=callgrind", "-q", "--separate-threads=no", "--dump-instr=no",
          "--dump-line=no"] + list(extra) + ["--callgrind-out-file=" + out] + cmd
    what = "%s (%s)" % (" ".join(cmd[-3:]), tag)
    try:
        r = common.run(vg, env, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        die("%s timed out after %d s (--timeout)" % (what, a.timeout))
    if r.returncode or done not in r.stdout:
        why = [l for l in r.stderr.splitlines() if "VIOLATION" in l][:1]
        die("%s failed with status %d%s: %s" % (
            what, r.returncode, " (the stand-in saw a launch not served by %s)" % tag
            if why else "", why[0] if why else complaint(r.stderr or r.stdout)))
    try:
        m = measure(out)
    except (OSError, ValueError) as err:
        die("cannot read callgrind output: %s" % err)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(out, a.keep)
    os.unlink(out)
    return m, r.stderr

def difference(a, cmd, env, tag, done, extra=(), each=None, progress=None):
    """(measure() of cmd + [N] under callgrind for N = N1 and N2, their
    per_unit() per launch or region); each(n, figures, stderr) checks a run,
    progress names it in a note first. Exits if N2's run took fewer
    instructions than N1's."""
    rs = []
    for n in (a.n1, a.n2):
        if progress:
            a.runs_done += 1
            note("run %d/%d: valgrind %s %d under %s" % (a.runs_done, a.runs, progress, n, tag))
        m, err = callgrind(a, cmd + [str(n)], env, tag, done, extra)
        if each:
            each(n, m, err)
        rs.append(m)
    if rs[1]["total"] < rs[0]["total"]:
        die("%s: %d %s took fewer instructions than %d (%d < %d): N2 - N1 = %d %s is too "
            "few for the run-to-run variation; widen --launches (default 50,150)"
            % (tag, a.n2, a.unit, a.n1, rs[1]["total"], rs[0]["total"], a.n2 - a.n1, a.unit))
    return rs, per_unit(rs[0], rs[1], float(a.n2 - a.n1))

def run_pair(a, env, t):
    """Per-launch metrics of one pair of runs of transport t."""
    def each(n, r, err):
        got = re.findall(r"kle-standin: launches=(\d+) violations=(\d+)", err)
        if not got or got[-1] != (str(n), "0"):
            die("kle-bench --launches %d (%s): the stand-in reported %s, not %d launches "
                "without violations" % (n, t, "launches=%s violations=%s" % got[-1]
                                        if got else "nothing", n))
        if r["kle_driver_max_depth"] > SEPARATE_CALLERS - 4:
            note("warning: a driver call was found %d callers below KLE code, near the "
                 "--separate-callers depth %d: deeper ones would be missed"
                 % (r["kle_driver_max_depth"], SEPARATE_CALLERS))

    # KLE_STANDIN_EXPECT: a fallback fails the run.
    rs, d = difference(a, [a.bench, "--launches"],
                       dict(env, LIBOMPTARGET_KLE_TRANSPORT=t, KLE_STANDIN_EXPECT=t), t,
                       "launches done", ["--separate-callers%d=cu*" % SEPARATE_CALLERS], each,
                       "kle-bench --launches")
    alloc = d["kle_data_alloc"][1] + d["kle_data_delete"][1]
    drv = d["kle_driver"]
    pairs = lambda m: {k: {"calls": v[0], "ir": v[1]} for k, v in m.items()}
    return dict(zip([k for k, _ in ROWS], [d["total"], d["kle"], drv, d["kle"] - drv, alloc,
                                           d["kle"] - drv - alloc]),
                kle_entries=pairs(d["kle_entries"]),
                kle_driver_entry_points=pairs(d["kle_driver_calls"]),
                components=d["components"], calls=d["calls"],
                runs={str(a.n1): rs[0], str(a.n2): rs[1]})

def parser(bench, repeat, what, unit):
    """The options of a command that runs `bench` under callgrind, what
    (runs, regions) per pair of runs, figures per unit."""
    ap = argparse.ArgumentParser(prog=common.PROG, description=common.summary(__doc__))
    ap.set_defaults(unit=unit)
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", bench),
                    help="the benchmark program (default %(default)s)")
    ap.add_argument("--standin", default=os.path.join(REPO, "build", "test", "cuda-standin", "lib"),
                    help="CUDA driver stand-in lib dir (holds libcuda.so.1)")
    ap.add_argument("--launches", default="50,150",
                    help="the %s N1,N2 (1 <= N1 < N2) of each pair of runs" % what)
    ap.add_argument("--repeat", type=int, default=repeat,
                    help="pairs of runs per row (median; default %(default)s)")
    ap.add_argument("--valgrind", default="valgrind", help="the valgrind to run")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--keep", default="", help="keep the callgrind output files in this dir")
    return ap

def check(a, counts=("repeat",)):
    """Checks parser()'s options and counts (each from 1); a.n1, a.n2 from --launches."""
    m = re.fullmatch(r"(\d+),(\d+)", a.launches)
    if not m or not 1 <= int(m[1]) < int(m[2]):  # N1 = 0 would count the start-up
        die("--launches wants 1 <= N1 < N2, not %r" % a.launches)
    a.n1, a.n2 = int(m[1]), int(m[2])
    for name in counts:
        if getattr(a, name) < 1:
            die("--%s wants a number from 1, not %d" % (name, getattr(a, name)))
    if a.timeout < 1:
        die("--timeout wants a positive number of seconds per run, not %d" % a.timeout)

def find_valgrind(a):
    a.valgrind = shutil.which(a.valgrind) or die(
        "valgrind not found (%s); install the Debian package 'valgrind' "
        "(apt-get install valgrind)" % a.valgrind)

def target(results, key="kle_path_excl_driver", limit=0.25):
    """Prints and returns whether zerocopy and resident meet the target: at
    most a quarter of copy's Ir per launch on the KLE path excl. driver calls."""
    judged = [t for t in ("zerocopy", "resident") if t in results]
    if not judged or "copy" not in results:
        return None
    c = results["copy"]
    res = {"metric": key, "copy": c[key], "limit": limit, "transports": {}}
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
        res["transports"][t] = {
            "value": z[key], "ratio": ratio(key),
            "ratio_incl_driver": ratio("kle_path_incl_driver"),
            "ratio_transport_only": ratio("kle_path_excl_driver_and_allocations"), "met": ok}
    res["met"] = all(v["met"] for v in res["transports"].values())
    return res

def main(argv):
    prog = common.PROG
    ap = parser("kle-bench", 3, "launch counts", "launches")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="comma-separated subset of " + ",".join(TRANSPORTS))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-results",
                                                  "kle-instructions.json"),
                    help="the JSON file to write (checked before the first run)")
    a = ap.parse_args(argv)
    check(a)
    transports = common.choose("--transports", a.transports, TRANSPORTS)
    a.out = common.check_out(a.out, prog, "kle-instructions.json")
    find_valgrind(a)
    common.need_bench(a.bench)
    if not os.path.exists(os.path.join(a.standin, "libcuda.so.1")):
        die("no CUDA driver stand-in: no libcuda.so.1 in %s; build test/standin "
            "(test/standin/cuda/README.md) or pass --standin" % a.standin)
    env = {k: v for k, v in os.environ.items() if k not in (
        "LIBOMPTARGET_KLE_TRANSPORT", "LIBOMPTARGET_INFO", "LIBOMPTARGET_DEBUG",
        "LIBOMPTARGET_KLE_STATS", "LIBOMPTARGET_KLE_MAX_SLOTS", "KLE_STANDIN_VERBOSE",
        "KLE_STANDIN_FAIL", "KLE_STANDIN_STATS", "KLE_STANDIN_STATS_FILE",
        "KLE_STANDIN_KERNEL_US", "KLE_CUDA_STANDIN_DEVICES")}
    env = dict(common.with_lib(env, a.standin), KLE_STANDIN_DELAY_US="0:0", KLE_STANDIN_SEED="1")
    devs = [d for d in list_devices(a.bench, env, prog) if d[1].startswith("CUDA")]
    if not devs:
        die("kle-bench sees no CUDA device through the stand-in in %s" % a.standin)
    num, uid = devs[0]
    env["KLE_BENCH_DEVICE"] = str(num)
    results, metrics = {}, [k for k, _ in ROWS]
    a.runs, a.runs_done = 2 * a.repeat * len(transports), 0
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="klebench-instructions.") as a.tmp:
        for t in transports:
            reps = sorted((run_pair(a, env, t) for _ in range(a.repeat)),
                          key=lambda r: r["kle_path_excl_driver"])
            mid = (len(reps) - 1) // 2
            res = results[t] = {k: v for k, v in reps[mid].items() if k != "runs"}
            res["whole_process"] = sorted(r["whole_process"] for r in reps)[mid]
            res["range"] = {k: [min(r[k] for r in reps), max(r[k] for r in reps)]
                            for k in metrics}
            res["repetitions"] = reps
    elapsed = time.time() - t0

    def table(rows, fmt, part=None):
        for key, label in rows:
            print("%-38s" % label + "".join(
                fmt % (results[t][part] if part else results[t])[key] for t in transports))
    print("Host instructions per launch (Ir/launch), HOST-SIDE, CUDA driver stand-in")
    print("device %d (%s); callgrind on kle-bench --launches N (synchronous 1-team "
          "teams reduction);" % (num, uid))
    print("Ir/launch = (Ir(N=%d) - Ir(N=%d)) / %d%s" % (
        a.n2, a.n1, a.n2 - a.n1, ", median of %d pairs of runs" % a.repeat if a.repeat > 1 else ""))
    print("%-38s" % "metric" + "".join("%12s" % t for t in transports))
    table(ROWS, "%12.1f")
    print("* the target's metric. Driver calls: the stand-in's CPU emulation of the driver, "
          "not the real driver's cost.\nDevice allocations: dataAlloc/dataDelete on the KLE "
          "path (copy: device KLE and reduction buffer per launch; staged: device KLE; "
          "zerocopy and resident: none, the slot keeps its reduction buffer).")
    print("\nWhole process by component (self Ir/launch, the KLE path rows' pair of runs)")
    table([(k, "  " + k) for k in COMPONENTS], "%12.1f", "components")
    print("Calls per launch")
    table([(k, "  " + k) for k, _ in COUNTED_CALLS], "%12.2f", "calls")
    print("Stock LLVM 22.1.8 side by side: bench/klebench.py launch-cost instructions.")
    meta = {"machine": platform.node(), "device": "%d %s" % (num, uid),
            "driver": "CUDA driver stand-in", "host_side_only": True, "llvm": "22.1.8",
            "git": common.git_revision(),
            "valgrind": common.run([a.valgrind, "--version"], None).stdout.strip(),
            "launches": [a.n1, a.n2], "repeat": a.repeat,
            "unit": "Ir (host instructions, all threads) per launch",
            "seconds": round(elapsed, 1)}
    common.save_json(a.out, {"meta": meta, "results": results, "target": target(results)}, prog)
    print("\nwrote %s (%.0f s)" % (a.out, elapsed))
