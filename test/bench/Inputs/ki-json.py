"""Summaries of `klebench.py instructions --out` JSON that the test checks
(kle-instructions-standin.test): "path" (zerocopy below copy and staged,
driver calls per launch on the KLE path, the run's meta) or "alloc"
(allocations on the KLE path per transport)."""
import json
import sys

mode, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
r = d["results"]
if mode == "path":
    x = {t: r[t]["kle_path_excl_driver"] for t in r}
    print("excl. driver: zerocopy below copy", x["zerocopy"] < x["copy"],
          "below staged", x["zerocopy"] < x["staged"])
    print("driver calls on the KLE path per launch:",
          *["%s=%s" % (t, ",".join("%s:%.2f" % (k, v["calls"])
                                   for k, v in sorted(r[t]["kle_driver_entry_points"].items())
                                   if v["calls"] >= 0.5) or "-")
            for t in ("zerocopy", "resident", "staged", "copy")])
    m = d["meta"]
    print(m["driver"], m["host_side_only"], m["launches"], m["repeat"],
          d["target"]["metric"], type(d["target"]["met"]).__name__)
else:
    print("allocations on the KLE path: zerocopy none", abs(r["zerocopy"]["allocations"]) < 50,
          "resident none", abs(r["resident"]["allocations"]) < 50,
          "staged some", r["staged"]["allocations"] > 100,
          "copy some", r["copy"]["allocations"] > 100)
