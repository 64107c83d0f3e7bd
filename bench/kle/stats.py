"""The statistics of every klebench.py command. Every CI is
scipy.stats.bootstrap's 95% percentile interval with a fixed seed; paired
ones resample blocks of consecutive cycles (a process's cycles are not
independent)."""
import math

from kle.common import require_scipy as _np

def block_length(cycles):
    """About cycles^(1/3), even (an ABCD DCBA pair stays together), >= 2."""
    b = int(round(cycles ** (1.0 / 3)))
    return max(2, b + (b % 2))

def distribution(values_us):
    """{"n", "median_us", "p90_us", "p99_us"} of a 1-D sample (us)."""
    np, _ = _np()
    v = np.asarray(values_us, dtype=float)
    return {"n": int(v.size), "median_us": float(np.median(v)),
            "p90_us": float(np.percentile(v, 90)), "p99_us": float(np.percentile(v, 99))}

def _bootstrap(data, stat, seed, **kw):
    """(low, high) of scipy.stats.bootstrap's 95% percentile interval."""
    np, st = _np()
    res = st.bootstrap(data, stat, vectorized=False, n_resamples=2000, confidence_level=0.95,
                       method="percentile", random_state=np.random.default_rng(seed), **kw)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)

def paired_median_ci(diffs):
    """(median, low, high) of paired differences (or ratios), one per cycle
    in order; NaN bounds with fewer than two block starts."""
    np, _ = _np()
    d = np.asarray(diffs, dtype=float)
    n = d.size
    b = min(block_length(n), n)
    starts = n - b + 1
    if starts < 2:
        return float(np.median(d)), float("nan"), float("nan")
    windows = np.lib.stride_tricks.sliding_window_view(d, b)  # starts x b
    k = int(math.ceil(n / b))  # k resampled block starts: about n cycles
    return (float(np.median(d)),) + _bootstrap(
        (np.arange(starts),), lambda idx: np.median(windows[idx[:k].astype(int)].ravel()), 12345)

def ratio_ci(a, b):
    """(ratio of medians a/b, low, high), a and b resampled independently."""
    np, _ = _np()
    ratio = float(np.median(a) / np.median(b))
    if min(len(a), len(b)) < 2:
        return ratio, ratio, ratio  # nothing to resample
    return (ratio,) + _bootstrap((np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
                                 lambda x, y: np.median(x) / np.median(y), 19, paired=False)

def verdict(low, high, reference="copy"):
    """"faster than <reference>", "slower", or "not resolved" (the CI holds 0)."""
    if high < 0:
        return "faster than " + reference
    return "slower" if low > 0 else "not resolved"

def paired(diffs, reference):
    """paired_median_ci() of diffs against reference as {"reference",
    "median_diff_us", "ci_low_us", "ci_high_us", "verdict"}."""
    m, lo, hi = paired_median_ci(diffs)
    return {"reference": reference, "median_diff_us": m, "ci_low_us": lo, "ci_high_us": hi,
            "verdict": verdict(lo, hi, reference)}

def median_ci(p):
    """[median, low, high] of a paired() entry."""
    return [p["median_diff_us"], p["ci_low_us"], p["ci_high_us"]]

def unit_parts(unit):
    """"copy/poll" -> ("copy", "poll"), "floor" -> ("floor", "")."""
    what, _, wait = unit.partition("/")
    return what, wait

def unit_name(what, wait):
    return what + "/" + wait if wait else what

def interleaved_report(bench):
    """One parse_interleaved() benchmark's {"dist": {unit: distribution, with
    "x_floor" [median, low, high], "cpu_us", "cpu_per_wall"}, "paired": [each
    transport against copy and the baseline under its wait, then each unit
    against itself under "block" (else the first wait)], "one_time_path_ns"}."""
    np, _ = _np()
    units, ns = bench["units"], bench["samples"]
    col = {u: ns[:, i] / 1e3 for i, u in enumerate(units)}
    rep = {"dist": {u: distribution(col[u]) for u in units}, "paired": [],
           "one_time_path_ns": {}}

    def pair(u, ref):
        if ref != u and ref in col:
            rep["paired"].append(dict(paired(col[u] - col[ref], ref), transport=u))

    kle_units = [u for u in units if unit_parts(u)[0] not in ("baseline", "floor")]
    for ref in ("copy", "baseline"):
        for u in kle_units:
            pair(u, unit_name(ref, unit_parts(u)[1]))
    waits = list(dict.fromkeys(w for w in (unit_parts(u)[1] for u in units) if w))
    if len(waits) > 1:
        ref_wait = "block" if "block" in waits else waits[0]
        for u in units:
            if unit_parts(u)[1]:
                pair(u, unit_name(unit_parts(u)[0], ref_wait))
    for i, u in enumerate(units):
        d = rep["dist"][u]
        if "floor" in col and u != "floor":
            d["x_floor"] = list(paired_median_ci(col[u] / col["floor"]))
        if "cpu_ns" in bench:
            cpu = bench["cpu_ns"][:, i]
            d["cpu_us"] = float(np.median(cpu)) / 1e3
            d["cpu_per_wall"] = float(cpu.sum() / ns[:, i].sum())
        if u in kle_units:
            steady = float(np.median(bench["path_ns"][:, i]))
            rep["one_time_path_ns"][u] = max(
                0.0, bench["warmup_path_ns"][u] - steady * bench["warmup_launches"][u])
    return rep
