#!/usr/bin/env python3
"""Check the patch series' order and DEP-3 headers (docs/PATCHES.md).

    scripts/check-series.py [PATCHES_DIR]     (default: <repo>/patches)

Rules: every file named in `series` exists and its number prefix (NNNN-) is
larger than the one before, so `ls` reads in series order; the header (the
lines before the first `---`) starts with `Description:` and has `Author:`,
`Forwarded:` and `Last-Update: YYYY-MM-DD`; `Forwarded:` is `no` (an upstream
fix not sent; its Description then holds a ` Not forwarded: <why>` line),
`not-needed` (KLE glue) or an http(s) URL; `Bug:` only holds an upstream URL
(the project's issues go in `Bug-kle-offload:`); no upstream fix comes after
a glue patch. Prints one line per problem on stderr, exit status 1 if any.
"""
import os
import re
import sys


def header_fields(path):
    """The DEP-3 header as (first line, {field: value}, header lines)."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line == "---":
                break
            lines.append(line)
    fields = {}
    for line in lines:
        m = re.match(r"([A-Za-z][A-Za-z0-9-]*):\s*(.*)$", line)
        if m and not line.startswith(" "):
            fields.setdefault(m.group(1), m.group(2))
    return (lines[0] if lines else ""), fields, lines


def check(patches):
    problems = []
    series_path = os.path.join(patches, "series")
    try:
        with open(series_path, encoding="utf-8") as f:
            names = [l.split("#")[0].strip() for l in f]
    except OSError as e:
        return ["cannot read %s: %s" % (series_path, e.strerror)]
    names = [n for n in names if n]
    last_num, first_glue = -1, None
    for name in names:
        path = os.path.join(patches, name)
        where = "patches/" + name
        m = re.match(r"(\d{4})-", name)
        if not m:
            problems.append("%s: the name does not start with a 4-digit number" % where)
        elif int(m.group(1)) <= last_num:
            problems.append("%s: numbered %s after %04d; renumber so that ls reads in series order"
                            % (where, m.group(1), last_num))
        else:
            last_num = int(m.group(1))
        if not os.path.isfile(path):
            problems.append("%s: listed in series but missing" % where)
            continue
        first, fields, lines = header_fields(path)
        if not first.startswith("Description:"):
            problems.append("%s: the header does not start with 'Description:'" % where)
        for field in ("Author", "Forwarded", "Last-Update"):
            if field not in fields:
                problems.append("%s: no '%s:' field" % (where, field))
        if "Last-Update" in fields and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", fields["Last-Update"]):
            problems.append("%s: Last-Update '%s' is not YYYY-MM-DD" % (where, fields["Last-Update"]))
        fwd = fields.get("Forwarded")
        if fwd is not None and fwd not in ("no", "not-needed") and not re.match(r"https?://", fwd):
            problems.append("%s: Forwarded '%s' reads as forwarded under DEP-3; use 'no' "
                            "(with a ' Not forwarded: <why>' line), 'not-needed' or the upstream URL"
                            % (where, fwd))
        if fwd == "no" and not any(l.startswith(" Not forwarded: ") for l in lines):
            problems.append("%s: Forwarded: no without a ' Not forwarded: <why>' line in the Description"
                            % where)
        if "Bug" in fields and not re.match(r"https?://", fields["Bug"]):
            problems.append("%s: Bug '%s' is not an upstream URL; the project's issues go in "
                            "'Bug-kle-offload:'" % (where, fields["Bug"]))
        if fwd == "not-needed":
            first_glue = first_glue or name
        elif first_glue is not None:
            problems.append("%s: an upstream fix after the glue patch %s; upstream fixes come first"
                            % (where, first_glue))
    return problems


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    patches = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "patches")
    problems = check(patches)
    for p in problems:
        print("kle-offload: error: " + p, file=sys.stderr)
    if problems:
        return 1
    print("kle-offload: %s: series order and DEP-3 headers ok" % patches, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
