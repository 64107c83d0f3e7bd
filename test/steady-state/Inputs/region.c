/* N synchronous target regions, each a teams reduction with its own tofrom
 * map (the entry is created, copied in, copied back and deleted per region),
 * after one region outside the count (device and image start-up). Prints
 * the sum, which is N * 256 + 256 on a device that runs kernels. */
#include <stdio.h>
#include <stdlib.h>

static long region(void) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : s) \
    map(tofrom : s)
  for (int i = 0; i < 256; ++i)
    s += 1;
  return s;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100;
  long t = region();
  for (int k = 0; k < n; ++k)
    t += region();
  printf("done n=%d sum=%ld\n", n, t);
  return 0;
}
