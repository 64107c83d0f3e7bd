// 16 host threads, each launching reduction kernels and synchronising.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %standin-env KLE_STANDIN_DELAY_US=0:300 %run %t 2>&1 | %fcheck %s
#include <stdio.h>
#define N 1024
int main(void) {
  int launched = 0;
#pragma omp parallel num_threads(16) reduction(+ : launched)
  {
    for (int k = 0; k < 4; ++k) {
      long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
      for (int i = 0; i < N; ++i) s += i;
      ++launched;
    }
  }
  printf("done launched=%d\n", launched);
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done launched=64
// CHECK: kle-standin: live device=0 pinned=0 managed=0
// CHECK: kle-standin: launches=64 violations=0
