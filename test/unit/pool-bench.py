#!/usr/bin/env python3
"""The slot pool's lock-free core against a mutex and free list.

Runs kle-pool-bench (test/unit/KLESlotPoolBench.cpp) at 1, 4 and 16 threads
sharing one pool, each thread cycling take() then recycle():

  instructions  callgrind, Ir per cycle = (Ir(N2) - Ir(N1)) / ((N2 - N1) *
                threads), so start-up cancels; all threads together.
  time          --rounds rounds; in each, one process runs both pools for one
                thread count back to back in random order (Google Benchmark,
                --benchmark_enable_random_interleaving), so the pair shares the
                machine's load. Ratio mutex/lock-free of real time per cycle:
                geometric mean of the paired ratios, 95% CI (t on log ratios).

Usage: pool-bench.py BENCH [--rounds N] [--min-time S]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from scipy import stats

THREADS = (1, 4, 16)
KINDS = ("lockfree", "mutex")


def instructions(bench, kind, threads, cycles):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind",
                        "--callgrind-out-file=" + out, bench,
                        f"--fixed={kind},{threads},{cycles}"],
                       check=True, capture_output=True)
        with open(out) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        return int(m.group(1))


def ci(logs):
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    h = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - h), math.exp(mean + h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--min-time", default="0.05")
    ap.add_argument("--cycles", type=int, default=20000)
    a = ap.parse_args()

    print("instructions per take+recycle cycle (callgrind; all threads):")
    print(f"{'threads':>7} {'lockfree':>9} {'mutex':>9} {'mutex/lockfree':>15}")
    for t in THREADS:
        ir = {}
        for k in KINDS:
            n1, n2 = a.cycles, 2 * a.cycles
            ir[k] = (instructions(a.bench, k, t, n2) -
                     instructions(a.bench, k, t, n1)) / ((n2 - n1) * t)
        print(f"{t:>7} {ir['lockfree']:>9.1f} {ir['mutex']:>9.1f} "
              f"{ir['mutex'] / ir['lockfree']:>15.2f}")
        sys.stdout.flush()

    print(f"\nreal time per cycle, {a.rounds} paired rounds "
          f"(min time {a.min_time} s per run):")
    print(f"{'threads':>7} {'lockfree ns':>12} {'mutex ns':>9} "
          f"{'mutex/lockfree [95% CI]':>26}")
    for t in THREADS:
        logs, ns = [], {k: [] for k in KINDS}
        for _ in range(a.rounds):
            out = subprocess.run(
                [a.bench, f"--benchmark_filter=/threads:{t}$",
                 "--benchmark_enable_random_interleaving=true",
                 f"--benchmark_min_time={a.min_time}",
                 "--benchmark_format=json"],
                check=True, capture_output=True, text=True).stdout
            r = {b["name"].split("/")[0]: b["real_time"]
                 for b in json.loads(out)["benchmarks"]}
            ns["lockfree"].append(r["LockFree"])
            ns["mutex"].append(r["Mutex"])
            logs.append(math.log(r["Mutex"] / r["LockFree"]))
        g, lo, hi = ci(logs)
        med = {k: sorted(v)[len(v) // 2] for k, v in ns.items()}
        print(f"{t:>7} {med['lockfree']:>12.1f} {med['mutex']:>9.1f} "
              f"{g:>10.2f} [{lo:.2f}, {hi:.2f}]")
        sys.stdout.flush()
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
