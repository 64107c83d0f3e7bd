/* Cross-team sum reductions (the launches that carry a KLE), over a range of
 * team counts, in integer and floating point. */
#include "example.h"

int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  const int N = 1 << 20;
  int teams[] = {1, 2, 7, 64, 1024};
  for (unsigned t = 0; t < sizeof(teams) / sizeof(teams[0]); ++t) {
    long s = 0;
    double d = 0.0;
#pragma omp target teams distribute parallel for device(dev) num_teams(teams[t]) \
    reduction(+ : s, d) map(tofrom : s, d)
    for (int i = 0; i < N; ++i) {
      s += i;
      d += 0.5;
    }
    long want = (long)N * (N - 1) / 2;
    KLE_CHECK(s == want, "teams=%d sum=%ld want %ld", teams[t], s, want);
    KLE_CHECK(d == N * 0.5, "teams=%d dsum=%f want %f", teams[t], d, N * 0.5);
  }
  return kle_finish("reduce_sum", dev);
}
