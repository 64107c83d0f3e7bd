"""For interleave-waits.test: checks kle-bench --interleave --waits poll,block
against whether the libomptarget it ran with exports the wait switch
(__kle_bench_set_wait, by llvm-nm -D): with it, every unit runs under both
waits; without it, the variants are skipped with exactly one note line.

  waits-check.py LIBOMPTARGET_SO RAW_JSON STDERR_FILE WANT_UNITS

WANT_UNITS: the units expected without waits, comma-separated (e.g.
copy,baseline,floor). Prints one line and exits 1 on a mismatch."""
import json
import subprocess
import sys

lib, raw, err, want = sys.argv[1:5]
syms = subprocess.run(["llvm-nm", "-D", "--defined-only", lib], capture_output=True,
                      text=True).stdout
hook = "__kle_bench_set_wait" in syms
doc = json.load(open(raw))
notes = [l for l in open(err) if l.startswith("kle-bench: note:")]
base = want.split(",")
if hook:
    units = [u + "/" + w for u in base if u != "floor" for w in ("poll", "block")] + \
        [u for u in base if u == "floor"]
    ok = doc["units"] == units and doc["waits"] == ["poll", "block"] and not notes
    print("waits: %s: every unit under poll and block: %s" % ("switch present",
                                                            "yes" if ok else "no"))
else:
    ok = doc["units"] == base and doc["waits"] == [] and len(notes) == 1
    print("waits: switch absent: skipped with one note: %s" % ("yes" if ok else "no"))
sys.exit(0 if ok else 1)
