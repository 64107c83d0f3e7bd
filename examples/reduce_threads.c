/* Cross-team reductions launched from 8 host threads at once, each into a
 * variable private to its iteration. (LLVM 22.1.8's libomp gets this wrong:
 * kle-offload issue 6.) */
#include "example.h"

#define THREADS 8
int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  const int N = 10000;
  long got[THREADS];
#pragma omp parallel for num_threads(THREADS)
  for (int t = 0; t < THREADS; ++t) {
    long s = 0;
#pragma omp target teams distribute parallel for device(dev) reduction(+ : s) \
    map(tofrom : s)
    for (int i = 0; i < N; ++i)
      s += t + 1;
    got[t] = s;
  }
  for (int t = 0; t < THREADS; ++t)
    KLE_CHECK(got[t] == (long)N * (t + 1), "thread %d sum=%ld want %ld", t,
              got[t], (long)N * (t + 1));
  return kle_finish("reduce_threads", dev);
}
