"""Shared helpers for kle-offload's benchmark scripts (kle-compare.py,
kle-instructions.py, ...): talking to bench/kle-bench, checking --out before
any work, and the statistics of the interleaved method (numpy, scipy:
require_scipy). Imported from the scripts' own directory, which Python puts
first on the module path (the GPU bundle carries it beside them)."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

# The KLE transports, in the order every tool runs and shows them: the one
# place the Python tooling lists them (kle-compare.py, kle-plot.py,
# kle-instructions.py, transport-table.py, and run-gpu.sh's KLE stats loop,
# read them from here). A new transport is one more name here.
TRANSPORTS = ("zerocopy", "resident", "staged", "copy")

# kle-bench's own limit for --latency-samples (bench/kle-bench.cpp).
MAX_LATENCY_SAMPLES = 10000000
# The report the CUDA driver stand-in adds to every run's stderr at context
# release and exit (live and peak allocations, launches, call counts): never
# kle-bench's complaint. (Its VIOLATION, FAILED and injected-failure lines
# are kept: they can be the reason a run failed.)
STANDIN_REPORT = re.compile(r"^kle-standin: (live|peak|launches=|calls )")


# The runtime's KLE stats line (LIBOMPTARGET_KLE_STATS=1, at deinit):
# "omptarget KLE stats: device N: launches copy=.. staged=.. zerocopy=..
# resident=..; fallbacks R=n ...; key=value ...[; host_ns_per_launch_in_kle_path=n]".
STATS_LINE = re.compile(r"KLE stats: device (?P<device>\d+): launches (?P<launches>[^;]*); "
                        r"fallbacks (?P<fallbacks>[^;]*);(?P<rest>.*)$")


def _pairs(text):
    out = {}
    for item in text.replace(";", " ").split():
        k, eq, v = item.partition("=")
        if eq and v.isdigit():
            out[k] = int(v)
    return out


def parse_stats(text):
    """Every KLE stats line in text, as {"device": n, "launches": {transport:
    n}, "fallbacks": {reason: n}, "fields": {key: n}} (fields: slabs, ...,
    host_ns_per_launch_in_kle_path when timed); any transport the runtime
    names is kept, so a new one needs no change here."""
    found = []
    for line in (text or "").splitlines():
        m = STATS_LINE.search(line)
        if m:
            found.append({"device": int(m.group("device")),
                          "launches": _pairs(m.group("launches")),
                          "fallbacks": _pairs(m.group("fallbacks")),
                          "fields": _pairs(m.group("rest"))})
    return found


def stats_summary(stats):
    """One line summing parse_stats() entries: "copy=.. staged=.. zerocopy=..
    resident=..; fallbacks R=n ..." (" none" when no fallback), or None."""
    if not stats:
        return None
    launches, fallbacks = {}, {}
    for st in stats:
        for k, v in st["launches"].items():
            launches[k] = launches.get(k, 0) + v
        for k, v in st["fallbacks"].items():
            fallbacks[k] = fallbacks.get(k, 0) + v
    names = [t for t in ("copy", "staged", "zerocopy", "resident") if t in launches] + \
        sorted(t for t in launches if t not in ("copy", "staged", "zerocopy", "resident"))
    fb = " ".join("%s=%d" % (k, v) for k, v in sorted(fallbacks.items()) if v)
    return "%s; fallbacks %s" % (" ".join("%s=%d" % (t, launches[t]) for t in names),
                                 fb or "none")


def die(prog, msg, code=1):
    """The benchmark scripts' error exit: one line "<prog>: error: <msg>" on
    stderr, exit status code."""
    print("%s: error: %s" % (prog, msg), file=sys.stderr)
    sys.exit(code)


def git_revision():
    """The source revision to record with results: $KLE_GIT_REV (the GPU
    bundle sets it), else `git rev-parse --short HEAD` of the checkout this
    module is in ("" outside one, "unknown" without git)."""
    rev = os.environ.get("KLE_GIT_REV", "")
    if rev:
        return rev
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        return subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def run(cmd, env, **kw):
    """Run a command with env, capturing text stdout and stderr."""
    return subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)


def run_or_timeout(cmd, env, timeout):
    """Runs cmd with env for at most timeout seconds, capturing its text
    output. Returns (exit status, or None when it ran over and was killed;
    stdout and stderr together, on a timeout what it printed until then)."""
    try:
        r = run(cmd, env, timeout=timeout)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def list_devices(bench, env, prog, cmd=None, timeout=120):
    """[(device number, uid)] of every offload device a program lists, one
    "N UID" line each: `bench --list-devices` (kle-bench), or the command
    cmd (e.g. the examples' list_devices). If it cannot run, runs over
    timeout seconds or fails, exits with one line "<prog>: error: ..."."""
    cmd = cmd or [bench, "--list-devices"]
    what = " ".join(cmd)
    try:
        out = run(cmd, env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        die(prog, "%s did not run: %s" % (what, e))
    if out.returncode:
        die(prog, "%s failed (%s): %s"
            % (what, status(out.returncode), complaint(out.stderr, 300)))
    devs = []
    for line in out.stdout.splitlines():
        num, _, uid = line.partition(" ")
        if num.isdigit():
            devs.append((int(num), uid.strip()))
    return devs


def status(rc):
    """A process's exit status in words."""
    return "killed by signal %d" % -rc if rc < 0 else "exit status %d" % rc


def complaint(stderr, limit=400):
    """What a failed kle-bench run said, on one line: its stderr without the
    CUDA driver stand-in's report lines ("kle-standin: live ...", "peak",
    "launches=", "calls"), which would otherwise fill the tail: the last
    lines that fit in about limit characters, joined with " | "."""
    lines = [l.strip() for l in (stderr or "").splitlines()]
    lines = [l for l in lines if l and not STANDIN_REPORT.match(l)]
    if not lines:
        return "no error message (only the stand-in's report)" if (stderr or "").strip() \
            else "no error message"
    shown = []
    for l in reversed(lines):
        if shown and sum(len(x) + 3 for x in shown) + len(l) > limit:
            break
        shown.insert(0, l)
    text = " | ".join(shown)
    return text if len(text) <= limit else "..." + text[-limit:]


def _blocking_file(d):
    """The nearest existing ancestor of directory d (or d) if it is not a
    directory (so d cannot be created), else None."""
    while not os.path.exists(d):
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None if os.path.isdir(d) else d


def check_out_dir(path, prog):
    """Makes sure results can be written into directory path (creating it)
    before any work is done; otherwise exits with one line
    "<prog>: error: ...". Returns the absolute path."""
    if not path:
        die(prog, "--out is empty: name the directory the results go to")
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        die(prog, "--out %s exists and is not a directory (--out names the "
                  "directory the results go to)" % path)
    block = _blocking_file(path)
    if block:
        die(prog, "cannot create --out %s: %s is not a directory"
                  % (path, block))
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        die(prog, "cannot write into --out %s: %s"
                  % (path, e.strerror or e))
    return path


def check_out_file(path, prog):
    """Makes sure file path can be written (creating its directory) before
    any work is done, without touching an existing file; otherwise exits
    with one line "<prog>: error: ...". Returns the absolute path."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        die(prog, "--out %s is a directory; --out names the JSON file to "
                  "write (e.g. %s)" % (path, os.path.join(path, prog + ".json")))
    d = os.path.dirname(path)
    block = _blocking_file(d)
    if block:
        die(prog, "cannot write --out %s: %s is not a directory"
                  % (path, block))
    try:
        os.makedirs(d, exist_ok=True)
        if os.path.exists(path):
            with open(path, "a"):
                pass
        else:
            with tempfile.TemporaryFile(dir=d):
                pass
    except OSError as e:
        die(prog, "cannot write --out %s: %s" % (path, e.strerror or e))
    return path


def save_or_die(write, what, prog, data):
    """Calls write(); if it fails (the --out location changed during the
    run), saves data as JSON in a temporary file so that no results are lost,
    and exits with one line "<prog>: error: ..." naming both."""
    try:
        write()
    except OSError as e:
        try:
            fd, keep = tempfile.mkstemp(prefix=prog + ".", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            where = "; the results are in %s" % keep
        except OSError:
            where = ""
        die(prog, "cannot write %s: %s%s" % (what, e.strerror or e, where))


# ---------------------------------------------------------------------------
# Interleaved comparison (kle-bench --interleave): statistics.
#
# numpy and scipy (scipy.stats.bootstrap) come from Debian's python3-numpy
# and python3-scipy, which live on /usr/bin/python3's path; a pyenv or venv
# python without them re-executes the script there (require_scipy).

SYSTEM_PYTHON = "/usr/bin/python3"
_REEXEC_GUARD = "KLE_BENCH_REEXEC_FROM"


def require_scipy(prog):
    """Returns (numpy, scipy.stats). If this interpreter cannot import them,
    re-executes the running script once under /usr/bin/python3 (Debian's
    python3-numpy, python3-scipy); if that is not possible, exits with one
    line "<prog>: error: ..." saying what to install."""
    try:
        import numpy
        import scipy.stats
        return numpy, scipy.stats
    except ImportError as e:
        err = e
    here = sys.executable or "python3"
    if (not os.environ.get(_REEXEC_GUARD) and os.access(SYSTEM_PYTHON, os.X_OK)
            and os.path.realpath(SYSTEM_PYTHON) != os.path.realpath(here)):
        env = dict(os.environ, **{_REEXEC_GUARD: here})
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])]
                      + sys.argv[1:], env)
        except OSError:
            pass
    die(prog, "numpy and scipy are not importable by %s (%s); install "
             "Debian's python3-numpy and python3-scipy (apt-get install "
             "python3-numpy python3-scipy) or 'pip install numpy scipy'"
             % (here, err))


def parse_interleaved(text, prog):
    """The JSON that kle-bench --interleave printed, as {benchmark: {"units":
    [...], "samples": numpy array (cycles x units) of ns per launch,
    "path_ns": the same for the host ns in the KLE path, "kernel_us" and
    "span_us" (with the kernel timer) the same, "warmup_path_ns":
    {unit: ns}, "warmup_launches": {unit: n}}}; exits with one line
    "<prog>: error: ..." if it is not that JSON or a cycle lacks a unit."""
    np, _ = require_scipy(prog)
    try:
        doc = json.loads(text)
        units = list(doc["units"])
        fields = list(doc["fields"])
        if fields[:4] != ["cycle", "unit", "ns", "path_ns"]:
            raise ValueError("unexpected fields %s" % fields)
        out = {}
        for name, b in doc["benchmarks"].items():
            s = np.array(b["samples"], dtype=float).reshape(-1, len(fields))
            cycles = int(s[:, 0].max()) + 1 if len(s) else 0
            ns = np.full((cycles, len(units)), np.nan)
            path = np.full((cycles, len(units)), np.nan)
            idx = (s[:, 0].astype(int), s[:, 1].astype(int))
            ns[idx] = s[:, 2]
            path[idx] = s[:, 3]
            if cycles < 2 or np.isnan(ns).any():
                raise ValueError("benchmark %s: %d cycles, some without every unit"
                                 % (name, cycles))
            extra = {}
            for j, f in enumerate(fields[4:], start=4):
                col = np.full((cycles, len(units)), np.nan)
                col[idx] = s[:, j]
                extra[f] = col
            out[name] = dict(extra, units=units, samples=ns, path_ns=path, **{
                "launches_per_sample": int(b["launches_per_sample"]),
                "warmup_path_ns": dict(zip(units, b["warmup_path_ns"])),
                "warmup_launches": dict(zip(units, b["warmup_launches"]))})
        return out
    except (ValueError, KeyError, TypeError, IndexError) as e:
        die(prog, "kle-bench --interleave printed no valid sample JSON (%s): %s"
                  % (e, (text or "")[:200].replace("\n", " ")))


def block_length(cycles):
    """Bootstrap block length in cycles: about cycles^(1/3), even (an ABCD
    DCBA pair of cycles stays together), at least 2."""
    b = int(round(cycles ** (1.0 / 3)))
    return max(2, b + (b % 2))


def distribution(values_us):
    """{"n", "median_us", "p90_us", "p99_us"} of a 1-D sample (us)."""
    np, _ = require_scipy("klebench")
    v = np.asarray(values_us, dtype=float)
    return {"n": int(v.size), "median_us": float(np.median(v)),
            "p90_us": float(np.percentile(v, 90)), "p99_us": float(np.percentile(v, 99))}


def paired_median_ci(diffs, block=None, resamples=2000, seed=12345):
    """Median of paired differences, one per cycle (cycle order kept), with
    a 95% CI from a moving-block bootstrap over consecutive cycles
    (scipy.stats.bootstrap, percentile method, fixed seed): launches of one
    process are not independent, so whole runs of block cycles are resampled.
    Returns (median, ci_low, ci_high) in the units of diffs; the CI is NaN
    (so the verdict is "not resolved") when there are fewer than two block
    starts to resample."""
    np, st = require_scipy("klebench")
    d = np.asarray(diffs, dtype=float)
    n = d.size
    b = block or block_length(n)
    b = min(b, n)
    starts = n - b + 1
    if starts < 2:
        return float(np.median(d)), float("nan"), float("nan")
    windows = np.lib.stride_tricks.sliding_window_view(d, b)  # starts x b
    k = int(math.ceil(n / b))

    def stat(idx):
        # idx: resampled block starts (n of them; the first k are used, so a
        # resample has k blocks, about n cycles).
        return np.median(windows[idx[:k].astype(int)].ravel())

    res = st.bootstrap((np.arange(starts),), stat, vectorized=False,
                       n_resamples=resamples, confidence_level=0.95,
                       method="percentile", random_state=np.random.default_rng(seed))
    return float(np.median(d)), float(res.confidence_interval.low), \
        float(res.confidence_interval.high)


def verdict(low, high, reference="copy"):
    """"faster than <reference>", "slower", or "not resolved" (the CI holds 0)."""
    if high < 0:
        return "faster than " + reference
    if low > 0:
        return "slower"
    return "not resolved"


def unit_parts(unit):
    """(what, wait) of an interleaved unit name: "resident" -> ("resident",
    ""), "copy/poll" -> ("copy", "poll"); what is a transport, "baseline"
    (no KLE) or "floor" (the CUDA driver doing the same work, kle-floor.h)."""
    what, _, wait = unit.partition("/")
    return what, wait


def unit_name(what, wait):
    """The unit name of what under wait ("" = no wait axis)."""
    return what + "/" + wait if wait else what


def interleaved_report(bench, prog="klebench"):
    """Per-unit distributions and pairs from one parse_interleaved()
    benchmark: {"dist": {unit: distribution, plus "x_floor" [median, ci_low,
    ci_high] (the median per-cycle ratio to the floor, block-bootstrap CI)
    with a floor unit, and "cpu_us" (median process CPU time per launch)
    and "cpu_per_wall" (CPU time / wall time over all its samples) with
    cpu_ns samples}, "paired": [{"transport", "reference",
    "median_diff_us", "ci_low_us", "ci_high_us", "verdict"}] (each
    transport against copy and the baseline under the same wait, then each
    unit under another wait against the same unit under "block", else
    under the first wait), "steady_path_ns": {unit: median},
    "one_time_path_ns": {unit: ns}}."""
    np, _ = require_scipy(prog)
    units, ns = bench["units"], bench["samples"]
    us = ns / 1e3
    col = {u: us[:, i] for i, u in enumerate(units)}
    rep = {"dist": {u: distribution(col[u]) for u in units}, "paired": [],
           "steady_path_ns": {}, "one_time_path_ns": {}}

    def pair(u, ref):
        m, lo, hi = paired_median_ci(col[u] - col[ref])
        rep["paired"].append({"transport": u, "reference": ref, "median_diff_us": m,
                              "ci_low_us": lo, "ci_high_us": hi,
                              "verdict": verdict(lo, hi, ref)})

    kle_units = [u for u in units if unit_parts(u)[0] not in ("baseline", "floor")]
    for ref in ("copy", "baseline"):
        for u in kle_units:
            r = unit_name(ref, unit_parts(u)[1])
            if r != u and r in col:
                pair(u, r)
    waits = []
    for u in units:
        w = unit_parts(u)[1]
        if w and w not in waits:
            waits.append(w)
    if len(waits) > 1:
        ref_wait = "block" if "block" in waits else waits[0]
        for u in units:
            what, w = unit_parts(u)
            r = unit_name(what, ref_wait)
            if w and w != ref_wait and r in col:
                pair(u, r)
    if "floor" in col:
        for u in units:
            if u != "floor":
                rep["dist"][u]["x_floor"] = list(paired_median_ci(col[u] / col["floor"]))
    if "cpu_ns" in bench:
        for i, u in enumerate(units):
            cpu = bench["cpu_ns"][:, i]
            rep["dist"][u]["cpu_us"] = float(np.median(cpu)) / 1e3
            rep["dist"][u]["cpu_per_wall"] = float(cpu.sum() / ns[:, i].sum())
    for i, u in enumerate(units):
        if u not in kle_units:
            continue
        steady = float(np.median(bench["path_ns"][:, i]))
        rep["steady_path_ns"][u] = steady
        rep["one_time_path_ns"][u] = max(
            0.0, bench["warmup_path_ns"][u] - steady * bench["warmup_launches"][u])
    return rep


def main():
    """Command line for the shell scripts (bench/babelstream.sh, run-gpu.sh),
    so they share this module's lists and parsing:
      klebench.py transports        the transports, space-separated
      klebench.py stats-summary     the KLE stats lines on stdin, summed into
                                    one line (stats_summary); exit status 1
                                    and no output when there is none"""
    import argparse
    ap = argparse.ArgumentParser(prog="klebench.py", description=main.__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("transports", help="print the transports, space-separated")
    sub.add_parser("stats-summary", help="sum the KLE stats lines read from stdin")
    a = ap.parse_args()
    if a.cmd == "transports":
        print(" ".join(TRANSPORTS))
        return 0
    line = stats_summary(parse_stats(sys.stdin.read()))
    if line is None:
        return 1
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
