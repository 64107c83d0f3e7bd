#!/usr/bin/env python3
"""Run test/gpu's lit tests on a GPU machine without lit and FileCheck.

  plan DIR TEST.c...   write DIR/gpu-tests.plan: per `%run` RUN line,
                       "<test>\\t<env assignments>\\t<check prefixes>" (the
                       RUN shapes test/gpu uses: `%clang-gpu ... -o %t` and
                       `[env K=V|%use-<t> ...] %run %t 2>&1 | %fcheck
                       [--check-prefixes=P] %s`)
  verify PLAN OUTPUT TESTDIR
                       FileCheck each block of run-gpu.sh's OUTPUT (header
                       "=== <n> <test> rc=<status>"; a block ends only at the
                       next plan line's exact header) against TESTDIR/<test>
                       as lit would; a non-zero status fails it. One PASS/FAIL
                       line per block, a total; exit status 0 only if all pass.
Standard library only; FileCheck: $KLE_FILECHECK, else
/usr/lib/llvm-22/bin/FileCheck.
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
        env = []
        if words and words[0] == "env":
            # %use-<t> is lit's short form of LIBOMPTARGET_KLE_TRANSPORT=<t>.
            env = ["LIBOMPTARGET_KLE_TRANSPORT=" + w[len("%use-"):]
                   if w.startswith("%use-") else w
                   for w in words[1:] if "=" in w or w.startswith("%use-")]
        if "%run" not in words or "%fcheck" not in check:
            die("%s: unsupported RUN line: %s" % (path, m.group(1)))
        pm = re.search(r"--check-prefix(?:es)?=(\S+)", check)
        out.append((env, pm.group(1) if pm else "CHECK"))
    if not out:
        die("%s has no `%%run` RUN line" % path)
    return out


def plan(outdir, tests):
    lines = []
    for t in tests:
        for env, prefixes in runs_of(t):
            lines.append("%s\t%s\t%s" % (os.path.basename(t), " ".join(env), prefixes))
    with open(os.path.join(outdir, "gpu-tests.plan"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("gpu-tests: %d runs of %d tests planned" % (len(lines), len(tests)))


def parse_blocks(entries, text):
    """{n: (rc, output)} of OUTPUT's blocks (a program printing "=== 3 ..."
    cannot split its block: only plan line n+1's exact header ends it)."""
    def header(n):
        return re.compile(r"^=== %d %s rc=(-?\d+)\n" % (n, re.escape(entries[n][0])), re.M)

    def mismatch(n, start):  # block n names another test: another plan's
        m = re.compile(r"^=== %d (\S+) rc=-?\d+$" % n, re.M).search(text, start)
        if m and m.group(1) != entries[n][0]:
            die("output block %d is %s, plan says %s" % (n, m.group(1), entries[n][0]))

    blocks = {}
    cur = header(0).search(text) if entries else None
    if entries and cur is None:
        mismatch(0, 0)
    for n in range(len(entries)):
        if cur is None:
            break
        nxt = header(n + 1).search(text, cur.end()) if n + 1 < len(entries) else None
        if n + 1 < len(entries) and nxt is None:
            mismatch(n + 1, cur.end())
        blocks[n] = (int(cur.group(1)), text[cur.end():nxt.start() if nxt else len(text)])
        cur = nxt
    return blocks


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
            print("FAIL: %s: no output (not run)" % label)
            failed += 1
            continue
        rc, out = blocks[n]
        r = subprocess.run([fc, "--check-prefixes=" + prefixes,
                            os.path.join(testdir, test)],
                           input=out, capture_output=True, text=True)
        if rc != 0 or r.returncode != 0:
            failed += 1
            why = ("exit status %d" % rc) if rc else " / ".join(
                r.stderr.strip().splitlines()[0:3])
            print("FAIL: %s: %s" % (label, why))
        else:
            print("PASS: %s" % label)
    print("gpu-tests: %d passed, %d failed" % (len(entries) - failed, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(prog="gpu-tests.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="write DIR/gpu-tests.plan for the tests")
    p.add_argument("dir")
    p.add_argument("tests", nargs="+", metavar="TEST.c")
    v = sub.add_parser("verify", help="check run-gpu.sh's gpu-tests.txt against the plan")
    v.add_argument("plan")
    v.add_argument("output")
    v.add_argument("testdir")
    a = ap.parse_args()
    if a.cmd == "plan":
        plan(a.dir, a.tests)
    else:
        sys.exit(verify(a.plan, a.output, a.testdir))


if __name__ == "__main__":
    main()
