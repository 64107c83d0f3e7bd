#!/usr/bin/env python3
"""Fault sweep over the driver stand-ins (test only; see README.md here).

For each stand-in (cuda, hsa), lifecycle program (sync.c, nowait.c,
threads.c, pause.c and fork.c in test/faults/Inputs) and KLE
transport, one clean run
records the calls per driver entry point (KLE_STANDIN_STATS_FILE, one
name for both). Then every entry point that was called fails
once at each distinct position of its calls (1, 2, 3, the middle one as
steady state, the last), one run per position and transport, and each run
is classified:

  completed  status 0, right result, nothing live at exit
  host       as completed, and at least one region ran on the host (a
             fallback the offload policy allows)
  fatal      the program ended with SIGABRT and a message that names the
             failed entry point (upstream's policy for a failed driver call)
  skipped    the injection was not reached (the call count differs from the
             clean run's)
  BAD:hang, BAD:signal-N, BAD:violation, BAD:watchdog, BAD:leak,
  BAD:wrong, BAD:status-N, BAD:unnamed (a fatal error not naming the call)

Bad values of the plugins' own knobs (--env) run the sync program once each:
a warning or a clear error, never a hang, a crash or a silent acceptance
(BAD:silent).

Prints one table (entry point x position x transport -> outcome) per
stand-in and program, and totals; exits 1 if any outcome is BAD.
"""
import argparse
import concurrent.futures as cf
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(os.path.dirname(HERE), "standin")  # the stand-ins' code
PROGRAMS_DIR = os.path.join(HERE, "Inputs")  # the driver-neutral programs
TRANSPORTS = ["zerocopy", "resident", "staged", "copy"]
PROGRAMS = ["sync", "nowait", "threads", "pause", "fork"]

# Per stand-in (both read the shared KLE_STANDIN_ knobs): lib dir under the
# build, offload arch, the failure status injected, output prefix, and the
# other stand-in's knob that keeps it out of the way.
FRONTS = {
    "cuda": dict(lib="test/cuda-standin/lib", arch="sm_90",
                 code="CUDA_ERROR_UNKNOWN", say="kle-standin: ",
                 other="KLE_HSA_STANDIN_DEVICES=0",
                 src=os.path.join(STANDIN, "cuda")),
    "hsa": dict(lib="test/hsa-standin/lib", arch="gfx90a",
                code="HSA_STATUS_ERROR_OUT_OF_RESOURCES", say="kle-hsa-standin: ",
                other="KLE_CUDA_STANDIN_DEVICES=0",
                src=os.path.join(STANDIN, "hsa")),
}

# Values of the plugins' knobs: (stand-in or None for both, var, value, kind).
# "bad": malformed or out of range, must warn or end with a clear error;
# "edge": a documented or in-range value the plugin must cope with (silence
# is fine). Neither may hang, crash or break the KLE contract.
ENV_CASES = [
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "abc", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "-1", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "99999999999", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "0", "edge"),
    ("hsa", "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "12abc", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "0", "edge"),
    ("hsa", "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "3", "edge"),
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS", "x", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS", "0", "edge"),
    ("hsa", "LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT", "-5", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT", "1e3", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "lots", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "0", "edge"),
    ("hsa", "LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", "0", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING", "maybe", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES", "maybe", "bad"),
    ("hsa", "LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES", "true", "bad"),
    (None, "LIBOMPTARGET_NUM_INITIAL_STREAMS", "-1", "bad"),
    (None, "LIBOMPTARGET_NUM_INITIAL_STREAMS", "0", "edge"),
    (None, "LIBOMPTARGET_KLE_TRANSPORT", "bogus", "bad"),
    (None, "LIBOMPTARGET_KLE_TRANSPORT", "", "edge"),
    (None, "LIBOMPTARGET_KLE_TRANSPORT", "zerocopy,copy", "bad"),
    (None, "LIBOMPTARGET_KLE_MAX_SLOTS", "0", "bad"),
    (None, "LIBOMPTARGET_KLE_MAX_SLOTS", "-3", "bad"),
    (None, "LIBOMPTARGET_KLE_MAX_SLOTS", "many", "bad"),
    (None, "LIBOMPTARGET_KLE_MAX_SLOTS", "1", "edge"),
    (None, "LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT", "1k", "bad"),
    (None, "LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT", "0", "edge"),
    (None, "LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL", "-1", "bad"),
    (None, "LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL", "0", "edge"),
    (None, "LIBOMPTARGET_KLE_STATS", "yes please", "bad"),
]


def void_entries(front):
    """Entry points the front counts but never fails (ENTRY_VOID).

    "src" is the front's source file, or its directory (every *.cpp in it)."""
    path = FRONTS[front]["src"]
    files = sorted(glob.glob(os.path.join(path, "*.cpp"))) if os.path.isdir(path) else [path]
    src = ""
    for f in files:
        try:
            src += open(f).read()
        except OSError as e:
            sys.exit("fault-sweep: cannot read the %s front's source %s: %s" % (front, f, e))
    if not files:
        sys.exit("fault-sweep: no sources of the %s front in %s" % (front, path))
    return set(re.findall(r'ENTRY_VOID\("([A-Za-z0-9_@]+)"\)', src))


def positions(n):
    """Distinct lifecycle positions among n calls: first three, middle, last."""
    pos = [p for p in (1, 2, 3) if p <= n]
    for p in ((n + 1) // 2, n):
        if p >= 1 and p not in pos:
            pos.append(p)
    return sorted(pos)


class Runner:
    def __init__(self, args):
        self.args = args
        self.prefix = os.path.abspath(args.prefix)
        self.build = os.path.abspath(args.build)
        self.work = args.work or tempfile.mkdtemp(prefix="kle-fault-sweep.")
        os.makedirs(self.work, exist_ok=True)
        self.cfg = os.path.join(self.prefix, "share", "kle-offload", "kle-offload.cfg")

    def compile(self, front, prog):
        f = FRONTS[front]
        out = os.path.join(self.work, "%s.%s" % (prog, f["arch"]))
        src = os.path.join(PROGRAMS_DIR, prog + ".c")
        if os.path.exists(out) and os.path.getmtime(out) > os.path.getmtime(src):
            return out
        cmd = ["clang-22", "--config=" + self.cfg, "-fopenmp",
               "--offload-arch=" + f["arch"], src, "-o", out]
        subprocess.run(cmd, check=True)
        return out

    def env(self, front, extra):
        f = FRONTS[front]
        e = dict(os.environ)
        for k in list(e):
            if k.startswith(("KLE_STANDIN_", "KLE_CUDA_STANDIN_", "KLE_HSA_STANDIN_", "LIBOMPTARGET_")) or \
                    k == "OMP_TARGET_OFFLOAD":
                del e[k]
        e["LD_LIBRARY_PATH"] = os.path.join(self.build, f["lib"]) + \
            (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
        k, v = f["other"].split("=")
        e[k] = v
        e.update(extra)
        return e

    def run(self, front, exe, extra, timeout):
        """(status or 'timeout', output, seconds). Status < 0: killed by signal."""
        t0 = time.monotonic()
        p = subprocess.Popen([exe], env=self.env(front, extra), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            rc = "timeout"
        return rc, out.decode("utf-8", "replace"), time.monotonic() - t0


def live_clean(front, out):
    """True when the last live line at exit counts nothing (and no stream
    leaked), the process's and a forked child's ("<tag>(child): live ...")."""
    say = FRONTS[front]["say"]
    if "streams never destroyed" in out:
        return False
    for tag in (say, say.replace(": ", "(child): ")):
        lines = [l for l in out.splitlines() if l.startswith(tag + "live ")]
        if not lines:
            continue
        counts = re.findall(r"(\w[\w-]*)=(\d+)", lines[-1].split("(bytes")[0])
        if not all(int(v) == 0 for k, v in counts if k != "at"):
            return False
    return True


def classify(front, entry, rc, out, injected_at):
    say = FRONTS[front]["say"]
    if rc == "timeout":
        return "BAD:hang"
    if "VIOLATION" in out or rc == 97:
        return "BAD:violation"
    if rc == 96:
        return "BAD:watchdog"
    if injected_at and ("injected failure: " + entry) not in out:
        return "skipped"
    if rc == 0:
        if "result WRONG" in out or "result ok" not in out:
            return "BAD:wrong"
        if not live_clean(front, out):
            # A release call that failed leaves its object (and what the
            # plugin's teardown did not reach after it) to the process exit;
            # acceptable only when the error naming the call was reported.
            if entry and re.search(r"error.*\b" + re.escape(re.sub(r"(_v2|@.*)$", "", entry)) + r"\b",
                                   out.replace("injected failure: " + entry, "")):
                return "reported"
            return "BAD:leak"
        return "host" if re.search(r"^result ok host=[1-9]", out, re.M) else "completed"
    if rc == 1 and "result WRONG" in out:
        return "BAD:wrong"
    if rc == -signal.SIGABRT or rc == 134:
        name = re.sub(r"(_v2|@.*)$", "", entry or "")
        if not entry or re.search(re.escape(name) + r"\b", out.replace(say, "")
                                  .replace("injected failure: " + entry, "")):
            return "fatal"
        return "BAD:unnamed"
    if isinstance(rc, int) and rc < 0:
        return "BAD:signal-%d" % -rc
    return "BAD:status-%s" % rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prefix", required=True, help="the fork's install prefix")
    ap.add_argument("--build", required=True, help="the build directory (stand-ins)")
    ap.add_argument("--fronts", default="cuda,hsa")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--transports", default=" ".join(TRANSPORTS))
    ap.add_argument("--only", default="",
                    help="comma list of entry[:pos] to sweep (default: every entry called)")
    ap.add_argument("--no-env", action="store_true", help="skip the bad knob values")
    ap.add_argument("--record-only", action="store_true",
                    help="only the clean runs: print the runs a sweep would make")
    ap.add_argument("--env-only", action="store_true", help="only the bad knob values")
    ap.add_argument("--env-filter", default="",
                    help="regular expression: only knob cases whose VAR=value matches")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--min-timeout", type=float, default=60.0,
                    help="seconds; a run's limit is max(this, 20 x its clean run)")
    ap.add_argument("--work", default="", help="directory for binaries and logs")
    ap.add_argument("--keep-logs", action="store_true")
    a = ap.parse_args()
    R = Runner(a)
    fronts = [f for f in a.fronts.split(",") if f]
    progs = [p for p in a.programs.split(",") if p]
    transports = a.transports.split()
    only = {}
    for item in filter(None, a.only.split(",")):
        e, _, p = item.partition(":")
        only.setdefault(e, set())
        if p:
            only[e].add(int(p))

    results = {}  # (front, prog, entry, pos, transport) -> outcome
    totals = {}
    bad_lines = []
    t_start = time.monotonic()

    def note(outcome):
        totals[outcome] = totals.get(outcome, 0) + 1

    pool = cf.ThreadPoolExecutor(max_workers=a.jobs)
    for front in fronts:
        f = FRONTS[front]
        voids = void_entries(front)
        for prog in progs if not a.env_only else []:
            exe = R.compile(front, prog)
            # Clean runs: the calls per entry point, per transport.
            counts, base_s = {}, {}
            for t in transports:
                stats = os.path.join(R.work, "%s.%s.%s.stats" % (front, prog, t))
                rc, out, s = R.run(front, exe, {"LIBOMPTARGET_KLE_TRANSPORT": t,
                                                "KLE_STANDIN_STATS_FILE": stats},
                                   a.min_timeout * 5)
                cl = classify(front, None, rc, out, 0)
                if cl != "completed":
                    bad_lines.append("%s %s %s clean run: %s\n%s" % (front, prog, t, cl, out[-2000:]))
                    note("BAD:clean")
                    continue
                base_s[t] = s
                c = {}
                for line in open(stats):
                    if line.startswith("#"):
                        continue
                    name, n = line.split()
                    # The CUDA front counts a base name and its _v2 spelling
                    # as one entry point, and fails by base name.
                    name = re.sub(r"_v2$", "", name)
                    if int(n) > 0:
                        c[name] = c.get(name, 0) + int(n)
                counts[t] = c
            jobs = []
            if a.record_only:
                for t, c in counts.items():
                    runs = sum(len(positions(n)) for e, n in c.items() if e not in voids)
                    print("%s %s %s: %d entry points, %d runs" % (front, prog, t, len(c), runs))
                continue
            for t, c in counts.items():
                pooled = {n.split("@")[0] for n in c if "@" in n}
                for entry, n in sorted(c.items()):
                    if entry in voids or entry in pooled:
                        continue
                    if only and entry not in only:
                        continue
                    for p in positions(n):
                        if only and only[entry] and p not in only[entry]:
                            continue
                        extra = {"LIBOMPTARGET_KLE_TRANSPORT": t,
                                 "KLE_STANDIN_FAIL": "%s:%d:%s" % (entry, p, f["code"])}
                        lim = max(a.min_timeout, 20 * base_s[t])
                        jobs.append(((front, prog, entry, p, n, t),
                                     pool.submit(R.run, front, exe, extra, lim)))
            for key, fut in jobs:
                rc, out, s = fut.result()
                front_, prog_, entry, p, n, t = key
                cl = classify(front, entry, rc, out, p)
                results[(front, prog, entry, p, n, t)] = cl
                note(cl)
                if cl.startswith("BAD"):
                    bad_lines.append("%s %s %s %s:%d %s: %s\n%s" % (
                        front, prog, t, entry, p, cl, rc, out[-1500:]))
        if a.no_env:
            continue
        exe = R.compile(front, "sync")
        for only_front, var, val, kind in ENV_CASES:
            if only_front and only_front != front:
                continue
            if a.env_filter and not re.search(a.env_filter, "%s=%s" % (var, val)):
                continue
            rc, out, s = R.run(front, exe, {var: val}, a.min_timeout)
            cl = classify(front, None, rc, out, 0)
            if cl == "fatal" and var not in out and val not in out and \
                    "requires" not in out:
                cl = "BAD:unnamed"
            if cl in ("completed", "host"):
                warned = re.search(r"(warning|ignor|invalid).*" + re.escape(var), out, re.I) \
                    or re.search(re.escape(var) + r".*(warning|ignor|invalid)", out, re.I)
                if warned:
                    cl += "+warned"
                elif kind == "bad":
                    cl = "BAD:silent"
            results[(front, "env", var, val, kind, "-")] = cl
            note(cl)
            if cl.startswith("BAD"):
                bad_lines.append("%s env %s=%r: %s: %s\n%s" % (front, var, val, cl, rc, out[-1500:]))
    pool.shutdown()

    # The table: one row per stand-in, program, entry point and position.
    print("| stand-in | program | entry point | call (of n) | " + " | ".join(transports) + " |")
    print("|---|---|---|---|" + "---|" * len(transports))
    rows = {}
    for (front, prog, entry, p, n, t), cl in results.items():
        if prog == "env":
            continue
        rows.setdefault((front, prog, entry, p), {})[t] = (cl, n)
    for (front, prog, entry, p), per_t in sorted(rows.items()):
        ns = {n for _, n in per_t.values()}
        nstr = "/".join(str(n) for n in sorted(ns))
        cells = [per_t[t][0] if t in per_t else "" for t in transports]
        print("| %s | %s | %s | %d (of %s) | %s |" % (front, prog, entry, p, nstr, " | ".join(cells)))
    env_rows = [(k, v) for k, v in results.items() if k[1] == "env"]
    if env_rows:
        print()
        print("| stand-in | knob | value | kind | outcome |")
        print("|---|---|---|---|---|")
        for (front, _, var, val, kind, _), cl in sorted(env_rows):
            print("| %s | %s | `%s` | %s | %s |" % (front, var, val, kind, cl))
    print()
    n_runs = sum(totals.values())
    print("totals: %d runs in %.0f s: " % (n_runs, time.monotonic() - t_start) +
          ", ".join("%s=%d" % kv for kv in sorted(totals.items())))
    n_bad = sum(v for k, v in totals.items() if k.startswith("BAD"))
    print("fault-sweep: %d bad outcome(s)" % n_bad)
    for l in bad_lines:
        print("---- " + l, file=sys.stderr)
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
