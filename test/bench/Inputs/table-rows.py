"""Whether the transport table (OUT) has a row per transport of
kle.common.TRANSPORTS with the examples all OK (transport-table-standin.test):
BENCH_DIR OUT."""
import sys

sys.path.insert(0, sys.argv[1])
from kle.common import TRANSPORTS  # noqa: E402

out = open(sys.argv[2]).read().splitlines()
ok = all(any(l.startswith(t + " ") and "examples 6/6 OK" in l for l in out) for t in TRANSPORTS)
print("rows:", "all" if ok else "missing")
