#!/usr/bin/env python3
"""Run a command once per KLE transport (lit: %each-transport, %cuda-each,
%hsa-each; test/lit.cfg.py).

Usage: each_transport.py [options and VAR=VALUE words] PROGRAM [ARGS ...]

Each run has LIBOMPTARGET_KLE_TRANSPORT=<t>, KLE_STANDIN_EXPECT=<t> (the
stand-ins' KLE checks expect it) and LIBOMPTARGET_KLE_STATS=1 in its
environment, stdout and stderr together, and a 120 s limit; VAR=VALUE words
before the program override them. "{t}" in any word of the command is the
transport (a file per run: KLE_STANDIN_STATS_FILE=%t.{t}.stats). Its output
follows a line "== transport <t>".

Options:
  -t A,B,...   the transports, in that order (default: lit.cfg.py's list)
  -x A,B,...   leave these out of the list
  -c FILE      check each run's output with FileCheck FILE on its own, with
               the prefixes of -p, where "@" stands for the transport in
               capitals (CHECK,CUDA,@ -> CHECK,CUDA,ZEROCOPY); without -c
               every run's output goes to stdout
  -p P,Q,...   FileCheck prefixes (default CHECK)
  -o PATTERN   also write each run's output to PATTERN ({t}: the transport),
               e.g. for %statcheck -i
  --fc=ARG     one more FileCheck argument (repeatable)
  -s A=N,B=+   also check each run's KLE report with statcheck.py (fields
               by name, "@" for the transport: -s @=32,rest=0)
  --may-fail   exit statuses 1..95 (the program's own verdict: kernels
               compute nothing on a stand-in) are printed and tolerated;
               96 (watchdog), 97 (contract violations), timeouts and
               crashes still fail (also KLE_PROGRAM_MAY_FAIL=1)

Exits with the first failing run's status (or FileCheck's), after printing
which transport it was.
"""
import os
import re
import subprocess
import sys

FILECHECK = "/usr/lib/llvm-22/bin/FileCheck"
HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    transports = os.environ.get("KLE_TRANSPORTS", "zerocopy resident staged copy").split()
    leave_out, env_words, check, prefixes, fc_args, out = [], [], None, "CHECK", [], None
    stats = None
    may_fail = os.environ.get("KLE_PROGRAM_MAY_FAIL") == "1"
    i = 0
    while i < len(argv) and (argv[i].startswith("-") or
                             re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argv[i])):
        a = argv[i]
        if not a.startswith("-"):
            env_words.append(a)
            i += 1
        elif a in ("-t", "-x", "-c", "-p", "-o", "-s") and i + 1 < len(argv):
            v = argv[i + 1]
            if a == "-t":
                transports = v.replace(",", " ").split()
            elif a == "-x":
                leave_out += v.replace(",", " ").split()
            elif a == "-c":
                check = v
            elif a == "-o":
                out = v
            elif a == "-s":
                stats = v
            else:
                prefixes = v
            i += 2
        elif a.startswith("--fc="):
            fc_args.append(a[len("--fc="):])
            i += 1
        elif a == "--may-fail":
            may_fail = True
            i += 1
        else:
            sys.exit("each_transport.py: unknown option %s" % a)
    cmd = argv[i:]
    if not cmd:
        sys.exit("each_transport.py: no command")
    unknown = [t for t in leave_out if t not in transports]
    if unknown:
        sys.exit("each_transport.py: -x %s: not in the list %s" % (",".join(unknown),
                                                                  ",".join(transports)))
    for t in [t for t in transports if t not in leave_out]:
        expect = t if t in ("zerocopy", "staged", "copy", "resident") else "any"
        env = dict(os.environ, LIBOMPTARGET_KLE_TRANSPORT=t, KLE_STANDIN_EXPECT=expect,
                   LIBOMPTARGET_KLE_STATS="1")
        header = "== transport %s" % t
        print(header, flush=True)
        full = ["timeout", "120", "env"] + [w.replace("{t}", t) for w in env_words + cmd]
        if check is None and out is None and stats is None:
            rc = subprocess.call(full, env=env, stderr=subprocess.STDOUT)
        else:
            run = subprocess.run(full, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
            rc = run.returncode
            sys.stdout.buffer.write(run.stdout)
            sys.stdout.flush()
            if out is not None:
                with open(out.replace("{t}", t), "wb") as f:
                    f.write(run.stdout)
        if may_fail and 1 <= rc <= 95:
            print("each_transport.py: transport %s: program exit status %d (tolerated)" % (t, rc))
            rc = 0
        if rc != 0:
            print("each_transport.py: transport %s: exit status %d" % (t, rc), flush=True)
            return rc if rc > 0 else 128 - rc
        if check is not None:
            p = prefixes.replace("@", t.upper())
            fc = subprocess.run([FILECHECK, check, "--check-prefixes=" + p] + fc_args,
                                input=run.stdout)
            if fc.returncode != 0:
                print("each_transport.py: transport %s: FileCheck --check-prefixes=%s failed"
                      % (t, p), flush=True)
                return fc.returncode
        if stats is not None:
            words = stats.replace("@", t).split(",")
            sc = subprocess.run([sys.executable, os.path.join(HERE, "statcheck.py")] + words,
                                input=run.stdout, stdout=subprocess.DEVNULL)
            if sc.returncode != 0:
                print("each_transport.py: transport %s: statcheck %s failed"
                      % (t, " ".join(words)), flush=True)
                return sc.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
