/* Several nowait cross-team reductions in flight, then one taskwait.
 * (LLVM 22.1.8's libomp hangs here: kle-offload issue 6.) */
#include "example.h"

#define LAUNCHES 8
int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  long s[LAUNCHES];
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int k = 0; k < LAUNCHES; ++k) {
      s[k] = 0;
#pragma omp target teams distribute parallel for device(dev)                   \
    reduction(+ : s[k : 1]) map(tofrom : s[k : 1]) nowait
      for (int i = 0; i < 64; ++i)
        s[k] += k + 1;
    }
#pragma omp taskwait
  }
  for (int k = 0; k < LAUNCHES; ++k)
    KLE_CHECK(s[k] == 64L * (k + 1), "launch %d sum=%ld want %ld", k, s[k],
              64L * (k + 1));
  return kle_finish("reduce_nowait", dev);
}
