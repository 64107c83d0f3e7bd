/* One slot, reused by synchronous launches whose teams-reduction buffer
 * grows once: n launches reducing one long, n reducing eight, n reducing one
 * long again. The slot keeps the largest buffer, so the KLE's bytes change
 * exactly twice: at the slot's first use and when the buffer grows. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  long s = 0, v[8] = {0};
#pragma omp target data map(tofrom : s, v)
  {
    for (int k = 0; k < n; ++k) {
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : s)
      for (int i = 0; i < 256; ++i)
        s += 1;
    }
    for (int k = 0; k < n; ++k) {
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : v)
      for (int i = 0; i < 256; ++i)
        v[i % 8] += 1;
    }
    for (int k = 0; k < n; ++k) {
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : s)
      for (int i = 0; i < 256; ++i)
        s += 1;
    }
  }
  printf("done n=%d\n", n);
  fflush(stdout);
  return 0;
}
