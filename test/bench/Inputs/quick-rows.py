"""For kle-compare-quick.test: per KLE benchmark of a kle-compare.json, whether
it has a row for every transport of klebench.TRANSPORTS and a baseline row,
each with a median inside its 95% CI. argv: JSON, bench dir."""
import json
import sys

sys.path.insert(0, sys.argv[2])
from klebench import TRANSPORTS  # noqa: E402

rows = json.load(open(sys.argv[1]))["results"]
by = {}
for r in rows:
    by.setdefault(r["benchmark"], {})[r["transport"]] = r


def base_of(name):
    return name.replace("SyncReduction", "SyncBaseline").replace(
        "PipelinedReduction", "PipelinedBaseline")


for name in sorted(by):
    if "Baseline" in name:
        continue
    have = by[name]
    base = by.get(base_of(name), {}).get("baseline") or have.get("baseline")
    missing = [t for t in TRANSPORTS if t not in have] + ([] if base else ["baseline"])
    bad = [t for t, r in list(have.items()) + [("baseline", base)] if r and not
           (r["ci95_lo_s"] <= r["median_s"] <= r["ci95_hi_s"])]
    print("%s: %s" % (name, "baseline + all transports, median within CI"
                      if not missing and not bad else "missing %s, CI off %s" % (missing, bad)))
