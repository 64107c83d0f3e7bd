// A failed free of the transport's memory at device deinit (here the first
// cuMemFreeHost, a slab's pinned half) is reported, and the device's own
// teardown still runs: everything else is freed and the context released.
// Before 2026-12-01 the plugin's deinit returned at that error, which
// libomptarget drops outside debug builds: exit status 0 without a word, the
// module, the memory manager's buffers and the context never released
// (`live device=8 pinned=1 ... at=exit(contexts-still-active)`).
// Found by a new-user trial. Copy allocates no pinned slabs: not run.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %cuda KLE_STANDIN_FAIL=cuMemFreeHost:1:1 %use-zerocopy %t | %fc
// RUN: %cuda KLE_STANDIN_FAIL=cuMemFreeHost:1:1 %use-resident %t | %fc
// RUN: %cuda KLE_STANDIN_FAIL=cuMemFreeHost:1:1 %use-staged %t | %fc
#include <stdio.h>
#define N 1024
int main(void) {
  static long s[8];
  for (int k = 0; k < 8; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : s[k])         \
    map(tofrom : s[k]) nowait
    for (int i = 0; i < N; ++i)
      s[k] += i;
  }
#pragma omp taskwait
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: kle-standin: injected failure: cuMemFreeHost call #1
// CHECK: "PluginInterface" message: warning: KLE: device 0: freeing the transport's memory at deinit failed (the device's teardown continues): {{.+}}
// Only the pinned half of the slab whose free failed is left; the context
// is released (not "contexts-still-active").
// CHECK: kle-standin: live device=0 pinned=1 managed=0 {{.*}} at=cuDevicePrimaryCtxRelease
// CHECK: kle-standin: launches=8 violations=0
