/* A cross-team reduction over an array section: a histogram. */
#include "example.h"

#define BINS 16
int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  const int N = 1 << 18;
  long hist[BINS + 4];
  for (int b = 0; b < BINS + 4; ++b)
    hist[b] = -1; /* outside the section: must stay -1 */
  for (int b = 2; b < BINS + 2; ++b)
    hist[b] = 0;
#pragma omp target teams distribute parallel for device(dev) num_teams(96)    \
    reduction(+ : hist[2 : BINS]) map(tofrom : hist[2 : BINS])
  for (int i = 0; i < N; ++i)
    hist[2 + (i % BINS)] += 1;
  for (int b = 0; b < BINS + 4; ++b) {
    long want = (b >= 2 && b < BINS + 2) ? N / BINS : -1;
    KLE_CHECK(hist[b] == want, "hist[%d]=%ld want %ld", b, hist[b], want);
  }
  return kle_finish("reduce_array_section", dev);
}
