"""Shared helpers for kle-offload's benchmark scripts (kle-compare.py,
kle-instructions.py): talking to bench/kle-bench and checking --out before
any work. Python standard library only; imported from the scripts' own
directory (the GPU bundle carries it beside them)."""
import json
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


def run(cmd, env, **kw):
    """Run a command with env, capturing text stdout and stderr."""
    return subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)


def list_devices(bench, env, prog):
    """[(device number, uid)] of every offload device kle-bench sees, from
    `kle-bench --list-devices`; on failure exits with one line
    "<prog>: error: ..."."""
    out = run([bench, "--list-devices"], env, timeout=120)
    if out.returncode:
        sys.exit("%s: error: %s --list-devices failed (%s): %s"
                 % (prog, bench, status(out.returncode), complaint(out.stderr, 300)))
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
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        sys.exit("%s: error: --out %s exists and is not a directory (--out names the "
                 "directory the results go to)" % (prog, path))
    block = _blocking_file(path)
    if block:
        sys.exit("%s: error: cannot create --out %s: %s is not a directory"
                 % (prog, path, block))
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        sys.exit("%s: error: cannot write into --out %s: %s"
                 % (prog, path, e.strerror or e))
    return path


def check_out_file(path, prog):
    """Makes sure file path can be written (creating its directory) before
    any work is done, without touching an existing file; otherwise exits
    with one line "<prog>: error: ...". Returns the absolute path."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        sys.exit("%s: error: --out %s is a directory; --out names the JSON file to "
                 "write (e.g. %s)" % (prog, path, os.path.join(path, prog + ".json")))
    d = os.path.dirname(path)
    block = _blocking_file(d)
    if block:
        sys.exit("%s: error: cannot write --out %s: %s is not a directory"
                 % (prog, path, block))
    try:
        os.makedirs(d, exist_ok=True)
        if os.path.exists(path):
            with open(path, "a"):
                pass
        else:
            with tempfile.TemporaryFile(dir=d):
                pass
    except OSError as e:
        sys.exit("%s: error: cannot write --out %s: %s" % (prog, path, e.strerror or e))
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
        sys.exit("%s: error: cannot write %s: %s%s" % (prog, what, e.strerror or e, where))
