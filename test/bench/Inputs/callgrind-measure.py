"""kle.instructions.measure() of a callgrind file (instructions-path.test):
BENCH_DIR CALLGRIND_FILE."""
import sys

sys.path.insert(0, sys.argv[1])
import kle.instructions as ki  # noqa: E402

m = ki.measure(sys.argv[2])
print("total", m["total"], "kle", m["kle"], "alloc", m["kle_data_alloc"])
for k, v in sorted(m["kle_entries"].items()):
    print("entry", k, *v)
