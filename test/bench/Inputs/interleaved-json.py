"""For compare-quick.test: the shape of a kle-interleaved.json. Prints
one line per check: every benchmark has a "paired" entry per transport and
reference (copy for every transport but copy, baseline for all) with the
keys benchmark, transport, reference, median_diff_us, ci_low_us, ci_high_us,
and low <= median <= high; "kle_cost" has a row per transport and benchmark.
argv: JSON, comma-separated transports."""
import argparse
import json

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("json")
ap.add_argument("transports")
a = ap.parse_args()
doc = json.load(open(a.json))
doc["paired"] = [p for p in doc["paired"] if p["measure"] == "end_to_end"]
ts = a.transports.split(",")
keys = {"benchmark", "measure", "transport", "reference", "median_diff_us", "ci_low_us", "ci_high_us"}
for name in sorted({p["benchmark"] for p in doc["paired"]}):
    got = {(p["transport"], p["reference"]): p for p in doc["paired"] if p["benchmark"] == name}
    want = [(t, "copy") for t in ts if t != "copy"] + [(t, "baseline") for t in ts]
    missing = [w for w in want if w not in got]
    badkeys = [k for k, p in got.items() if not keys <= set(p)]
    badci = [k for k, p in got.items() if not p["ci_low_us"] <= p["median_diff_us"] <= p["ci_high_us"]]
    print("%s: %s" % (name, "every pair, keys and CI ok" if not (missing or badkeys or badci)
                      else "missing %s, keys %s, CI %s" % (missing, badkeys, badci)))
cost = {(r["benchmark"], r["transport"]) for r in doc["kle_cost"]}
names = {p["benchmark"] for p in doc["paired"]}
print("kle_cost: %s" % ("a row per transport and benchmark"
                        if cost == {(n, t) for n in names for t in ts} else sorted(cost)))
