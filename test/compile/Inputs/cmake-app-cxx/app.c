#include <stdio.h>
int main(void) {
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s)
  for (int i = 1; i <= 100; ++i)
    s += i;
  printf("sum=%ld\n", s);
  return s != 5050;
}
