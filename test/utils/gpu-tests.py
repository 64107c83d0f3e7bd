#!/usr/bin/env python3
"""Run test/gpu's lit tests on a GPU machine without lit and FileCheck.
bench/gpu/gpu-bundle.sh plans the runs and verifies their output; the
bundle's run-gpu.sh runs them.

  plan DIR TEST.c...   write DIR/gpu-tests.plan: per `%run` RUN line,
                       "<test>\\t<env assignments>\\t<check prefixes>"
  verify PLAN OUTPUT TESTDIR
                       FileCheck each block of run-gpu.sh's OUTPUT (header
                       "=== <n> <test> rc=<status>") against TESTDIR/<test>
                       as lit would; a non-zero status fails it.
FileCheck: $KLE_FILECHECK, else /usr/lib/llvm-22/bin/FileCheck.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

RUN = re.compile(r"^//\s*RUN:\s*(.*)$")

def die(msg):
    sys.exit("gpu-tests: error: " + msg)

def runs_of(path):
    """(env assignments, prefixes) for each `%run` RUN line of a test."""
    out = []
    for line in open(path):
        m = RUN.match(line.strip())
        if not m or "%run" not in m.group(1):
            continue
        cmd, _, check = m.group(1).partition("|")
        words = shlex.split(cmd.replace("2>&1", ""))
        # %use-<t> is lit's short form of LIBOMPTARGET_KLE_TRANSPORT=<t>.
        env = ["LIBOMPTARGET_KLE_TRANSPORT=" + w[len("%use-"):] if w.startswith("%use-") else w
               for w in words[1:] if "=" in w or w.startswith("%use-")] \
            if words and words[0] == "env" else []
        if "%run" not in words or "%fcheck" not in check:
            die("%s: unsupported RUN line: %s" % (path, m.group(1)))
        pm = re.search(r"--check-prefix(?:es)?=(\S+)", check)
        out.append((env, pm.group(1) if pm else "CHECK"))
    if not out:
        die("%s has no `%%run` RUN line" % path)
    return out

def plan(outdir, tests):
    lines = ["%s\t%s\t%s" % (os.path.basename(t), " ".join(env), prefixes)
             for t in tests for env, prefixes in runs_of(t)]
    with open(os.path.join(outdir, "gpu-tests.plan"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("gpu-tests: %d runs of %d tests planned" % (len(lines), len(tests)))

def parse_blocks(entries, text):
    """{n: (rc, output)} of OUTPUT's blocks; only plan line n+1's exact header
    ends block n (a program printing "=== 3 ..." cannot split its block)."""
    blocks, prev = {}, None
    for n, entry in enumerate(entries + [None]):
        m, pos = None, prev.end() if prev else 0
        if entry:
            m = re.compile(r"^=== %d %s rc=(-?\d+)\n" % (n, re.escape(entry[0])), re.M).search(
                text, pos)
            other = re.compile(r"^=== %d (\S+) rc=-?\d+$" % n, re.M).search(text, pos)
            if not m and other and other.group(1) != entry[0]:
                die("output block %d is %s, plan says %s" % (n, other.group(1), entry[0]))
        if prev:
            blocks[n - 1] = (int(prev.group(1)), text[prev.end():m.start() if m else len(text)])
        if not m:
            return blocks
        prev = m

def verify(plan_path, output_path, testdir):
    fc = os.environ.get("KLE_FILECHECK", "/usr/lib/llvm-22/bin/FileCheck")
    if not os.access(fc, os.X_OK):
        die("FileCheck not found at %s (Debian package llvm-22-tools)" % fc)
    try:
        entries = [l.rstrip("\n").split("\t") for l in open(plan_path) if l.strip()]
        text = open(output_path, errors="replace").read()
    except OSError as e:
        die(str(e))
    blocks = parse_blocks(entries, text)
    failed = 0
    for n, (test, env, prefixes) in enumerate(entries):
        label = "%s [%s]" % (test, env or "default")
        if n not in blocks:
            why = "no output (not run)"
        else:
            rc, out = blocks[n]
            r = subprocess.run([fc, "--check-prefixes=" + prefixes, os.path.join(testdir, test)],
                               input=out, capture_output=True, text=True)
            why = "exit status %d" % rc if rc else " / ".join(
                r.stderr.strip().splitlines()[0:3]) if r.returncode else None
        failed += why is not None
        print("FAIL: %s: %s" % (label, why) if why is not None else "PASS: %s" % label)
    print("gpu-tests: %d passed, %d failed" % (len(entries) - failed, failed))
    return 1 if failed else 0

def main():
    ap = argparse.ArgumentParser(prog="gpu-tests.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="write DIR/gpu-tests.plan for the tests")
    p.add_argument("dir")
    p.add_argument("tests", nargs="+", metavar="TEST.c")
    v = sub.add_parser("verify", help="check run-gpu.sh's gpu-tests.txt against the plan")
    for arg in ("plan", "output", "testdir"):
        v.add_argument(arg)
    a = ap.parse_args()
    if a.cmd == "plan":
        plan(a.dir, a.tests)
    else:
        sys.exit(verify(a.plan, a.output, a.testdir))

if __name__ == "__main__":
    main()
