// 32 nowait reduction target regions in flight, then one taskwait.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %standin-env KLE_STANDIN_DELAY_US=50:500 %run %t 2>&1 | %fcheck %s
#include <stdio.h>
#define N 1024
int main(void) {
  long s[32] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < 32; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : s[k]) map(tofrom : s[k]) nowait
      for (int i = 0; i < N; ++i) s[k] += i;
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: kle-standin: live device=0 pinned=0 managed=0
// CHECK: kle-standin: launches=32 violations=0
