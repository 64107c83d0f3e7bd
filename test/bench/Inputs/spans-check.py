"""For interleave-spans.test: the device-span and kernel-only pairs of a
kle-interleaved.json against a planted host-to-device copy time. One line per
transport and measure; exit status 1 if a check says no."""
import argparse
import json

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("json")
ap.add_argument("--planted-us", type=float, required=True)
a = ap.parse_args()
pairs = {(p["transport"], p["measure"]): p for p in json.load(open(a.json))["paired"]
         if p["benchmark"] == "LaunchLatency/teams:1" and p["reference"] == "baseline"}
ok = True
for t in ("copy", "resident", "zerocopy"):
    for m in ("device_span", "kernel_only"):
        p = pairs[(t, m)]
        if (t, m) == ("copy", "device_span"):
            good = p["median_diff_us"] >= a.planted_us and p["ci_low_us"] > 0
            print("%s %s - baseline: %.1f us [%.1f..%.1f]: at least the planted %.0f us, "
                  "CI above 0: %s" % (t, m, p["median_diff_us"], p["ci_low_us"],
                                      p["ci_high_us"], a.planted_us, "yes" if good else "no"))
        else:
            good = abs(p["median_diff_us"]) <= 100
            print("%s %s - baseline: %.1f us: within 100 us: %s"
                  % (t, m, p["median_diff_us"], "yes" if good else "no"))
        ok = ok and good
raise SystemExit(0 if ok else 1)
