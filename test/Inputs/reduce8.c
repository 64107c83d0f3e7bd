/* 8 synchronous launches of a kernel with a cross-team reduction. */
#include <stdio.h>
int main(void) {
  for (int k = 0; k < 8; ++k) {
    long s = 0;
#pragma omp target teams distribute parallel for num_teams(16) reduction(+ : s) map(tofrom : s)
    for (int i = 0; i < 1024; ++i)
      s += i;
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
