"""What every klebench.py command shares: the transports, running programs,
the KLE stats line, errors (die), --out checks and the packages (require)."""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROG = "klebench"  # the running command's name in messages (set by klebench.py)
# The KLE transports in the order every tool shows them: the one list.
TRANSPORTS = ("zerocopy", "resident", "staged", "copy")
STANDIN_UID = "CUDA-" + "KLE-STANDIN".encode().hex()  # the stand-in's devices
# Exit reports on stderr, never a complaint: the CUDA driver stand-in's, the
# runtime's KLE stats and its note that no KLE transport ran.
STANDIN_REPORT = re.compile(r'^(kle-standin: (live|peak|launches=|calls |note: no image)'
                            r'|omptarget KLE stats:|"PluginInterface" message: note: .*so no KLE transport ran)')
# LIBOMPTARGET_KLE_STATS=1's line: "... KLE stats: device N: launches
# copy=..; fallbacks R=n ...; key=value ...".
STATS_LINE = re.compile(r"KLE stats: device (?P<device>\d+): launches (?P<launches>[^;]*); "
                        r"fallbacks (?P<fallbacks>[^;]*);(?P<rest>.*)$")

def _pairs(text):
    kv = (item.partition("=") for item in text.replace(";", " ").split())
    return {k: int(v) for k, eq, v in kv if eq and v.isdigit()}

def parse_stats(text):
    """Every KLE stats line in text as {"device", "launches": {transport: n},
    "fallbacks": {reason: n}, "fields": {key: n}}; any transport is kept."""
    return [{"device": int(m.group("device")), "launches": _pairs(m.group("launches")),
             "fallbacks": _pairs(m.group("fallbacks")), "fields": _pairs(m.group("rest"))}
            for m in map(STATS_LINE.search, (text or "").splitlines()) if m]

def stats_summary(stats):
    """parse_stats() entries summed into "copy=.. staged=.. ...; fallbacks
    R=n ..." ("none" without a fallback), or None."""
    if not stats:
        return None
    launches, fallbacks = collections.Counter(), collections.Counter()
    for st in stats:
        launches.update(st["launches"])
        fallbacks.update(st["fallbacks"])
    order = ("copy", "staged", "zerocopy", "resident")
    names = [t for t in order if t in launches] + sorted(set(launches) - set(order))
    fb = " ".join("%s=%d" % kv for kv in sorted(fallbacks.items()) if kv[1])
    return "%s; fallbacks %s" % (" ".join("%s=%d" % (t, launches[t]) for t in names),
                                 fb or "none")

def summary(doc):
    """A module docstring's first paragraph on one line (a --help description)."""
    return " ".join(doc.split("\n\n")[0].split())

def die(prog, msg, code=1):
    """One line "<prog>: error: <msg>" on stderr, then exit status code."""
    print("%s: error: %s" % (prog, msg), file=sys.stderr)
    sys.exit(code)

def fail(msg, code=1):
    """die() under the running command's name."""
    die(PROG, msg, code)

def note(msg):
    """One line "<command>: <msg>" on stderr, at once."""
    print(PROG + ": " + msg, file=sys.stderr, flush=True)

def git_revision():
    """$KLE_GIT_REV (the GPU bundle sets it), else this checkout's short HEAD."""
    try:
        return os.environ.get("KLE_GIT_REV") or subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"

def run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)

def with_lib(env, d):
    """env with directory d first on LD_LIBRARY_PATH."""
    return dict(env, LD_LIBRARY_PATH=d + os.pathsep + env.get("LD_LIBRARY_PATH", ""))

def run_checked(cmd, env, timeout, what, failed=None):
    """cmd's CompletedProcess; exits with one line if it runs over timeout s
    ("WHAT timed out") or fails ("FAILED (exit status N): its complaint",
    FAILED by default "WHAT failed")."""
    try:
        r = run(cmd, env, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("%s timed out after %d s (--timeout)" % (what, timeout))
    if r.returncode:
        fail("%s (%s): %s" % (failed or what + " failed", status(r.returncode),
                              complaint(r.stderr)))
    return r

def run_or_timeout(cmd, env, timeout):
    """(exit status, or None when killed after timeout s; stdout + stderr)."""
    try:
        r = run(cmd, env, timeout=timeout)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out

def list_devices(bench, env, prog, cmd=None, timeout=120):
    """[(number, uid)] of `bench --list-devices` (or cmd); exits if it fails."""
    cmd = cmd or [bench, "--list-devices"]
    try:
        out = run(cmd, env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        die(prog, "%s did not run: %s" % (" ".join(cmd), e))
    if out.returncode:
        die(prog, "%s failed (%s): %s"
            % (" ".join(cmd), status(out.returncode), complaint(out.stderr, 300)))
    lines = (line.partition(" ") for line in out.stdout.splitlines())
    return [(int(num), uid.strip()) for num, _, uid in lines if num.isdigit()]

def status(rc):
    return "killed by signal %d" % -rc if rc < 0 else "exit status %d" % rc

def complaint(stderr, limit=400):
    """A failed run's stderr (its last lines, about limit characters, without
    the stand-in's report) on one line."""
    lines = [l.strip() for l in (stderr or "").splitlines()]
    lines = [l for l in lines if l and not STANDIN_REPORT.match(l)]
    if not lines:
        return "no error message (only the stand-in's report)" if (stderr or "").strip() \
            else "no error message"
    shown = [lines.pop()]
    while lines and sum(len(x) + 3 for x in shown) + len(lines[-1]) <= limit:
        shown.insert(0, lines.pop())
    text = " | ".join(shown)
    return text if len(text) <= limit else "..." + text[-limit:]

def need_bench(path):
    """Exits with one error line unless path is an executable (the bench)."""
    if not os.access(path, os.X_OK):
        fail("%s is not an executable; build bench/ first (README, Benchmarks)" % path)

def check_out(path, prog, example=None):
    """The absolute path, checked writable before any work: directory path
    (created), or with example (a file name for messages) file path."""
    if not path:
        die(prog, "--out is empty: name the directory the results go to")
    path = os.path.abspath(path)
    d = os.path.dirname(path) if example else path
    if example and os.path.isdir(path):
        die(prog, "--out %s is a directory; --out names the JSON file to write (e.g. %s)"
            % (path, os.path.join(path, example)))
    if not example and os.path.exists(path) and not os.path.isdir(path):
        die(prog, "--out %s exists and is not a directory (--out names the directory "
                  "the results go to)" % path)
    block = d
    while not os.path.exists(block) and block != os.path.dirname(block):
        block = os.path.dirname(block)
    if not os.path.isdir(block):
        die(prog, "cannot %s --out %s: %s is not a directory"
            % ("write" if example else "create", path, block))
    try:
        os.makedirs(d, exist_ok=True)
        if example and os.path.exists(path):
            open(path, "a").close()
        else:
            tempfile.TemporaryFile(dir=d).close()
    except OSError as e:
        die(prog, "cannot write %s--out %s: %s" % ("" if example else "into ", path,
                                                   e.strerror or e))
    return path

def save(files, data, prog):
    """Writes files ({path: writer(f)}); if that fails, saves data as JSON in
    a temporary file and exits naming it, so no results are lost."""
    try:
        for path, write in files.items():
            with open(path, "w", newline="") as f:
                write(f)
    except OSError as e:
        try:
            fd, keep = tempfile.mkstemp(prefix=prog.replace(" ", "-") + ".", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            where = "; the results are in %s" % keep
        except OSError:
            where = ""
        die(prog, "cannot write %s: %s%s" % (e.filename or "the results", e.strerror or e,
                                             where))

def save_json(path, data, prog):
    save({path: lambda f: json.dump(data, f, indent=1)}, data, prog)

# numpy, scipy, matplotlib: Debian's python3-* (requirements.txt).
SYSTEM_PYTHON = "/usr/bin/python3"
_REEXEC_GUARD = "KLE_BENCH_REEXEC_FROM"

def require(load, names, prog):
    """load() (importing what a command needs); on ImportError, re-executes
    once under /usr/bin/python3, else exits naming the packages."""
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
    pkgs, one = " ".join("python3-" + n for n in names), len(names) == 1
    die(prog, "%s %s not importable by %s%s (%s); install the Debian package%s %s "
              "(apt-get install %s) or 'pip install %s'"
        % (" and ".join(names), "is" if one else "are", here,
           " nor by " + first if first and first != here else "", err,
           "" if one else "s", pkgs, pkgs, " ".join(names)), 2)

def _scipy():
    import numpy
    import scipy.stats
    return numpy, scipy.stats

def require_scipy(prog=None):
    """(numpy, scipy.stats), or require()'s re-execution or exit."""
    return require(_scipy, ["numpy", "scipy"], prog or PROG)

def choose(opt, text, valid, noun="transport"):
    """The items of a comma-separated option, each one of valid, once."""
    items = text.split(",")
    bad = [x for x in items if x not in valid]
    if bad or len(set(items)) != len(items):
        fail("%s: %s (valid: %s, comma-separated, each once)"
             % (opt, "unknown %s %r" % (noun, bad[0]) if bad else "a %s named twice" % noun,
                ", ".join(valid)))
    return items

def natural_key(s):
    """Sorts "teams:16" before "teams:132"."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", s) if p]

def hms(s):
    """Seconds as "1 h 02 min", "3 min 05 s" or "42 s"."""
    s = int(round(s))
    if s >= 3600:
        return "%d h %02d min" % (s // 3600, s % 3600 // 60)
    return "%d min %02d s" % (s // 60, s % 60) if s >= 60 else "%d s" % s
