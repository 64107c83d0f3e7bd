"""klebench.py compare: the KLE transports, the no-KLE baseline and the floor,
interleaved launch by launch in one kle-bench process (docs/BENCHMARKS.md).

Per benchmark: each unit's distribution and multiple of the floor, the KLE
cost table and every paired difference (median of per-cycle differences, 95%
block-bootstrap CI), into <out>/kle-interleaved.{json,csv}; a host device is
refused. --ab NAME=PATH twice: two kle-bench builds, one process per build,
transport and round.
"""
import argparse
import csv
import json
import os
import platform
import re
import shutil
import sys
import time

from kle import common, stats
from kle.common import (run, run_checked, list_devices, complaint, hms, note, with_lib,
                        TRANSPORTS, REPO, STANDIN_UID, fail as die)

LONG_S = 3600  # plans estimated above this are refused without --force
AB_REPETITIONS = 3  # --ab: Google Benchmark repetitions per process

def parse_interleaved(text):
    """kle-bench --interleave's JSON as {benchmark: {"units", "samples" (cycles
    x units, ns per launch), "path_ns", "cpu_ns" (and "kernel_us", "span_us")
    alike, "warmup_path_ns", "warmup_launches"}}; exits if a cycle lacks a unit."""
    np, _ = common.require_scipy()
    try:
        doc = json.loads(text)
        units, fields = list(doc["units"]), list(doc["fields"])
        if fields[:4] != ["cycle", "unit", "ns", "path_ns"]:
            raise ValueError("unexpected fields %s" % fields)
        out = {}
        for name, b in doc["benchmarks"].items():
            s = np.array(b["samples"], dtype=float).reshape(-1, len(fields))
            cycles = int(s[:, 0].max()) + 1 if len(s) else 0
            idx = (s[:, 0].astype(int), s[:, 1].astype(int))
            cols = {}
            for j, f in enumerate(fields[2:], start=2):
                cols[f] = np.full((cycles, len(units)), np.nan)
                cols[f][idx] = s[:, j]
            if cycles < 2 or np.isnan(cols["ns"]).any():
                raise ValueError("benchmark %s: %d cycles, some without every unit"
                                 % (name, cycles))
            cols["samples"] = cols.pop("ns")
            out[name] = dict(cols, units=units,
                             warmup_path_ns=dict(zip(units, b["warmup_path_ns"])),
                             warmup_launches=dict(zip(units, b["warmup_launches"])))
        return out
    except (ValueError, KeyError, TypeError, IndexError) as e:
        die("kle-bench --interleave printed no valid sample JSON (%s): %s"
            % (e, (text or "")[:200].replace("\n", " ")))

def ci(m, lo, hi, fmt="%.2f"):
    return (fmt + " [" + fmt + ".." + fmt + "]") % (m, lo, hi)

def positive(text):
    """Whether text is a number above 0."""
    try:
        return float(text) > 0
    except ValueError:
        return False

def check_options(a):
    """The interleaved method's options, checked before any run."""
    a.transports = common.choose("--transports", a.transports, TRANSPORTS)
    if a.cycles < 3:  # a paired CI resamples at least two blocks of 2 cycles
        die("--cycles must be at least 3")
    if a.warmup < 0 or a.batch < 0:
        die("--warmup and --batch must be 0 or more")
    if not re.fullmatch(r"0*[1-9]\d*(,0*[1-9]\d*)*", a.teams):
        die("--teams wants team counts from 1, comma-separated, not %r" % a.teams)
    if len(set(map(int, a.teams.split(",")))) != a.teams.count(",") + 1:
        die("--teams: a team count named twice in %r" % a.teams)
    a.waits = common.choose("--waits", a.waits, ("poll", "block", "default"), "wait") \
        if a.waits else []

def interleaved(a, env, num, uid, driver, host_only, timer_dir):
    transports, waits = a.transports, a.waits
    floor = not a.no_floor and uid.startswith("CUDA")
    units = [stats.unit_name(t, w) for t in transports + ["baseline"]
             for w in (waits or [""])] + (["floor"] if floor else [])
    passes = 2 if timer_dir else 1
    teams = len(a.teams.split(","))
    per_cycle = len(units) * (teams + a.batch) * (30e-6 if host_only else 60e-6)
    # The statistics: about 3 bootstrap CIs per unit and benchmark, ~70 ms each.
    benches = teams + (1 if a.batch else 0)
    est = passes * (0.5 + (a.cycles + a.warmup) * per_cycle) + benches * 3 * len(units) * 0.07
    note("interleaved: %d kle-bench run%s, %d+%d cycles of %s, teams %s%s; estimated %s"
         % (passes, "s" if passes > 1 else "", a.warmup, a.cycles, ",".join(units), a.teams,
            ", pipelined batches of %d" % a.batch if a.batch else "", hms(est)))
    if est > LONG_S and not a.force:
        die("this plan would take about %s; use --quick, fewer --cycles or --force to run it "
            "anyway" % hms(est))
    cmd = [a.bench, "--interleave", ",".join(transports), "--cycles", str(a.cycles),
           "--warmup", str(a.warmup), "--teams", a.teams, "--batch", str(a.batch)]
    cmd += (["--waits", ",".join(waits)] if waits else []) + (["--floor"] if floor else [])
    t0 = time.time()

    def bench_run(e, what):
        res = run_checked(cmd, e, a.timeout, "kle-bench --interleave (%s)" % what,
                          "kle-bench --interleave failed (%s)" % what)
        for line in res.stderr.splitlines():
            if line.startswith("kle-bench: note:"):
                print(line, file=sys.stderr, flush=True)
        note("%s done in %s" % (what, hms(time.time() - t0)))
        return parse_interleaved(res.stdout)

    meta = {"method": "interleaved", "machine": platform.node(),
            "device": "%d %s" % (num, uid), "driver": driver, "llvm": "22.1.8",
            "git": common.git_revision(), "cycles": a.cycles, "warmup_cycles": a.warmup,
            "order": "balanced (units forward, then backward, per pair of cycles)",
            "kernel_times": bool(timer_dir), "host_side_overhead_only": host_only}
    data = {"meta": meta, "units": units, "distributions": [], "paired": [],
            "kle_cost": [], "samples_ns": {}}
    fields = ["benchmark", "measure", "transport", "reference", "median_diff_us",
              "ci_low_us", "ci_high_us", "verdict"]

    def write_csv(f):
        w = csv.DictWriter(f, fieldnames=list(meta) + fields)
        w.writeheader()
        w.writerows(dict(meta, **{k: r[k] for k in fields}) for r in data["paired"])

    def save():
        common.save({os.path.join(a.out, "kle-interleaved.json"):
                     lambda f: json.dump(data, f, indent=1),
                     os.path.join(a.out, "kle-interleaved.csv"): write_csv}, data, common.PROG)

    main_run = bench_run(env, "pass 1/%d (end-to-end, host ns in the KLE path)" % passes)
    # What ran (a runtime without the wait switch runs no wait variants).
    units = data["units"] = next(iter(main_run.values()))["units"] if main_run else units
    reports = {}
    for name, b in main_run.items():
        rep = reports[name] = stats.interleaved_report(b)
        data["samples_ns"][name] = b["samples"].round(1).tolist()
        data["distributions"] += [dict(d, benchmark=name, transport=u)
                                  for u, d in rep["dist"].items()]
        data["paired"] += [dict(p, benchmark=name, measure="end_to_end")
                           for p in rep["paired"]]
    save()
    timed = bench_run(with_lib(env, timer_dir),
                      "pass 2/2 (kernel-only times and device spans)") if timer_dir else {}

    print("KLE cost per transport, interleaved in one process: device %d (%s), %s"
          % (num, uid, driver))
    if host_only:
        print("HOST-SIDE OVERHEAD ONLY: no kernel ran on a GPU; these figures are not GPU "
              "launch latency.")
    order = "".join(chr(65 + i) for i in range(len(units)))
    print("%d cycles after %d warm-up cycles; order %s %s ...; differences are medians of "
          "paired differences per cycle, 95%% CI from a block bootstrap over consecutive "
          "cycles" % (a.cycles, a.warmup, order, order[::-1]))
    # x floor: the median per-cycle ratio to the floor with its CI; cpu/wall 1: one core busy.
    row = "%-34s %-14s %6s %10s %10s %10s %-22s %8s %8s"
    print("\n" + row % ("benchmark", "transport", "n", "median(us)", "p90(us)", "p99(us)",
                        "x floor [95% CI]", "cpu(us)", "cpu/wall"))
    opt = lambda d, k: "%.2f" % d[k] if k in d else "-"
    for name, rep in reports.items():
        for u in units:
            d = rep["dist"][u]
            xf = d.get("x_floor")
            print(row % (name, u, d["n"], opt(d, "median_us"), opt(d, "p90_us"), opt(d, "p99_us"),
                         ci(*xf) if xf else ("1 (floor)" if u == "floor" else "-"),
                         opt(d, "cpu_us"), opt(d, "cpu_per_wall")))

    print("\nKLE cost table (us unless marked; '-': not measured here)")
    row = "%-34s %-14s %-24s %-12s %-26s %-26s %-26s %s"
    print(row % ("benchmark", "transport", "steady KLE host ns [CI]", "one-time ns",
                 "device span - baseline", "kernel-only - baseline", "end-to-end - copy",
                 "verdict"))
    for name, rep in reports.items():
        pairs = {(p["transport"], p["reference"]): p for p in rep["paired"]}
        tb = timed.get(name, {})
        for i, u in enumerate(units):
            what, wait = stats.unit_parts(u)
            if what in ("baseline", "floor"):
                continue
            base_u, copy_u = (stats.unit_name(r, wait) for r in ("baseline", "copy"))
            m, lo, hi = stats.paired_median_ci(main_run[name]["path_ns"][:, i])
            cost = {"benchmark": name, "transport": u, "steady_path_ns": m,
                    "steady_path_ns_ci": [lo, hi],
                    "one_time_path_ns": rep["one_time_path_ns"][u]}
            cells = [ci(m, lo, hi, "%.0f"), "%.0f" % cost["one_time_path_ns"]]
            for key, label in (("span_us", "device_span"), ("kernel_us", "kernel_only")):
                p = stats.paired(tb[key][:, i] - tb[key][:, units.index(base_u)], base_u) \
                    if key in tb else None
                if p:
                    data["paired"].append(dict(p, benchmark=name, measure=label, transport=u))
                    cost[label + "_minus_baseline_us"] = stats.median_ci(p)
                cells.append(ci(*stats.median_ci(p)) if p else "-")
            p = pairs.get((u, copy_u))  # None for copy itself
            if p:
                cost["end_to_end_minus_copy_us"] = stats.median_ci(p)
            cells.append(ci(*stats.median_ci(p)) if p else "(reference)" if u == copy_u else "-")
            cost["verdict"] = p["verdict"] if p else "-"
            data["kle_cost"].append(cost)
            print(row % tuple([name, u] + cells + [cost["verdict"]]))
    print("\npaired end-to-end differences (transport - reference, us)")
    for name, rep in reports.items():
        for p in rep["paired"]:
            print("%-34s %-14s - %-14s %s  %s" % (name, p["transport"], p["reference"],
                                                  ci(*stats.median_ci(p)), p["verdict"]))
    save()
    print("\nwrote %s/kle-interleaved.json and kle-interleaved.csv" % a.out)

def ab(a):
    """--ab: two kle-bench builds, one process per build, transport and round."""
    np, _ = common.require_scipy()
    if len(a.ab) != 2 or any("=" not in b for b in a.ab):
        die("--ab wants exactly two NAME=PATH (the first is the numerator)", 2)
    benches = [tuple(b.split("=", 1)) for b in a.ab]
    for name, path in benches:
        if not os.access(path, os.X_OK):
            die("--ab %s=%s is not an executable" % (name, path), 2)
    transports = common.choose("--transports", a.transports, TRANSPORTS)
    if a.rounds < 1:
        die("--rounds wants at least 1", 2)
    if not positive(a.min_time):
        die("--min-time wants a positive number of seconds, not %r" % a.min_time, 2)
    env = standin_env(a)
    if not env.get("KLE_BENCH_DEVICE"):  # the first CUDA device
        cuda = [n for n, uid in list_devices(benches[0][1], env, common.PROG,
                                             timeout=a.timeout) if uid.startswith("CUDA-")]
        if not cuda:
            die("%s --list-devices shows no CUDA device" % benches[0][1])
        env["KLE_BENCH_DEVICE"] = str(cuda[0])
    env = with_lib(env, a.timer) if a.timer else env
    samples = {}  # (build, transport, benchmark) -> [us]
    to_us = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for rnd in range(a.rounds):
        for t in transports:
            for name, path in (benches if rnd % 2 == 0 else benches[::-1]):
                what = "%s under %s" % (path, t)
                r = run_checked([path, "--benchmark_filter=" + a.filter,
                                 "--benchmark_min_time=" + a.min_time,
                                 "--benchmark_repetitions=%d" % AB_REPETITIONS,
                                 "--benchmark_format=json"],
                                dict(env, LIBOMPTARGET_KLE_TRANSPORT=t), a.timeout, what)
                try:
                    rows = [b for b in json.loads(r.stdout).get("benchmarks", [])
                            if b.get("run_type") == "iteration"]
                except ValueError:
                    die("%s printed no JSON: %s" % (what, complaint(r.stdout)))
                if not rows:
                    die("--filter %r selects no benchmark of %s (the Kernel* and "
                        "ReductionAfterWork ones need --kernel-times)" % (a.filter, path))
                for b in rows:
                    if b.get("error_occurred"):
                        die("%s: %s: %s" % (what, b["name"], b.get("error_message")))
                    samples.setdefault((name, t, b["run_name"]), []).append(
                        b["real_time"] * to_us[b["time_unit"]])
        note("round %d of %d done" % (rnd + 1, a.rounds))
    (na, _), (nb, _) = benches
    names = sorted({k for (_, _, k) in samples}, key=common.natural_key)
    print("DeviceRTL A/B (%s, us, median of %d rounds x %d repetitions): %s / %s"
          % ("kernel-only" if a.timer else "per launch", a.rounds, AB_REPETITIONS, na, nb))
    print("%-56s %-9s %10s %10s %8s %18s" % ("benchmark", "transport", na, nb, "ratio", "95% CI"))
    for k in names:
        for t in transports:
            x, y = samples.get((na, t, k)), samples.get((nb, t, k))
            if x and y:
                print("%-56s %-9s %10.2f %10.2f %8.3f   [%.3f, %.3f]"
                      % ((k, t, np.median(x), np.median(y)) + stats.ratio_ci(x, y)))
    if "zerocopy" in transports and "resident" in transports:
        print("zerocopy / resident (target: at most 1.03 with >= 2 us of team work)")
        for k in names:
            for n in (na, nb):
                z, res = samples.get((n, "zerocopy", k)), samples.get((n, "resident", k))
                if z and res:
                    print("%-56s %-9s %8.3f   [%.3f, %.3f]" % ((k, n) + stats.ratio_ci(z, res)))
    if a.json:
        common.save_json(a.json, {
            "benches": dict(benches), "transports": transports, "unit": "us",
            "samples": [{"bench": n, "transport": t, "benchmark": k, "us": v}
                        for (n, t, k), v in sorted(samples.items())]}, common.PROG)
    return 0

def standin_env(a):
    """The environment, with --standin's library first and no planted delay
    unless KLE_STANDIN_DELAY_US says otherwise."""
    env = dict(os.environ)
    if a.standin:
        if not os.path.exists(os.path.join(a.standin, "libcuda.so.1")):
            die("no libcuda.so.1 in --standin %s" % a.standin)
        env = with_lib(env, a.standin)
        env.setdefault("KLE_STANDIN_DELAY_US", "0:0")
    return env

def pick_device(a, env):
    """(number, uid) of the device to run on; never a host device, and with
    --standin only one of the stand-in's."""
    devs = list_devices(a.bench, env, common.PROG)
    pick = [d for d in devs if str(d[0]) == a.device] if a.device != "auto" else \
        [d for d in devs if not d[1].startswith("x86_64")] + devs
    if not pick:
        die("no device %s (devices: %s)" % (a.device, devs) if a.device != "auto"
            else "kle-bench sees no offload device")
    num, uid = pick[0]
    if a.standin and not uid.startswith(STANDIN_UID):
        if not any(u.startswith("CUDA") for _, u in devs):
            die("--standin given but the stand-in exposes no CUDA device "
                "(KLE_CUDA_STANDIN_DEVICES=0?); devices: %s"
                % ", ".join("%d %s" % d for d in devs))
        die("--standin given but device %d (%s) is not one of the stand-in's CUDA "
            "devices (%s)" % (num, uid, ", ".join(
                "%d %s" % d for d in devs if d[1].startswith(STANDIN_UID)) or "none"))
    if uid.startswith("x86_64"):
        die("device %d (%s) is a host device: the host plugin has no KLE "
            "transports, so every zerocopy, resident and staged row would "
            "measure copy; run on a GPU, or on the CUDA driver stand-in with "
            "--standin DIR (host-side overhead only)" % (num, uid))
    return num, uid

def main(argv):
    ap = argparse.ArgumentParser(prog=common.PROG, description=common.summary(__doc__))
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kle-bench"),
                    help="the kle-bench to run (default %(default)s)")
    ap.add_argument("--device", default="auto", help="device number, or auto (first GPU)")
    ap.add_argument("--standin", default="", help="CUDA driver stand-in lib dir (host-side "
                    "overhead only)")
    ap.add_argument("--quick", action="store_true",
                    help="200 cycles, batches of 16 (explicit options override)")
    ap.add_argument("--force", action="store_true",
                    help="run even if the plan is estimated at over an hour")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="the transports, comma-separated (default %(default)s)")
    ap.add_argument("--cycles", type=int, help="measured cycles per benchmark (default 1000, "
                    "--quick 200)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="warm-up cycles per benchmark, not measured (default %(default)s)")
    ap.add_argument("--teams", default="1,1024",
                    help="team counts of the synchronous rows (default %(default)s)")
    ap.add_argument("--batch", type=int, help="nowait launches per pipelined batch (0: no "
                    "pipelined rows; default 64, --quick 16)")
    ap.add_argument("--waits", default="",
                    help="the CUDA plugin's waits to pair (poll, block, default; "
                         "comma-separated; default none: the runtime's own)")
    ap.add_argument("--no-floor", action="store_true",
                    help="leave out the floor (on by default on CUDA devices)")
    ap.add_argument("--kernel-times", default="auto",
                    help="dir of bench/kernel-timer's libcuda.so, 'auto' (next to --bench, "
                         "not on the stand-in), or 'off'")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds one kle-bench run may take (default %(default)s)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-results"),
                    help="directory for kle-interleaved.json and .csv")
    ab_opts = ap.add_argument_group("--ab: two builds")
    ab_opts.add_argument("--ab", action="append", default=[], metavar="NAME=PATH",
                         help="a kle-bench build, given twice")
    ab_opts.add_argument("--filter", default="^(ReductionAfterWork|KernelReduction/teams:(1|132|16384)/)",
                         help="the Google Benchmark rows to compare (a regex)")
    ab_opts.add_argument("--rounds", type=int, default=2,
                         help="rounds, each running both builds (default %(default)s)")
    ab_opts.add_argument("--min-time", default="0.05",
                         help="seconds per benchmark row (default %(default)s)")
    ab_opts.add_argument("--json", default="", help="file for the raw samples")
    a = ap.parse_args(argv)
    if a.timeout < 1:
        die("--timeout must be at least 1 second")
    a.timer = None if a.kernel_times in ("auto", "off") else a.kernel_times
    if a.timer and not os.path.exists(os.path.join(a.timer, "libcuda.so")):
        die("no libcuda.so (bench/kernel-timer) in --kernel-times %s" % a.timer,
            2 if a.ab else 1)
    common.require_scipy()  # before any output (may re-execute)
    if a.ab:
        if a.json:
            a.json = common.check_out(a.json, common.PROG, "readpath.json")
        return ab(a)
    a.cycles = a.cycles if a.cycles is not None else 200 if a.quick else 1000
    a.batch = a.batch if a.batch is not None else 16 if a.quick else 64
    check_options(a)
    common.need_bench(a.bench)
    a.out = common.check_out(a.out, common.PROG)
    for name in ("kle-interleaved.json", "kle-interleaved.csv"):
        if os.path.isdir(os.path.join(a.out, name)):
            die("--out %s: %s is a directory" % (a.out, name))
    env = standin_env(a)
    env.pop("LIBOMPTARGET_KLE_TRANSPORT", None)
    num, uid = pick_device(a, env)
    env["KLE_BENCH_DEVICE"] = str(num)
    standin = uid.startswith(STANDIN_UID)
    driver = "CUDA driver stand-in" if standin else "unknown"
    if not standin and shutil.which("nvidia-smi"):
        smi = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], None)
        driver = "CUDA driver " + smi.stdout.strip() if smi.returncode == 0 else driver
    timer_dir = None
    if a.kernel_times != "off" and uid.startswith("CUDA"):
        timer_dir = a.timer or os.path.join(os.path.dirname(os.path.abspath(a.bench)),
                                            "kernel-timer")
        if not os.path.exists(os.path.join(timer_dir, "libcuda.so")):
            timer_dir = None  # auto, and none built
    if (standin and timer_dir and not a.timer
            and not positive(env.get("KLE_STANDIN_KERNEL_US", ""))):
        note("no kernel-only times on the stand-in: its kernels take no time unless "
             "KLE_STANDIN_KERNEL_US is set; --kernel-times DIR forces them")
        timer_dir = None
    return interleaved(a, env, num, uid, driver, standin, timer_dir)
