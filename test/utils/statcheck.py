#!/usr/bin/env python3
"""Check fields of a stats line by name (lit: %statcheck; test/lit.cfg.py).

Usage: statcheck.py [-d N | -l TEXT] [-i FILE] FIELD=SPEC ...

Reads FILE (default stdin) and checks every line that is libomptarget's KLE
report for device N (default 0: "omptarget KLE stats: device 0: launches
...", not its copy-back line), or with -l every line containing TEXT (e.g.
"kle-standin: launches="). At least one line must be selected. On each, the `name=value` words are the fields; every
FIELD must be there and match SPEC:
  a number   equal to it
  +          a number of at least 1
  *          present, any value
FIELD is a field's name or a prefix of exactly one field's name on the line
(host_ns for host_ns_per_launch_in_kle_path). Two pseudo-fields of the KLE
report: launches=SPEC, the sum of the launches per transport, and rest=0:
the report has every transport's launch count and its fallbacks, and every
launch and fallback count not named is 0.

Copies its input to stdout, so it can stand in a pipeline before FileCheck
(%cuda-run ... 2>&1 | %statcheck copy=8 rest=0 | %fcheck %s). On stderr,
each mismatch with its line; exits 1 on any mismatch or a missing field or
line, 2 on bad usage.
"""
import re
import sys

LAUNCH = ("copy", "staged", "zerocopy", "resident")


def fields(line):
    """[(name, value)] for each name=value word, in order."""
    return re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=([^\s;,]*)", line)


def match(value, spec):
    if spec == "*":
        return True
    if not re.fullmatch(r"[0-9]+", value):
        return False
    return int(value) >= 1 if spec == "+" else int(value) == int(spec)


def check_line(line, specs):
    got = fields(line)
    names = [n for n, _ in got]
    vals = dict(got)
    errors, named = [], set()
    for key, spec in specs:
        if key == "rest":
            continue
        if key == "launches" and "launches" not in vals and all(t in vals for t in LAUNCH):
            total = str(sum(int(vals[t]) for t in LAUNCH if vals[t].isdigit()))
            named.update(LAUNCH)
            if not match(total, spec):
                errors.append("launches (the sum) is %s, want %s" % (total, spec))
            continue
        cands = [key] if key in vals else sorted({n for n in names if n.startswith(key)})
        if not cands:
            errors.append("no field %s" % key)
            continue
        if len(cands) > 1:
            errors.append("%s names more than one field: %s" % (key, ", ".join(cands)))
            continue
        named.add(cands[0])
        if not match(vals[cands[0]], spec):
            errors.append("%s=%s, want %s" % (cands[0], vals[cands[0]], spec))
    if ("rest", "0") in specs:
        # Launch counts come before "fallbacks", fallback counts before "slabs".
        if "omptarget KLE stats:" in line and not (
                all(t in vals for t in LAUNCH) and "; fallbacks " in line):
            errors.append("rest=0: not a report with every launch count and fallbacks")
        head = line.split("slabs=")[0]
        for n, v in fields(head.split("omptarget KLE stats:")[-1]):
            if n not in named and v != "0":
                errors.append("%s=%s, want 0 (rest=0)" % (n, v))
    return errors


def main(argv):
    selector, path, specs = "omptarget KLE stats: device 0: launches ", None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-d", "-l", "-i") and i + 1 < len(argv):
            if a == "-d":
                selector = "omptarget KLE stats: device %s: launches " % argv[i + 1]
            elif a == "-l":
                selector = argv[i + 1]
            else:
                path = argv[i + 1]
            i += 2
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=([0-9]+|\+|\*)", a)
        if not m or (m.group(1) == "rest" and m.group(2) != "0"):
            print("statcheck: bad argument %r (want FIELD=N, FIELD=+, FIELD=* or rest=0)" % a,
                  file=sys.stderr)
            return 2
        specs.append((m.group(1), m.group(2)))
        i += 1
    if not specs:
        print("statcheck: no FIELD=SPEC given", file=sys.stderr)
        return 2
    text = open(path).read() if path else sys.stdin.read()
    sys.stdout.write(text)
    sys.stdout.flush()
    lines = [l for l in text.splitlines() if selector in l]
    if not lines:
        print("statcheck: no line containing %r" % selector, file=sys.stderr)
        return 1
    bad = 0
    for line in lines:
        errors = check_line(line, specs)
        if errors:
            print("statcheck: in: " + line, file=sys.stderr)
        for e in errors:
            print("statcheck: error: " + e, file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
