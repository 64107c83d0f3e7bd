// A failing pinned (host fine-grained pool) allocation for the KLE slab must
// not break offloading: zerocopy falls back to copy per launch, counted as
// AllocationFailed, and the program completes with no violations and nothing
// live. The slab is the 4th fine-grained allocation of this program (the
// plugin's staging buffers and the device environment come first); a fault on
// an earlier one fails a data copy instead, which is not what this tests.
// REQUIRES: hsa-standin
// RUN: %clang-gfx90a %s -o %t
// RUN: %hsa-run KLE_STANDIN_FAIL=hsa_amd_memory_pool_allocate@fine:4:HSA_STATUS_ERROR_OUT_OF_RESOURCES \
// RUN:   %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %t 2>&1 \
// RUN:   | %statcheck copy=8 AllocationFailed=8 rest=0 slabs=0 | %fc
#include <stdio.h>
#define N 1024
int main(void) {
  static int a[N];
  for (int i = 0; i < N; ++i) a[i] = i;
#pragma omp target data map(to : a[0:N])
  for (int k = 0; k < 8; ++k) {
    long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
    for (int i = 0; i < N; ++i) s += a[i];
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK: kle-hsa-standin: injected failure: hsa_amd_memory_pool_allocate@fine call #4 -> 4105
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// CHECK: kle-hsa-standin: launches=8 violations=0
