// An injected cuLaunchKernel failure must produce a clear error and must not
// hang (the %run timeout would fire).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// libomptarget aborts ("offloading is mandatory"), hence not --crash.
// RUN: %standin-env KLE_STANDIN_FAIL=cuLaunchKernel:2:719 not --crash %run %t 2>&1 | %fc
#include <stdio.h>
#define N 1024
int main(void) {
  for (int k = 0; k < 4; ++k) {
    long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
    for (int i = 0; i < N; ++i) s += i;
    printf("launch %d ok\n", k);
    fflush(stdout);
  }
  printf("unreachable\n");
  return 0;
}
// CHECK: launch 0 ok
// CHECK: kle-standin: injected failure: cuLaunchKernel call #2 -> 719
// CHECK: error in cuLaunchKernel for '__omp_offloading_{{.*}}': unspecified launch failure
// CHECK-NOT: unreachable
// CHECK-NOT: VIOLATION
