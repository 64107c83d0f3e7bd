"""kle.stats.paired_median_ci and verdict on a fixed sample
(paired-ci-small.test): "small" (two differences, too few to resample) or
"big" (60 differences)."""
import sys

import kle.stats as k

if sys.argv[1] == "small":
    m, l, h = k.paired_median_ci([1.0, 3.0])
    print("small", m, l, h, k.verdict(l, h))
else:
    m, l, h = k.paired_median_ci([5.0 + (i % 3) for i in range(60)])
    print("big", m, l <= m <= h, k.verdict(l, h))
