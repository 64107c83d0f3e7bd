// A failing hsa_queue_create (the first queue is created at device init) gives
// one clear error naming the call, the device is not used (the program runs
// its target regions on the host), and the stand-in sees nothing live.
// REQUIRES: hsa-standin
// RUN: %clang-gfx90a %s -o %t
// RUN: %hsa KLE_STANDIN_FAIL=hsa_queue_create:1:HSA_STATUS_ERROR_OUT_OF_RESOURCES %t | %fc
#include <omp.h>
#include <stdio.h>
int main(void) {
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
  for (int i = 0; i < 1024; ++i) s += i;
  printf("done s=%ld\n", s);
  fflush(stdout);
  return 0;
}
// CHECK: kle-hsa-standin: injected failure: hsa_queue_create call #1 -> 4105
// CHECK: error: Failure to initialize device 0: {{.*}} error in hsa_queue_create: out of resources
// CHECK: done s=523776
// CHECK: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// CHECK: kle-hsa-standin: launches=0 violations=0
