// An injected cuMemAllocHost failure (first and every later call) must not
// break offloading: a pinned KLE pool has to fall back (or not be used at
// all, as upstream).  The program completes with no violations.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %cuda-run KLE_STANDIN_FAIL=cuMemAllocHost:1+:2 %t 2>&1 | %fcheck %s
#include <stdio.h>
#define N 1024
int main(void) {
  for (int k = 0; k < 8; ++k) {
    long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
    for (int i = 0; i < N; ++i) s += i;
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: kle-standin: launches=8 violations=0
