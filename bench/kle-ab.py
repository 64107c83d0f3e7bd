#!/usr/bin/env python3
"""A/B of two kle-bench binaries built against different DeviceRTLs (issue 19).

  kle-ab.py --bench new=PATH --bench today=PATH [--transports T,...]
            [--filter REGEX] [--rounds N] [--min-time S] [--repetitions N]
            [--kernel-times DIR] [--timeout S] [--json FILE]

Runs each binary under each transport, interleaved: in every round each
transport runs both binaries back to back, the binary that goes first
alternating from round to round, so drift hits both alike. Each run is one
kle-bench process (--benchmark_repetitions samples per benchmark). With
--kernel-times DIR (bench/kernel-timer's libcuda.so) the Kernel*/
ReductionAfterWork benchmarks report kernel-only GPU times.

Prints, per benchmark and transport, each binary's median (us) and the ratio
of the first binary's median to the second's with a 95% bootstrap confidence
interval (samples of all rounds pooled; scipy.stats.bootstrap), then, per
binary, zerocopy's median over resident's (the issue's target: at most
1.03). --json writes the raw samples. Exit status 1 if a run fails (its
output is shown), 2 on bad usage.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import klebench
from klebench import TRANSPORTS, list_devices

PROG = "kle-ab"


def die(msg, code=2):
    klebench.die(PROG, msg, code)


def ci_ratio(a, b, resamples=2000, seed=19):
    """Ratio of medians a/b and its 95% bootstrap interval (the two samples
    resampled independently; scipy.stats.bootstrap, percentile method,
    fixed seed)."""
    ratio = statistics.median(a) / statistics.median(b)
    if min(len(a), len(b)) < 2:
        return ratio, ratio, ratio  # nothing to resample
    np, st = klebench.require_scipy(PROG)
    res = st.bootstrap((np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
                       lambda x, y: np.median(x) / np.median(y), paired=False,
                       vectorized=False, n_resamples=resamples, confidence_level=0.95,
                       method="percentile", random_state=np.random.default_rng(seed))
    return ratio, float(res.confidence_interval.low), float(res.confidence_interval.high)


def run_once(path, transport, a, env):
    e = dict(env, LIBOMPTARGET_KLE_TRANSPORT=transport)
    if a.kernel_times:
        e["LD_LIBRARY_PATH"] = a.kernel_times + os.pathsep + e.get("LD_LIBRARY_PATH", "")
    cmd = [path, "--benchmark_filter=" + a.filter, "--benchmark_min_time=" + a.min_time,
           "--benchmark_repetitions=%d" % a.repetitions, "--benchmark_format=json"]
    try:
        r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        die("%s (%s) timed out after %d s" % (path, transport, a.timeout), 1)
    if r.returncode:
        sys.stderr.write(r.stderr[-2000:])
        die("%s under %s failed (exit status %d)" % (path, transport, r.returncode), 1)
    try:
        data = json.loads(r.stdout)
    except ValueError:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
        die("%s under %s printed no JSON" % (path, transport), 1)
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            die("%s under %s: %s: %s" % (path, transport, b["name"], b.get("error_message")), 1)
        t = b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b["time_unit"]]
        out.setdefault(b["run_name"], []).append(t)
    if not out:
        die("--filter %r selects no benchmark of %s (the Kernel* and ReductionAfterWork ones "
            "need --kernel-times)" % (a.filter, path), 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="comma-separated subset of " + ",".join(TRANSPORTS))
    ap.add_argument("--filter", default="^(ReductionAfterWork|KernelReduction/teams:(1|132|16384)/)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--min-time", default="0.05")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--kernel-times", default="")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if len(a.bench) != 2 or any("=" not in b for b in a.bench):
        die("want exactly two --bench NAME=PATH (the new DeviceRTL's first)")
    benches = [tuple(b.split("=", 1)) for b in a.bench]
    for name, path in benches:
        if not os.access(path, os.X_OK):
            die("--bench %s=%s is not an executable" % (name, path))
    transports = [t for t in a.transports.split(",") if t]
    bad = [t for t in transports if t not in TRANSPORTS]
    if bad:
        die("--transports: unknown %s (valid: %s)" % (", ".join(bad), ", ".join(TRANSPORTS)))
    if not transports or a.rounds < 1 or a.repetitions < 1 or a.timeout < 1:
        die("want at least one transport, round, repetition and second of --timeout")
    try:
        if float(a.min_time) <= 0:
            raise ValueError
    except ValueError:
        die("--min-time wants a positive number of seconds, not %r" % a.min_time)
    if a.kernel_times and not os.path.exists(os.path.join(a.kernel_times, "libcuda.so")):
        die("no libcuda.so (bench/kernel-timer) in --kernel-times %s" % a.kernel_times)

    env = dict(os.environ)
    if not env.get("KLE_BENCH_DEVICE"):
        # The first CUDA device (kle-bench numbers host devices first).
        cuda = [n for n, uid in list_devices(benches[0][1], env, PROG, timeout=a.timeout)
                if uid.startswith("CUDA-")]
        if not cuda:
            die("%s --list-devices shows no CUDA device" % benches[0][1], 1)
        env["KLE_BENCH_DEVICE"] = str(cuda[0])
    samples = {}  # (bench name, transport, benchmark) -> [us]
    for rnd in range(a.rounds):
        for t in transports:
            order = benches if rnd % 2 == 0 else benches[::-1]
            for name, path in order:
                for k, v in run_once(path, t, a, env).items():
                    samples.setdefault((name, t, k), []).extend(v)
        print("kle-ab: round %d of %d done" % (rnd + 1, a.rounds), file=sys.stderr)

    (na, _), (nb, _) = benches
    names = sorted({k for (_, _, k) in samples}, key=lambda s: (s.split("/")[0], [
        int(p.split(":")[1]) if ":" in p and p.split(":")[1].isdigit() else 0
        for p in s.split("/")[1:]]))
    unit = "kernel-only" if a.kernel_times else "per launch"
    print("DeviceRTL A/B (%s, us, median of %d rounds x %d repetitions): %s / %s"
          % (unit, a.rounds, a.repetitions, na, nb))
    print("%-56s %-9s %10s %10s %8s %18s" % ("benchmark", "transport", na, nb, "ratio", "95% CI"))
    for k in names:
        for t in transports:
            x, y = samples.get((na, t, k)), samples.get((nb, t, k))
            if not x or not y:
                continue
            r, lo, hi = ci_ratio(x, y)
            print("%-56s %-9s %10.2f %10.2f %8.3f   [%.3f, %.3f]"
                  % (k, t, statistics.median(x), statistics.median(y), r, lo, hi))
    if "zerocopy" in transports and "resident" in transports:
        print("zerocopy / resident (target: at most 1.03 with >= 2 us of team work)")
        for k in names:
            for n in (na, nb):
                z, res = samples.get((n, "zerocopy", k)), samples.get((n, "resident", k))
                if z and res:
                    r, lo, hi = ci_ratio(z, res)
                    print("%-56s %-9s %8.3f   [%.3f, %.3f]" % (k, n, r, lo, hi))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benches": dict(benches), "transports": transports, "unit": "us",
                       "samples": [{"bench": n, "transport": t, "benchmark": k, "us": v}
                                   for (n, t, k), v in sorted(samples.items())]}, f, indent=1)


if __name__ == "__main__":
    main()
