/* Cross-team min and max reductions over a permuted sequence. */
#include "example.h"

int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  const int N = 100003; /* prime, so (i * 7919) % N is a permutation */
  int lo = N, hi = -1;
  double dlo = 1e300, dhi = -1e300;
#pragma omp target teams distribute parallel for device(dev) num_teams(37)    \
    reduction(min : lo, dlo) reduction(max : hi, dhi) map(tofrom : lo, hi, dlo, dhi)
  for (int i = 0; i < N; ++i) {
    int v = (int)(((long)i * 7919) % N) - 5;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    double dv = v * 0.25;
    dlo = dv < dlo ? dv : dlo;
    dhi = dv > dhi ? dv : dhi;
  }
  KLE_CHECK(lo == -5, "min=%d want -5", lo);
  KLE_CHECK(hi == N - 6, "max=%d want %d", hi, N - 6);
  KLE_CHECK(dlo == -1.25, "dmin=%f want -1.25", dlo);
  KLE_CHECK(dhi == (N - 6) * 0.25, "dmax=%f want %f", dhi, (N - 6) * 0.25);
  return kle_finish("reduce_minmax", dev);
}
