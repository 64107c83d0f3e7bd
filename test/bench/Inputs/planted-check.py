"""For interleave-planted.test: checks what `klebench.py compare` reported
for a difference planted on the CUDA driver stand-in, and shows (without a
verdict) what one process per transport reports for the same budget.

  planted-check.py --compare kle-interleaved.json --planted-us P
                   --per-process resident.json copy.json

Prints, for LaunchLatency/teams:1,
  interleaved: resident - copy = M us [LO..HI]; planted -P us
  within 30%: yes|no
  CI excludes 0: yes|no
  null: zerocopy - resident = M us [LO..HI]; |median| <= 15% of planted: yes|no
        (the paired median of the per-cycle samples in the JSON)
  per process (same launches, not checked): resident - copy = M us [LO..HI]
and exits 1 if a check says no."""
import argparse
import json

from kle import common, stats
from kle.compare import parse_interleaved

numpy, _ = common.require_scipy("planted-check")

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--compare", required=True)
ap.add_argument("--planted-us", type=float, required=True)
ap.add_argument("--per-process", nargs=2, metavar=("RESIDENT_JSON", "COPY_JSON"))
a = ap.parse_args()
name = "LaunchLatency/teams:1"
paired = {(p["transport"], p["reference"]): p
          for p in json.load(open(a.compare))["paired"]
          if p["benchmark"] == name and p["measure"] == "end_to_end"}
ok = True
r = paired[("resident", "copy")]
want = -a.planted_us
print("interleaved: resident - copy = %.0f us [%.0f..%.0f]; planted %.0f us"
      % (r["median_diff_us"], r["ci_low_us"], r["ci_high_us"], want))
within = abs(r["median_diff_us"] - want) <= 0.3 * a.planted_us
excl = r["ci_high_us"] < 0 or r["ci_low_us"] > 0
print("within 30%%: %s" % ("yes" if within else "no"))
print("CI excludes 0: %s" % ("yes" if excl else "no"))
doc = json.load(open(a.compare))
units = doc["units"]
ns = numpy.array(doc["samples_ns"][name])
null = stats.paired_median_ci((ns[:, units.index("zerocopy")] -
                               ns[:, units.index("resident")]) / 1e3)
small = abs(null[0]) <= 0.15 * a.planted_us
print("null: zerocopy - resident = %.0f us [%.0f..%.0f]; |median| <= 15%% of planted: %s"
      % (null + ("yes" if small else "no",)))
ok = within and excl and small
if a.per_process:
    med = []
    for f in a.per_process:
        b = parse_interleaved(open(f).read())[name]
        med.append(b["samples"][:, 0] / 1e3)
    rng = numpy.random.default_rng(1)
    boots = [numpy.median(rng.choice(med[0], med[0].size)) -
             numpy.median(rng.choice(med[1], med[1].size)) for _ in range(2000)]
    print("per process (same launches, not checked): resident - copy = %.0f us [%.0f..%.0f]"
          % (numpy.median(med[0]) - numpy.median(med[1]),
             numpy.percentile(boots, 2.5), numpy.percentile(boots, 97.5)))
raise SystemExit(0 if ok else 1)
