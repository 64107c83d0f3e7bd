// 10,000 nowait cross-team reduction launches leave the device memory and the
// pinned memory in use flat: measured with cuMemGetInfo after a warm-up of
// 1,000 launches and after the rest (LLVM 22.1.8 leaked two device
// allocations per nowait launch; patch 0001), and the pool's slab count.
// REQUIRES: gpu-nvidia
// RUN: %clang-gpu -O2 %s -o %t -ldl
// RUN: env %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: env %use-copy %run %t 2>&1 | %fcheck %s
// Copy again with libomptarget's memory manager off, so every allocation and
// free reaches the driver: tells the manager's free lists from the driver's
// own growth (copy grew 8 to 18 MiB on the H200, 2026-11-30).
// RUN: env %use-copy LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0 %run %t 2>&1 | %fcheck %s
// RUN: env %use-resident LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,RESIDENT %s
#include <dlfcn.h>
#include <stdio.h>

typedef int (*cu_fn)();
static size_t devFree(void) {
  static void *H;
  static int (*MemGetInfo)(size_t *, size_t *);
  if (!H) {
    H = dlopen("libcuda.so.1", RTLD_NOW);
    int (*Init)(unsigned) = (int (*)(unsigned))dlsym(H, "cuInit");
    int (*DevGet)(int *, int) = (int (*)(int *, int))dlsym(H, "cuDeviceGet");
    int (*Retain)(void **, int) =
        (int (*)(void **, int))dlsym(H, "cuDevicePrimaryCtxRetain");
    int (*SetCur)(void *) = (int (*)(void *))dlsym(H, "cuCtxSetCurrent");
    MemGetInfo = (int (*)(size_t *, size_t *))dlsym(H, "cuMemGetInfo_v2");
    int Dev;
    void *Ctx;
    Init(0);
    DevGet(&Dev, 0);
    Retain(&Ctx, Dev);
    SetCur(Ctx);
  }
  size_t Free = 0, Total = 0;
  MemGetInfo(&Free, &Total);
  return Free;
}

static void batch(int n, long *out) {
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < n; ++k) {
#pragma omp target teams distribute parallel for num_teams(8)                 \
    reduction(+ : out[k % 64 : 1]) map(tofrom : out[k % 64 : 1]) nowait
      for (int i = 0; i < 256; ++i)
        out[k % 64] += 1;
      if (k % 64 == 63) {
#pragma omp taskwait
      }
    }
#pragma omp taskwait
  }
}

int main(void) {
  static long out[64];
  batch(1000, out);
  size_t before = devFree();
  // The curve, not only the end points: bounded growth (a cache filling up to
  // the peak number of launches in flight) flattens, a leak does not.
  for (int b = 2; b <= 10; ++b) {
    batch(1000, out);
    printf("after %d launches: %ld bytes more than after 1000\n", b * 1000,
           (long)before - (long)devFree());
  }
  size_t after = devFree();
  long growth = (long)before - (long)after;
  printf("device memory growth over 9000 launches: %ld bytes (%s)\n", growth,
         growth < (4l << 20) ? "flat" : "GROWING");
  long total = 0;
  for (int k = 0; k < 64; ++k)
    total += out[k];
  printf("total=%ld\n", total);
  // Before the KLE stats line, which libomptarget prints at exit.
  fflush(stdout);
  return growth >= (4l << 20);
}
// CHECK: device memory growth over 9000 launches: {{-?[0-9]+}} bytes (flat)
// CHECK: total=2560000
// ZEROCOPY: launches copy=0 staged=0 zerocopy=10000 resident=0; fallbacks PoolExhausted=0 AllocationFailed=0 {{.*}}; slabs={{[12]}} peak_slots_in_use={{[0-9]+}}
// RESIDENT: launches copy=0 staged=0 zerocopy=0 resident=10000; fallbacks PoolExhausted=0 AllocationFailed=0 {{.*}}; slabs={{[12]}} peak_slots_in_use={{[0-9]+}}
