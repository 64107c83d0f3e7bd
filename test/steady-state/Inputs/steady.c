/* N synchronous launches of a teams reduction whose variable is already
 * present (target data), so the only per-launch transfers are the KLE's. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100;
  long s = 0;
#pragma omp target data map(tofrom : s)
  for (int k = 0; k < n; ++k) {
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : s)
    for (int i = 0; i < 256; ++i)
      s += 1;
  }
  printf("done n=%d\n", n);
  return 0;
}
