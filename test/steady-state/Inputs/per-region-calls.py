#!/usr/bin/env python3
"""Driver calls per region: the difference of two stand-in STATS_FILEs
("<entry> <calls>" lines; "#" lines skipped) of the same program run for N1 and N2 regions,
divided by N2 - N1. Prints "per-region <entry>=<calls>" for every entry whose
count changed, sorted by name, then "per-region total=<calls>". A difference
that is not a whole multiple of N2 - N1 prints as a fraction (a=b/c), so a
call that is not made once per region in steady state shows.

Usage: per-region-calls.py STATS1 N1 STATS2 N2
"""
import sys
from fractions import Fraction


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and not parts[0].startswith("#"):
                out[parts[0]] = int(parts[1])
    return out


def main():
    args = sys.argv[1:]
    if len(args) != 4:
        sys.exit("usage: per-region-calls.py STATS1 N1 STATS2 N2")
    a, n1, b, n2 = read(args[0]), int(args[1]), read(args[2]), int(args[3])
    if n2 <= n1:
        sys.exit("per-region-calls.py: want N2 > N1")
    total = Fraction(0)
    for name in sorted(set(a) | set(b)):
        d = Fraction(b.get(name, 0) - a.get(name, 0), n2 - n1)
        if d:
            total += d
            print("per-region %s=%s" % (name, d))
    print("per-region total=%s" % total)


if __name__ == "__main__":
    main()
