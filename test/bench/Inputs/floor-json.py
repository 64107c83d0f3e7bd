"""One line per distribution of a `klebench.py compare` JSON: benchmark,
transport, floor samples and whether CPU times are there (floor-standin.test)."""
import json
import sys

d = json.load(open(sys.argv[1]))
for x in d["distributions"]:
    print("%s %s x_floor=%d cpu=%s/%s" % (x["benchmark"], x["transport"], len(x.get("x_floor", [])),
                                         "cpu_us" in x, "cpu_per_wall" in x))
