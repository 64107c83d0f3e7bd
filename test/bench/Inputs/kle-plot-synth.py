#!/usr/bin/env python3
"""Writes a synthetic kle-compare.json for test/bench/kle-plot.test (no GPU or
stand-in needed): the full kle-bench set (SyncReduction and SyncBaseline at 1
to 16384 teams, SyncReductionThreads at 1/4/16 threads, PipelinedReduction and
PipelinedBaseline), and with --launch-latency LaunchLatency/teams:1 and
/teams:1024 with N per-launch samples per transport. Deterministic (seeded).

Usage: kle-plot-synth.py [--launch-latency N] [--gpu] > kle-compare.json"""
import json
import random
import statistics
import sys

rng = random.Random(5)
TRANSPORTS = ["zerocopy", "staged", "copy"]
FACTOR = {"zerocopy": 1.05, "staged": 1.25, "copy": 1.4, "baseline": 1.0}


def row(name, t, xs):
    xs = sorted(xs)
    med = statistics.median(xs)
    return {"benchmark": name, "transport": t, "runs": len(xs), "median_s": med,
            "p90_s": xs[int(0.9 * (len(xs) - 1))], "p99_s": xs[int(0.99 * (len(xs) - 1))],
            "ci95_lo_s": xs[0], "ci95_hi_s": xs[-1], "vs_baseline": None, "vs_copy": None,
            "samples_s": xs}


def per_run(us, t, n=5):
    return [us * FACTOR[t] * 1e-6 * rng.uniform(0.93, 1.08) for _ in range(n)]


def per_launch(us, t, n):
    # Log-normal body with a rare slow tail (a preempted launch).
    return [us * FACTOR[t] * 1e-6 * rng.lognormvariate(0, 0.08) *
            (rng.uniform(5, 40) if rng.random() < 0.01 else 1.0) for _ in range(n)]


def main():
    args = sys.argv[1:]
    ll = int(args[args.index("--launch-latency") + 1]) if "--launch-latency" in args else 0
    gpu = "--gpu" in args
    rows = []
    for teams, us in [(1, 9.0), (8, 9.2), (132, 11.0), (1024, 18.0), (16384, 95.0)]:
        for t in TRANSPORTS:
            rows.append(row("SyncReduction/teams:%d/real_time" % teams, t, per_run(us, t)))
        rows.append(row("SyncBaseline/teams:%d/real_time" % teams, "baseline",
                        per_run(us * 0.9, "baseline", 15)))
    for thr, us in [(1, 9.0), (4, 14.0), (16, 41.0)]:
        for t in TRANSPORTS:
            rows.append(row("SyncReductionThreads/teams:1/real_time/threads:%d" % thr, t,
                            per_run(us, t)))
    for t in TRANSPORTS:
        rows.append(row("PipelinedReduction/launches:256/real_time", t, per_run(3.1, t)))
    rows.append(row("PipelinedBaseline/launches:256/real_time", "baseline",
                    per_run(2.6, "baseline", 15)))
    for teams, us in ([(1, 7.5), (1024, 16.0)] if ll else []):
        for t in TRANSPORTS + ["baseline"]:
            rows.append(row("LaunchLatency/teams:%d" % teams, t, per_launch(us, t, ll)))
    med = {(r["benchmark"], r["transport"]): r["median_s"] for r in rows}
    for r in rows:
        if r["transport"] == "baseline":
            continue
        name = r["benchmark"]
        base = med.get((name.replace("SyncReductionThreads", "-")
                            .replace("SyncReduction", "SyncBaseline")
                            .replace("PipelinedReduction", "PipelinedBaseline"), "baseline"))
        base = base or med.get((name, "baseline"))
        copy = med.get((name, "copy"))
        r["vs_baseline"] = r["median_s"] / base if base else None
        r["vs_copy"] = r["median_s"] / copy if copy and r["transport"] != "copy" else None
    meta = {"machine": "synth", "cpu": "none", "date": "2025-01-01 00:00",
            "device": "0 CUDA-00000000000000000000000000000000" if gpu else "1 x86_64-unknown-linux-gnu",
            "driver": "CUDA driver 580.00" if gpu else "host device", "llvm": "22.1.8",
            "git": "0123abc", "rounds": 5, "host_side_overhead_only": not gpu}
    json.dump({"meta": meta, "results": rows, "driver_calls_per_launch": {}}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
