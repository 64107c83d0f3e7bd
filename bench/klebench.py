#!/usr/bin/env python3
"""kle-offload's measuring tool: one command over bench/kle/.

  klebench.py compare        the KLE transports, the no-KLE baseline and the
                             floor interleaved launch by launch in one
                             kle-bench process; --ab: two kle-bench builds
  klebench.py instructions   host instructions per launch per transport
                             (callgrind, CUDA driver stand-in)
  klebench.py launch-cost    the whole launch path, the fork against stock
                             LLVM (instructions, calls, latency)
  klebench.py plot           draw a compare run's JSON
  klebench.py transports     the transports, space-separated (for scripts)
  klebench.py stats-summary  the KLE stats lines on stdin summed into one
                             line; exit status 1 and no output without one

`klebench.py COMMAND --help` describes each (docs/BENCHMARKS.md). Errors are
one line "klebench COMMAND: error: ..." on stderr."""
import importlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ in bench/ or the GPU bundle
from kle import common  # noqa: E402

COMMANDS = {"compare": "kle.compare", "instructions": "kle.instructions",
            "launch-cost": "kle.launch_cost", "plot": "kle.plot",
            "transports": None, "stats-summary": None}

def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        common.die("klebench", "unknown command %r (commands: %s)"
                   % (cmd, ", ".join(COMMANDS)), 2)
    common.PROG = "klebench " + cmd
    if COMMANDS[cmd]:
        return importlib.import_module(COMMANDS[cmd]).main(rest) or 0
    if rest:
        common.die(common.PROG, "takes no arguments, not %r" % " ".join(rest), 2)
    line = " ".join(common.TRANSPORTS) if cmd == "transports" else \
        common.stats_summary(common.parse_stats(sys.stdin.read()))
    if line:  # stats-summary: exit status 1 and no output without a stats line
        print(line)
    return 0 if line else 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
