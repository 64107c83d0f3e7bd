"""What every klebench.py command shares: the transport list, talking to
bench/kle-bench, the KLE stats line, checking --out before any work, the one
error exit (die) and the one re-execution under Debian's python3 when numpy
or scipy are missing (require_scipy)."""
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The running command's name in its messages ("klebench compare"; set by
# bench/klebench.py).
PROG = "klebench"

# The KLE transports, in the order every tool runs and shows them: the one
# place the tooling lists them (klebench.py's commands, scripts/transport-table.py,
# bench/gpu/run-gpu.sh and babelstream.sh through `klebench.py transports`).
# A new transport is one more name here.
TRANSPORTS = ("zerocopy", "resident", "staged", "copy")

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
    repo = REPO
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


def check_out_file(path, prog, example="results.json"):
    """Makes sure file path can be written (creating its directory) before
    any work is done, without touching an existing file; otherwise exits
    with one line "<prog>: error: ...". Returns the absolute path."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        die(prog, "--out %s is a directory; --out names the JSON file to "
                  "write (e.g. %s)" % (path, os.path.join(path, example)))
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


# numpy, scipy and matplotlib come from Debian's python3-numpy,
# python3-scipy and python3-matplotlib (bench/requirements.txt), which live on
# /usr/bin/python3's path; a pyenv or venv python without them re-executes
# the command there, once (require).
SYSTEM_PYTHON = "/usr/bin/python3"
_REEXEC_GUARD = "KLE_BENCH_REEXEC_FROM"


def require(load, names, prog):
    """Returns load() (a function importing what a command needs). If it
    raises ImportError, re-executes the running command once under
    /usr/bin/python3; if that is not possible or did not help, exits with
    one line "<prog>: error: <names> ... not importable ..." naming the
    Debian packages (python3-<name>) and pip's."""
    try:
        return load()
    except ImportError as e:
        err = e
    here = sys.executable or "python3"
    first = os.environ.get(_REEXEC_GUARD)
    if (not first and os.access(SYSTEM_PYTHON, os.X_OK)
            and os.path.realpath(SYSTEM_PYTHON) != os.path.realpath(here)):
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])]
                      + sys.argv[1:], dict(os.environ, **{_REEXEC_GUARD: here}))
        except OSError:
            pass
    pkgs = " ".join("python3-" + n for n in names)
    die(prog, "%s %s not importable by %s%s (%s); install the Debian package%s %s "
              "(apt-get install %s) or 'pip install %s'"
        % (" and ".join(names), "is" if len(names) == 1 else "are", here,
           " nor by " + first if first and first != here else "", err,
           "s" if len(names) > 1 else "", pkgs, pkgs, " ".join(names)), 2)


def _scipy():
    import numpy
    import scipy.stats
    return numpy, scipy.stats


def require_scipy(prog=None):
    """(numpy, scipy.stats), through require()."""
    return require(_scipy, ["numpy", "scipy"], prog or PROG)


def hms(s):
    """Seconds as "1 h 02 min", "3 min 05 s" or "42 s"."""
    s = int(round(s))
    if s >= 3600:
        return "%d h %02d min" % (s // 3600, s % 3600 // 60)
    if s >= 60:
        return "%d min %02d s" % (s // 60, s % 60)
    return "%d s" % s
