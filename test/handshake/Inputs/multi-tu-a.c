// First translation unit of multi-tu.test: a teams reduction and main.
#include <stdio.h>
long reduce_b(int n);
long reduce_a(int n) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < n; ++i)
    s += i;
  return s;
}
int main(void) {
  long t = 0;
  for (int k = 0; k < 4; ++k)
    t += reduce_a(1000) + reduce_b(1000);
  printf("done %s\n", t >= 0 ? "ok" : "?");
  fflush(stdout);
  return 0;
}
