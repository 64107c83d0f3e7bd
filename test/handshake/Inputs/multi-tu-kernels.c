// multi-tu.test: the only unit with kernels (built against the stock
// DeviceRTL there); it calls a `declare target` function of another unit.
#include <stdio.h>
#pragma omp declare target
long twice(long i);
#pragma omp end declare target
int main(void) {
  long s = 0;
  for (int k = 0; k < 4; ++k) {
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : s) map(tofrom : s)
    for (int i = 0; i < 1000; ++i)
      s += twice(i);
  }
  printf("done %s\n", s >= 0 ? "ok" : "?");
  fflush(stdout);
  return 0;
}
