#!/usr/bin/env python3
"""Compare the KLE transports (zerocopy, resident, staged, copy) and a no-KLE baseline.

Runs bench/kle-bench once per transport per round, interleaving the order
(ABC, CBA, ...) so that drift on a shared machine cancels, and reports for
each benchmark and transport the median, p90, p99 and a bootstrap 95%
confidence interval of the median of the per-run times, with the ratio to the
no-KLE baseline of the same shape and to the copy transport.

Times are seconds per launch (Google Benchmark's real time per iteration; for
the pipelined benchmarks, divided by the launches per iteration). On the CUDA
driver stand-in the figures are host-side overhead only: no kernel runs on a
GPU there; a host device is refused (the host plugin has no KLE
transports). Under the stand-in it also counts driver calls per launch by
entry point (from 100 and 200 launches, so start-up cancels).

Besides the Google Benchmark figures (one sample per run and round), each
round also records per-launch latencies ("LaunchLatency/teams:N": kle-bench
--latency-samples, reduction and baseline launched alternately), so the p90
and p99 of those rows are per-launch percentiles. On a CUDA device, with
--kernel-times (default: on when build/bench/kernel-timer exists), a third
pass per round puts bench/kernel-timer's libcuda.so on LD_LIBRARY_PATH and
records the kernels' own GPU run times ("KernelReduction/teams:N" against
"KernelBaseline/teams:N"). The 95% confidence interval of a median is a
percentile bootstrap (fixed seed): over the samples for the Google Benchmark
rows (one per run), over whole runs for the per-launch rows (launches of one
process are not independent samples: runs differ).

With --standin the device must be one of the stand-in's CUDA devices (never
a host device labelled the stand-in). A failed kle-bench run is reported with
its exit status and its own error lines, not the stand-in's report lines.

--quick: fewer rounds, two team counts and a shorter --min-time (see
PROFILES), about 25 s on the stand-in on two cores with little other
load, still every transport's median with its CI; any option given explicitly overrides it.
Before the first run it prints how many kle-bench runs it will make and how
long that should take (a model of Google Benchmark's run time), and refuses
a plan estimated at over an hour unless --force is given. During the runs it
prints one progress line per kle-bench run on stderr (run k of n, round,
transport, what runs, elapsed, estimated remaining), with a tqdm bar below
them when stderr is a terminal (Debian's python3-tqdm; plain lines without
it). Kernel-only times on the CUDA driver stand-in need KLE_STANDIN_KERNEL_US
(its kernels otherwise take no time, and Google Benchmark's manual timing
would run millions of iterations): --kernel-times auto skips them there.

Outputs: a table on stdout (column n: the samples of a row, one per run and
round for Google Benchmark rows, one per launch for LaunchLatency rows; the
JSON and CSV field is "runs"), and <out>/kle-compare.json and .csv with the
machine, device, driver, LLVM version and git revision. --out is created and
checked before the first run. Python standard library only.
"""
import argparse
import csv
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys

import klebench
from klebench import (run, list_devices, complaint, status, check_out_dir,
                      save_or_die, MAX_LATENCY_SAMPLES, TRANSPORTS)
import tempfile
import time

try:
    from tqdm import tqdm
except ImportError:
    # No bar, plain progress lines (Debian's python3-tqdm serves
    # /usr/bin/python3; --interleave runs there when numpy is missing).
    tqdm = None

# Defaults per mode; an option given on the command line wins.
PROFILES = {
    "full": {"rounds": 5, "min_time": "0.2", "filter": ".", "latency_samples": 2000,
             "kernel_filter": "^Kernel", "cycles": 1000, "teams": "1,1024", "batch": 64},
    "quick": {"rounds": 5, "min_time": "0.05",
              "filter": "^(Sync(Reduction|Baseline)/teams:(1|1024)/|Pipelined)",
              "latency_samples": 1000, "kernel_filter": "^Kernel.*/teams:(1|1024)/",
              "cycles": 200, "teams": "1,1024", "batch": 16},
}
LONG_S = 3600  # plans estimated above this are refused without --force
TIMEOUT = [1800]  # seconds per kle-bench run (--timeout)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    sys.exit("kle-compare: error: " + msg)


def hms(s):
    """Seconds as "1 h 02 min", "3 min 05 s" or "42 s"."""
    s = int(round(s))
    if s >= 3600:
        return "%d h %02d min" % (s // 3600, s % 3600 // 60)
    if s >= 60:
        return "%d min %02d s" % (s // 60, s % 60)
    return "%d s" % s


class Progress:
    """One stderr line per kle-bench run, before it starts: run k of n, round,
    transport, what runs, elapsed and estimated remaining time (the plan's
    model, scaled by how fast the runs so far went against it). With tqdm and
    a terminal, a bar stays below the lines."""

    def __init__(self, plan):
        self.plan = plan  # [(round or None, transport, what, estimated s)]
        self.total_est = sum(p[3] for p in plan)
        self.t0 = time.monotonic()
        self.k = 0
        self.est_done = 0.0
        self.bar = None
        if tqdm is not None and sys.stderr.isatty():
            self.bar = tqdm(total=len(plan), file=sys.stderr, unit="run", leave=False,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} runs")

    def start(self, rounds):
        rnd, t, what, est = self.plan[self.k]
        elapsed = time.monotonic() - self.t0
        left = self.total_est - self.est_done
        if self.est_done > 0 and elapsed > 0:
            left *= elapsed / self.est_done
        where = ("round %d/%d" % (rnd + 1, rounds)) if rnd is not None else "after the rounds"
        line = "kle-compare: run %d/%d, %s, %s: %s; elapsed %s, about %s left" % (
            self.k + 1, len(self.plan), where, t, what, hms(elapsed), hms(left))
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def done(self):
        self.est_done += self.plan[self.k][3]
        self.k += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()
        print("kle-compare: %d runs in %s" % (self.k, hms(time.monotonic() - self.t0)),
              file=sys.stderr)


def failed(what, res):
    """die() for a kle-bench run that failed: its exit status and its own
    error lines (not the CUDA driver stand-in's report)."""
    die("%s (%s): %s" % (what, status(res.returncode), complaint(res.stderr)))


def positive_seconds(s):
    """s as a positive, finite number of seconds, else None."""
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) and v > 0 else None


def pick_device(devs, want):
    if want != "auto":
        for num, uid in devs:
            if str(num) == want:
                return num, uid
        die("no device %s (devices: %s)" % (want, devs))
    gpus = [d for d in devs if not d[1].startswith("x86_64")]
    if gpus:
        return gpus[0]
    if devs:
        return devs[0]
    die("kle-bench sees no offload device")


def percentile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median_ci(xs, rng, resamples=2000, blocks=None):
    """95% CI of the median: a percentile bootstrap. With blocks (the samples
    of each run, i.e. process), whole runs are resampled and pooled, so the
    interval reflects the spread between runs rather than treating every
    launch of one process as independent."""
    if blocks and len(blocks) > 1:
        resamples = 400
        meds = sorted(statistics.median([x for b in rng.choices(blocks, k=len(blocks))
                                         for x in b]) for _ in range(resamples))
    else:
        meds = sorted(statistics.median(rng.choices(xs, k=len(xs)))
                      for _ in range(resamples))
    return meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def per_launch(b):
    t = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    name = b["run_name"]
    if "/launches:" in name:
        t /= int(name.split("/launches:")[1].split("/")[0])
    return t


def baseline_name(name):
    return (name.replace("SyncReductionThreads", "-")
                .replace("SyncReduction", "SyncBaseline")
                .replace("PipelinedReduction", "PipelinedBaseline")
                .replace("KernelReduction", "KernelBaseline"))


def driver_calls(bench, env, standin_dir, progress=None, rounds=0):
    """Driver calls per launch by entry point, from 100 and 200 launches."""
    counts = {}
    for n in (100, 200):
        if progress:
            progress.start(rounds)
        with tempfile.NamedTemporaryFile("r", suffix=".txt") as f:
            e = dict(env, KLE_STANDIN_STATS_FILE=f.name)
            r = run([bench, "--launches", str(n)], e, timeout=TIMEOUT[0])
            if r.returncode:
                failed("kle-bench --launches %d failed" % n, r)
            c = {}
            for line in open(f.name):
                parts = line.split()
                if len(parts) == 2 and not parts[0].startswith("#"):
                    c[parts[0]] = int(parts[1])
            counts[n] = c
        if progress:
            progress.done()
    names = sorted(set(counts[100]) | set(counts[200]))
    return {k: (counts[200].get(k, 0) - counts[100].get(k, 0)) / 100.0 for k in names}


def kle_path_ns(bench, env, launches=1000):
    """Mean host ns per launch in the plugin's KLE path (KLE stats line)."""
    r = run([bench, "--launches", str(launches)],
            dict(env, LIBOMPTARGET_KLE_STATS="1"), timeout=TIMEOUT[0])
    if r.returncode:
        failed("kle-bench --launches %d failed" % launches, r)
    for st in klebench.parse_stats(r.stderr):
        if "host_ns_per_launch_in_kle_path" in st["fields"]:
            return st["fields"]["host_ns_per_launch_in_kle_path"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kle-bench"))
    ap.add_argument("--device", default="auto", help="device number, or auto (first GPU, else host)")
    ap.add_argument("--quick", action="store_true",
                    help="a short comparison (about 25 s on the stand-in, 2 cores): 5 rounds, "
                         "teams 1 and 1024 and the pipelined pair, --min-time 0.05, "
                         "1000 latency samples; explicit options override")
    ap.add_argument("--force", action="store_true",
                    help="run even if the plan is estimated at over an hour")
    ap.add_argument("--rounds", type=int, default=None,
                    help="runs per transport, interleaved (default 5)")
    ap.add_argument("--min-time", default=None,
                    help="--benchmark_min_time per benchmark (s; default 0.2, --quick 0.05)")
    ap.add_argument("--filter", default=None,
                    help="--benchmark_filter (default: all; --quick: %s)"
                         % PROFILES["quick"]["filter"])
    ap.add_argument("--standin", default="", help="CUDA driver stand-in lib dir (host-side overhead only)")
    ap.add_argument("--latency-samples", type=int, default=None,
                    help="per-launch latencies per round and transport (0: none; "
                         "default 2000, --quick 1000)")
    ap.add_argument("--kernel-times", default="auto",
                    help="dir of bench/kernel-timer's libcuda.so, 'auto' "
                         "(build/bench/kernel-timer if built), or 'off'")
    ap.add_argument("--kernel-filter", default=None,
                    help="--benchmark_filter for the kernel-time pass")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds one kle-bench run may take before the comparison stops")
    ap.add_argument("--interleave", action="store_true",
                    help="the interleaved method: every transport and the baseline in one "
                         "kle-bench process, switched launch by launch (ABCDE EDCBA ...), "
                         "paired differences with block-bootstrap CIs and the KLE cost table")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="--interleave: the transports, comma-separated (default %(default)s)")
    ap.add_argument("--cycles", type=int, default=None,
                    help="--interleave: measured cycles per benchmark (default 1000, --quick 200)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="--interleave: warm-up cycles per benchmark, not measured "
                         "(default %(default)s)")
    ap.add_argument("--teams", default=None,
                    help="--interleave: team counts of the synchronous rows (default 1,1024)")
    ap.add_argument("--waits", default="",
                    help="--interleave: the CUDA plugin's waits to pair, each transport and the "
                         "baseline under each (poll, block, default; comma-separated; default "
                         "none: the runtime's own). A runtime without the wait switch runs "
                         "without them, with one note")
    ap.add_argument("--no-floor", action="store_true",
                    help="--interleave: leave out the floor (the same work through the CUDA "
                         "driver directly, kle-floor.h), which is on by default on CUDA devices")
    ap.add_argument("--batch", type=int, default=None,
                    help="--interleave: nowait launches per pipelined batch (0: no pipelined "
                         "rows; default 64, --quick 16)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-results"),
                    help="directory for kle-compare.json and .csv (created; checked "
                         "before any run)")
    a = ap.parse_args()
    if a.interleave:  # numpy and scipy, before any output (may re-execute)
        klebench.require_scipy("kle-compare")
    for k, v in PROFILES["quick" if a.quick else "full"].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if not os.access(a.bench, os.X_OK):
        die("%s is not an executable kle-bench; build bench/ first (README, Benchmarks)" % a.bench)
    if a.rounds < 2:
        die("--rounds must be at least 2")
    if positive_seconds(a.min_time) is None:
        die("--min-time wants a positive number of seconds, not %r" % a.min_time)
    if not 0 <= a.latency_samples <= MAX_LATENCY_SAMPLES:
        die("--latency-samples wants 0 (none) or 1 to %d (kle-bench's limit), not %d"
            % (MAX_LATENCY_SAMPLES, a.latency_samples))
    if a.timeout < 1:
        die("--timeout must be at least 1 second")
    TIMEOUT[0] = a.timeout
    # Before any run: a bad --out must not cost the results at the end.
    a.out = check_out_dir(a.out, "kle-compare")
    for name in ("kle-compare.json", "kle-compare.csv"):
        if os.path.isdir(os.path.join(a.out, name)):
            die("--out %s: %s is a directory" % (a.out, name))

    env = dict(os.environ)
    env.pop("LIBOMPTARGET_KLE_TRANSPORT", None)
    if a.standin:
        if not os.path.exists(os.path.join(a.standin, "libcuda.so.1")):
            die("no libcuda.so.1 in --standin %s" % a.standin)
        env["LD_LIBRARY_PATH"] = a.standin + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        env.setdefault("KLE_STANDIN_DELAY_US", "0:0")
    devs = list_devices(a.bench, env, "kle-compare")
    num, uid = pick_device(devs, a.device)
    env["KLE_BENCH_DEVICE"] = str(num)
    # The stand-in's devices report UUID "KLE-STANDIN-..." (hex after CUDA-):
    # label them host-side even when reached without --standin.
    standin_uid = "CUDA-" + "KLE-STANDIN".encode().hex()
    if a.standin and not uid.startswith(standin_uid):
        # Never benchmark a host device (or another driver's GPU) and label
        # it the stand-in.
        if not any(u.startswith("CUDA") for _, u in devs):
            die("--standin given but the stand-in exposes no CUDA device "
                "(KLE_STANDIN_DEVICES=0?); devices: %s"
                % ", ".join("%d %s" % d for d in devs))
        die("--standin given but device %d (%s) is not one of the stand-in's CUDA "
            "devices (%s)" % (num, uid, ", ".join(
                "%d %s" % d for d in devs if d[1].startswith(standin_uid)) or "none"))
    if uid.startswith("x86_64"):
        # The host plugin has no KLE transports: every row would measure
        # copy under another transport's name.
        die("device %d (%s) is a host device: the host plugin has no KLE "
            "transports, so every zerocopy, resident and staged row would "
            "measure copy; run on a GPU, or on the CUDA driver stand-in with "
            "--standin DIR (host-side overhead only)" % (num, uid))
    standin = bool(a.standin) or uid.startswith(standin_uid)
    host_only = standin
    driver = "CUDA driver stand-in" if standin else ""
    if not driver:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True) if shutil_which("nvidia-smi") else None
        driver = "CUDA driver " + smi.stdout.strip() if smi and smi.returncode == 0 else "unknown"

    timer_dir = None
    if a.kernel_times != "off" and uid.startswith("CUDA"):
        timer_dir = (os.path.join(os.path.dirname(os.path.abspath(a.bench)), "kernel-timer")
                     if a.kernel_times == "auto" else a.kernel_times)
        if not os.path.exists(os.path.join(timer_dir, "libcuda.so")):
            if a.kernel_times != "auto":
                die("no libcuda.so (bench/kernel-timer) in --kernel-times %s" % timer_dir)
            timer_dir = None
    kernel_us = 0.0
    if standin:
        try:
            kernel_us = float(env.get("KLE_STANDIN_KERNEL_US", "0") or 0)
        except ValueError:
            kernel_us = 0.0
        if timer_dir and a.kernel_times == "auto" and kernel_us <= 0:
            print("kle-compare: no kernel-only times on the stand-in: its kernels take no "
                  "time unless KLE_STANDIN_KERNEL_US is set (Google Benchmark's manual "
                  "timing would run for hours); --kernel-times DIR forces them",
                  file=sys.stderr)
            timer_dir = None

    if a.interleave:
        return interleaved(a, env, num, uid, driver, host_only, timer_dir)

    def count_benchmarks(e, flt, t):
        """How many benchmarks --benchmark_filter flt selects (checked before
        any timed run, so that a filter matching nothing fails at once)."""
        res = run([a.bench, "--benchmark_list_tests", "--benchmark_filter=" + flt], e,
                  timeout=TIMEOUT[0])
        if res.returncode:
            failed("kle-bench --benchmark_list_tests failed under %s" % t, res)
        return [l for l in res.stdout.splitlines() if l.strip()]

    # The plan and its estimated time: Google Benchmark runs each benchmark
    # for about 1.5 times --benchmark_min_time (its iteration-count search), each
    # kle-bench process costs START_S, a launch about LAUNCH_S on the host
    # side. Manual-time (Kernel*) benchmarks count only kernel time, so they
    # take (host time per launch + kernel time) / kernel time as long.
    START_S, LAUNCH_S = 0.25, 30e-6
    min_t = float(a.min_time)
    e0 = dict(env, LIBOMPTARGET_KLE_TRANSPORT=TRANSPORTS[0])
    names = count_benchmarks(e0, a.filter, TRANSPORTS[0])
    if not names:
        die("--filter %r matches no benchmark (kle-bench --benchmark_list_tests lists them)"
            % a.filter)
    knames = []
    if timer_dir:
        et0 = dict(e0, LD_LIBRARY_PATH=timer_dir + os.pathsep + e0.get("LD_LIBRARY_PATH", ""))
        knames = count_benchmarks(et0, a.kernel_filter, TRANSPORTS[0])
    kstretch = ((LAUNCH_S * 1e6 + kernel_us) / max(kernel_us, 0.15)) if standin else 3.0
    est_gb = START_S + len(names) * (1.5 * min_t + 0.02)
    est_kb = START_S + len(knames) * (1.5 * min_t * kstretch + 0.02)
    est_lat = START_S + 4 * a.latency_samples * LAUNCH_S
    plan = []
    for r in range(a.rounds):
        for t in (TRANSPORTS if r % 2 == 0 else TRANSPORTS[::-1]):
            plan.append((r, t, "%d benchmark%s (--filter %s)" % (
                len(names), "s" if len(names) > 1 else "", a.filter), est_gb))
            if timer_dir:
                plan.append((r, t, "%d kernel-only benchmarks (--kernel-filter %s)" % (
                    len(knames), a.kernel_filter), est_kb))
            if a.latency_samples:
                plan.append((r, t, "LaunchLatency, %d launches per team count"
                             % a.latency_samples, est_lat))
    if not uid.startswith("x86_64"):
        for t in TRANSPORTS:
            plan.append((None, t, "KLE stats, 1000 launches", START_S + 1000 * LAUNCH_S))
    if standin:
        for t in TRANSPORTS:
            for n in (100, 200):
                plan.append((None, t, "driver calls, %d launches" % n, START_S + n * LAUNCH_S))
    est = sum(p[3] for p in plan)
    print("kle-compare: %d kle-bench runs (%d rounds x %d transports%s), estimated %s"
          % (len(plan), a.rounds, len(TRANSPORTS),
             "" if a.quick else "; --quick: about 25 s on the stand-in", hms(est)),
          file=sys.stderr, flush=True)
    if est > LONG_S and not a.force:
        die("this plan would take about %s; use --quick, fewer --rounds, a shorter "
            "--min-time or a narrower --filter, or --force to run it anyway" % hms(est))
    progress = Progress(plan)

    def gbench(e, flt, t):
        with tempfile.NamedTemporaryFile("r", suffix=".json") as f:
            res = run([a.bench, "--benchmark_min_time=" + a.min_time,
                       "--benchmark_filter=" + flt,
                       "--benchmark_out=" + f.name, "--benchmark_out_format=json"],
                      e, timeout=TIMEOUT[0])
            if res.returncode:
                failed("kle-bench failed under %s" % t, res)
            try:
                return json.load(open(f.name))["benchmarks"]
            except (ValueError, KeyError):
                die("kle-bench wrote no results under %s (does --filter %r match "
                    "any benchmark?)" % (t, flt))

    # After every round the raw samples so far go to kle-compare.rounds.json
    # (written to a temporary name, then renamed), so a run stopped by a time
    # limit still leaves every completed round's figures;
    # the file is removed once the full results are written.
    rounds_file = os.path.join(a.out, "kle-compare.rounds.json")

    def save_rounds(done, samples):
        try:
            os.makedirs(a.out, exist_ok=True)
            tmp = rounds_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"rounds_done": done, "rounds": a.rounds, "unit": "s per launch",
                           "samples": [{"benchmark": n, "transport": t, "samples_s": xs}
                                       for (n, t), xs in sorted(samples.items())]}, f)
            os.replace(tmp, rounds_file)
        except OSError as e:
            print("kle-compare: warning: could not save round %d's samples: %s" % (done, e),
                  file=sys.stderr)

    samples = {}  # (benchmark, transport) -> [seconds per launch]
    blocks = {}   # per-launch rows: (benchmark, transport) -> [samples of one run]
    for r in range(a.rounds):
        order = TRANSPORTS if r % 2 == 0 else TRANSPORTS[::-1]
        for t in order:
            e = dict(env, LIBOMPTARGET_KLE_TRANSPORT=t)
            progress.start(a.rounds)
            benches = gbench(e, a.filter, t)
            progress.done()
            if timer_dir:
                et = dict(e, LD_LIBRARY_PATH=timer_dir + os.pathsep + e.get("LD_LIBRARY_PATH", ""))
                progress.start(a.rounds)
                kb = gbench(et, a.kernel_filter, t)
                progress.done()
                if not kb:
                    die("kernel timer in %s not picked up by the CUDA plugin" % timer_dir)
                benches += kb
            for b in benches:
                if b.get("error_occurred"):
                    die("%s failed under %s: %s" % (b["run_name"], t, b.get("error_message", "")))
                name = b["run_name"]
                key = ("baseline" if "Baseline" in name else t)
                samples.setdefault((name, key), []).append(per_launch(b))
            if a.latency_samples:
                progress.start(a.rounds)
                res = run([a.bench, "--latency-samples", str(a.latency_samples)], e, timeout=TIMEOUT[0])
                progress.done()
                if res.returncode:
                    failed("kle-bench --latency-samples failed under %s" % t, res)
                try:
                    lat = json.loads(res.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    die("kle-bench --latency-samples printed no JSON under %s" % t)
                for teams, d in lat.items():
                    name = "LaunchLatency/" + teams
                    for key, vals in (((name, t), d["reduction"]), ((name, "baseline"), d["baseline"])):
                        block = [v * 1e-9 for v in vals]
                        samples.setdefault(key, []).extend(block)
                        blocks.setdefault(key, []).append(block)
        save_rounds(r + 1, samples)

    rng = random.Random(42)
    rows = []
    for (name, t), xs in sorted(samples.items()):
        lo, hi = median_ci(xs, rng, blocks=blocks.get((name, t)))
        rows.append({"benchmark": name, "transport": t, "runs": len(xs),
                     "median_s": statistics.median(xs), "p90_s": percentile(xs, 0.9),
                     "p99_s": percentile(xs, 0.99), "ci95_lo_s": lo, "ci95_hi_s": hi,
                     "samples_s": xs})
    med = {(r["benchmark"], r["transport"]): r["median_s"] for r in rows}
    for r in rows:
        base = med.get((baseline_name(r["benchmark"]), "baseline")) or \
            med.get((r["benchmark"], "baseline"))
        copy = med.get((r["benchmark"], "copy"))
        r["vs_baseline"] = r["median_s"] / base if base and r["transport"] != "baseline" else None
        r["vs_copy"] = r["median_s"] / copy if copy and r["transport"] not in ("copy", "baseline") else None

    path_ns = {}
    if not uid.startswith("x86_64"):
        for t in TRANSPORTS:
            progress.start(a.rounds)
            path_ns[t] = kle_path_ns(a.bench, dict(env, LIBOMPTARGET_KLE_TRANSPORT=t))
            progress.done()

    calls_by_t = {}
    if standin:
        for t in TRANSPORTS:
            calls_by_t[t] = driver_calls(a.bench, dict(env, LIBOMPTARGET_KLE_TRANSPORT=t),
                                         a.standin, progress, a.rounds)
    progress.close()

    git = klebench.git_revision()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    meta = {"machine": platform.node(), "cpu": cpu, "device": "%d %s" % (num, uid),
            "driver": driver, "llvm": "22.1.8", "git": git, "rounds": a.rounds,
            "latency_samples_per_round": a.latency_samples,
            "kernel_times": bool(timer_dir),
            "host_side_overhead_only": host_only}

    title = "KLE transports on device %d (%s), %s" % (num, uid, driver)
    print(title)
    if host_only:
        print("HOST-SIDE OVERHEAD ONLY: no kernel ran on a GPU; these figures are not GPU launch latency.")
    # n: the samples of a row. JSON and CSV keep the field name "runs".
    print("%-46s %-9s %6s %11s %11s %11s %23s %8s %8s" % (
        "benchmark", "transport", "n", "median(us)", "p90(us)", "p99(us)",
        "95% CI of median (us)", "/base", "/copy"))
    for r in rows:
        f = lambda v: "%.2f" % v if v is not None else "-"
        print("%-46s %-9s %6d %11.3f %11.3f %11.3f %11.3f..%-11.3f %8s %8s" % (
            r["benchmark"], r["transport"], r["runs"], r["median_s"] * 1e6, r["p90_s"] * 1e6,
            r["p99_s"] * 1e6, r["ci95_lo_s"] * 1e6, r["ci95_hi_s"] * 1e6,
            f(r["vs_baseline"]), f(r["vs_copy"])))
    print("n: samples, one per run and round for Google Benchmark rows, one per launch "
          "for LaunchLatency rows")
    if any(v is not None for v in path_ns.values()):
        print("\nHost time per launch in the plugin's KLE path (ns; mean over 1000 "
              "synchronous launches, teams=1, LIBOMPTARGET_KLE_STATS=1, one-time pool "
              "growth included; steady median and one-time cost apart: --interleave):")
        print("".join("%10s" % t for t in TRANSPORTS))
        print("".join("%10s" % (path_ns[t] if path_ns[t] is not None else "-")
                      for t in TRANSPORTS))
    if calls_by_t:
        print("\nDriver calls per launch (SyncReduction, teams=1; from 200 - 100 launches):")
        names = sorted(set().union(*[set(c) for c in calls_by_t.values()]))
        print("%-28s" % "entry point" + "".join("%10s" % t for t in TRANSPORTS))
        for n in names:
            vals = [calls_by_t[t].get(n, 0.0) for t in TRANSPORTS]
            if any(vals):
                print("%-28s" % n + "".join("%10.2f" % v for v in vals))

    data = {"meta": meta, "results": rows, "driver_calls_per_launch": calls_by_t,
            "kle_path_host_ns_per_launch": path_ns}

    def write():
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "kle-compare.json"), "w") as f:
            json.dump(data, f, indent=1)
        with open(os.path.join(a.out, "kle-compare.csv"), "w", newline="") as f:
            fields = [k for k in rows[0] if k != "samples_s"]
            w = csv.DictWriter(f, fieldnames=list(meta) + fields)
            w.writeheader()
            for r in rows:
                w.writerow(dict(meta, **{k: r[k] for k in fields}))
    save_or_die(write, "the results into --out %s" % a.out, "kle-compare", data)
    try:
        os.remove(rounds_file)
    except OSError:
        pass
    print("\nwrote %s/kle-compare.json and kle-compare.csv" % a.out)


def interleaved(a, env, num, uid, driver, host_only, timer_dir):
    """--interleave: one kle-bench --interleave process (plus, with the
    kernel timer, a second one for the kernel-only times and device spans),
    then the distributions, the paired differences and the KLE cost table on
    stdout, and kle-interleaved.json ("paired", "distributions", "kle_cost",
    "samples_ns") and kle-interleaved.csv (the paired rows) in --out, written
    after each pass. On a CUDA device the floor (kle-floor.h) is one more
    unit unless --no-floor: each distribution then has "x_floor" [median,
    low, high]; every distribution has "cpu_us" and "cpu_per_wall". A "paired" entry's "measure" is end_to_end (host clock,
    pass 1), device_span or kernel_only (kernel timer, pass 2)."""
    np, _ = klebench.require_scipy("kle-compare")
    transports = [t for t in a.transports.split(",")]
    bad = [t for t in transports if t not in TRANSPORTS]
    if bad or not transports or len(set(transports)) != len(transports):
        die("--transports: %s (valid: %s, comma-separated, each once)"
            % ("unknown transport %r" % bad[0] if bad else "a transport named twice"
               if transports else "none given", ", ".join(TRANSPORTS)))
    if a.cycles < 2:
        die("--cycles must be at least 2")
    if a.warmup < 0 or a.batch < 0:
        die("--warmup and --batch must be 0 or more")
    try:
        teams = [int(t) for t in a.teams.split(",")]
        if any(t < 1 for t in teams):
            raise ValueError
    except ValueError:
        die("--teams wants team counts from 1, comma-separated, not %r" % a.teams)
    if len(set(teams)) != len(teams):
        die("--teams: a team count named twice in %r" % a.teams)
    waits = [w for w in a.waits.split(",") if w]
    bad = [w for w in waits if w not in ("poll", "block", "default")]
    if bad or len(set(waits)) != len(waits):
        die("--waits: %s (valid: poll, block, default, comma-separated, each once)"
            % ("unknown wait %r" % bad[0] if bad else "a wait named twice"))
    floor = not a.no_floor and uid.startswith("CUDA")
    units = [klebench.unit_name(t, w) for t in transports + ["baseline"]
             for w in (waits or [""])] + (["floor"] if floor else [])
    launch_s = 30e-6 if host_only else 60e-6
    per_cycle = len(units) * (len(teams) + a.batch) * launch_s
    passes = 2 if timer_dir else 1
    est = passes * (0.5 + (a.cycles + a.warmup) * per_cycle)
    print("kle-compare: interleaved: %d kle-bench run%s, %d+%d cycles of %s, teams %s%s; "
          "estimated %s" % (passes, "s" if passes > 1 else "", a.warmup, a.cycles,
                            ",".join(units), a.teams,
                            ", pipelined batches of %d" % a.batch if a.batch else "",
                            hms(est)), file=sys.stderr, flush=True)
    if est > LONG_S and not a.force:
        die("this plan would take about %s; use --quick, fewer --cycles or --force" % hms(est))
    cmd = [a.bench, "--interleave", ",".join(transports), "--cycles", str(a.cycles),
           "--warmup", str(a.warmup), "--teams", a.teams, "--batch", str(a.batch)]
    cmd += (["--waits", ",".join(waits)] if waits else []) + (["--floor"] if floor else [])
    t0 = time.time()

    def bench_run(e, what):
        res = run(cmd, e, timeout=TIMEOUT[0])
        if res.returncode:
            failed("kle-bench --interleave failed (%s)" % what, res)
        for line in res.stderr.splitlines():
            if line.startswith("kle-bench: note:"):
                print(line, file=sys.stderr, flush=True)
        print("kle-compare: %s done in %s" % (what, hms(time.time() - t0)),
              file=sys.stderr, flush=True)
        return klebench.parse_interleaved(res.stdout, "kle-compare")

    git = klebench.git_revision()
    meta = {"method": "interleaved", "machine": platform.node(),
            "device": "%d %s" % (num, uid), "driver": driver, "llvm": "22.1.8",
            "git": git, "cycles": a.cycles, "warmup_cycles": a.warmup,
            "order": "balanced (units forward, then backward, per pair of cycles)",
            "kernel_times": bool(timer_dir), "host_side_overhead_only": host_only}
    # samples_ns: per benchmark, the per-launch times (cycles x units, in the
    # order of "units"), for re-analysis.
    data = {"meta": meta, "units": units, "distributions": [], "paired": [],
            "kle_cost": [], "samples_ns": {}}

    def write():
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "kle-interleaved.json"), "w") as f:
            json.dump(data, f, indent=1)
        with open(os.path.join(a.out, "kle-interleaved.csv"), "w", newline="") as f:
            fields = ["benchmark", "measure", "transport", "reference", "median_diff_us",
                      "ci_low_us", "ci_high_us", "verdict"]
            w = csv.DictWriter(f, fieldnames=list(meta) + fields)
            w.writeheader()
            for r in data["paired"]:
                w.writerow(dict(meta, **{k: r[k] for k in fields}))

    main_run = bench_run(env, "pass 1/%d (end-to-end, host ns in the KLE path)" % passes)
    # What ran (a runtime without the wait switch runs no wait variants).
    units = next(iter(main_run.values()))["units"] if main_run else units
    data["units"] = units
    reports = {}
    for name, b in main_run.items():
        rep = klebench.interleaved_report(b, "kle-compare")
        reports[name] = (b, rep)
        data["samples_ns"][name] = b["samples"].round(1).tolist()
        for u, d in rep["dist"].items():
            data["distributions"].append(dict(d, benchmark=name, transport=u))
        for p in rep["paired"]:
            data["paired"].append(dict(p, benchmark=name, measure="end_to_end"))
    save_or_die(write, "the results into --out %s" % a.out, "kle-compare", data)
    timed = {}
    if timer_dir:
        et = dict(env, LD_LIBRARY_PATH=timer_dir + os.pathsep + env.get("LD_LIBRARY_PATH", ""))
        timed = bench_run(et, "pass 2/2 (kernel-only times and device spans)")

    def ci(m, lo, hi, fmt="%.2f"):
        return (fmt + " [" + fmt + ".." + fmt + "]") % (m, lo, hi)

    # The KLE cost table: one row per transport and benchmark.
    title = "KLE cost per transport, interleaved in one process: device %d (%s), %s" % (
        num, uid, driver)
    print(title)
    if host_only:
        print("HOST-SIDE OVERHEAD ONLY: no kernel ran on a GPU; these figures are not GPU "
              "launch latency.")
    print("%d cycles after %d warm-up cycles; order %s %s ...; differences are medians of "
          "paired differences per cycle, 95%% CI from a block bootstrap over consecutive "
          "cycles" % (a.cycles, a.warmup, "".join(chr(65 + i) for i in range(len(units))),
                      "".join(chr(65 + i) for i in reversed(range(len(units))))))
    # x floor: the median per-cycle ratio to the floor (the same work through
    # the CUDA driver directly), with its CI; cpu: the process's CPU time per
    # launch (median) and CPU time over wall time (1 = one core busy).
    print("\n%-34s %-14s %6s %10s %10s %10s %-22s %8s %8s" % (
        "benchmark", "transport", "n", "median(us)", "p90(us)", "p99(us)",
        "x floor [95% CI]", "cpu(us)", "cpu/wall"))
    for name, (b, rep) in reports.items():
        for u in units:
            d = rep["dist"][u]
            xf = d.get("x_floor")
            print("%-34s %-14s %6d %10.2f %10.2f %10.2f %-22s %8s %8s" % (
                name, u, d["n"], d["median_us"], d["p90_us"], d["p99_us"],
                ci(*xf) if xf else ("1 (floor)" if u == "floor" else "-"),
                "%.2f" % d["cpu_us"] if "cpu_us" in d else "-",
                "%.2f" % d["cpu_per_wall"] if "cpu_per_wall" in d else "-"))

    print("\nKLE cost table (us unless marked; '-': not measured here)")
    print("%-34s %-14s %-24s %-12s %-26s %-26s %-26s %s" % (
        "benchmark", "transport", "steady KLE host ns [CI]", "one-time ns",
        "device span - baseline", "kernel-only - baseline", "end-to-end - copy", "verdict"))
    for name, (b, rep) in reports.items():
        pairs = {(p["transport"], p["reference"]): p for p in rep["paired"]}
        tb = timed.get(name)
        for i, u in enumerate(units):
            what, wait = klebench.unit_parts(u)
            if what in ("baseline", "floor"):
                continue
            base_u, copy_u = (klebench.unit_name(r, wait) for r in ("baseline", "copy"))
            m, lo, hi = klebench.paired_median_ci(b["path_ns"][:, i])
            row = {"benchmark": name, "transport": u, "steady_path_ns": m,
                   "steady_path_ns_ci": [lo, hi],
                   "one_time_path_ns": rep["one_time_path_ns"][u]}
            cells = [ci(m, lo, hi, "%.0f"), "%.0f" % row["one_time_path_ns"]]
            for key, label in (("span_us", "device_span"), ("kernel_us", "kernel_only")):
                col = tb.get(key) if tb else None
                if col is None:
                    cells.append("-")
                    continue
                base = units.index(base_u)
                dm, dlo, dhi = klebench.paired_median_ci(col[:, i] - col[:, base])
                row[label + "_minus_baseline_us"] = [dm, dlo, dhi]
                cells.append(ci(dm, dlo, dhi))
                data["paired"].append({"benchmark": name, "measure": label,
                                       "transport": u, "reference": base_u,
                                       "median_diff_us": dm, "ci_low_us": dlo,
                                       "ci_high_us": dhi,
                                       "verdict": klebench.verdict(dlo, dhi, base_u)})
            p = pairs.get((u, copy_u))
            if p and u != copy_u:
                cells.append(ci(p["median_diff_us"], p["ci_low_us"], p["ci_high_us"]))
                verdict = p["verdict"]
                row["end_to_end_minus_copy_us"] = [p["median_diff_us"], p["ci_low_us"],
                                                   p["ci_high_us"]]
            else:
                cells.append("-" if u != copy_u else "(reference)")
                verdict = "-"
            row["verdict"] = verdict
            data["kle_cost"].append(row)
            print("%-34s %-14s %-24s %-12s %-26s %-26s %-26s %s" % tuple(
                [name, u] + cells + [verdict]))
    print("\npaired end-to-end differences (transport - reference, us)")
    for name, (b, rep) in reports.items():
        for p in rep["paired"]:
            print("%-34s %-14s - %-14s %s  %s" % (
                name, p["transport"], p["reference"],
                ci(p["median_diff_us"], p["ci_low_us"], p["ci_high_us"]), p["verdict"]))
    save_or_die(write, "the results into --out %s" % a.out, "kle-compare", data)
    print("\nwrote %s/kle-interleaved.json and kle-interleaved.csv" % a.out)


def shutil_which(name):
    import shutil
    return shutil.which(name)


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        die("kle-bench took longer than %d s (--timeout): %s"
            % (TIMEOUT[0], " ".join(map(str, e.cmd))))
