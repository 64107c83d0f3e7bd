// A burst of 1,024 nowait reductions over an 8-element long array (64 KiB
// teams-reduction buffer each): the reduction buffers that pool slots keep
// are bounded in total (LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL, 4 MiB by
// default), so afterwards the program can still allocate all but 8 MiB of
// the device memory that was free before the burst, under every transport.
// Without the total bound, slots kept one 64 KiB buffer each, up to 782 MiB
// at the default slot caps.
// With a margin of 256 KiB, below what the slots keep after such a burst (1
// to 4 MiB: 16 to 64 slots in flight at the peak), the allocation succeeds
// only because a failed device allocation makes the transport give
// back the buffers of free slots and the allocation is retried (patch 0043,
// KLETransportTy::reclaimSlotBuffers); before that it failed under zerocopy,
// resident and staged, and succeeded under copy.
// CUDA only: the program measures free device memory with cuMemGetInfo (the
// HSA stand-in reports no free-memory figure to measure it with).
// REQUIRES: cuda-standin
// DEFINE: %{k} = %cuda KLE_STANDIN_KERNEL_US=2000
// DEFINE: %{stats} = LIBOMPTARGET_KLE_STATS=1
// RUN: %clang-sm90 -O2 %s -o %t -ldl
// RUN: %{k} %use-zerocopy %{stats} %t | %fc
// RUN: %{k} %use-resident %{stats} %t | %fc
// RUN: %{k} %use-staged %{stats} %t | %fc
// RUN: %{k} %use-copy %{stats} %t | %fc
// RUN: %cuda-each -x copy -p TIGHT,RECLAIM KLE_STANDIN_KERNEL_US=2000 LIBOMPTARGET_INFO=32 %t 256
// RUN: %{k} %use-copy %t 256 | %fc=TIGHT
// After the buffers were given back, resident slots rewrite their KLE with
// the new buffer: a second burst under resident still computes, and the
// stand-in checks every launch's placement and KLE bytes.
// RUN: %cuda %as-resident KLE_STANDIN_KERNEL_US=2000 %t 256 again | %fc=AGAIN
// The bound holds exactly: at 128 KiB (two buffers) the peak stays within
// it however many slots grow at once, where without a bound every slot in use
// at the peak keeps its own 64 KiB; the launches past the bound allocate per
// launch.
// RUN: %{k} %use-zerocopy LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=131072 %{stats} %t | %fc=BOUND
// RUN: %{k} %use-zerocopy LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=1099511627776 %{stats} %t | %fc=UNBOUNDED
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static size_t devFree(void) {
  void *H = dlopen("libcuda.so.1", RTLD_NOW);
  int (*MemGetInfo)(size_t *, size_t *) =
      (int (*)(size_t *, size_t *))dlsym(H, "cuMemGetInfo_v2");
  int (*Retain)(void **, int) =
      (int (*)(void **, int))dlsym(H, "cuDevicePrimaryCtxRetain");
  int (*SetCur)(void *) = (int (*)(void *))dlsym(H, "cuCtxSetCurrent");
  void *Ctx;
  Retain(&Ctx, 0);
  SetCur(Ctx);
  size_t Free = 0, Total = 0;
  MemGetInfo(&Free, &Total);
  return Free;
}

static void burst(long *v) {
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < 1024; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : v[0 : 8]) nowait
      for (int i = 0; i < 256; ++i)
        v[i % 8] += 1;
    }
#pragma omp taskwait
  }
}

// argv[1]: the margin in KiB (default 8192); argv[2] "again": a second
// burst after the allocation was freed.
int main(int argc, char **argv) {
  static long v[8];
  size_t margin = (size_t)(argc > 1 ? atoi(argv[1]) : 8192) << 10;
  // Load the image and create the device's state first.
#pragma omp target map(tofrom : v)
  v[0] = 0;
  size_t before = devFree();
  burst(v);
  size_t want = before - margin;
  void *p = omp_target_alloc(want, 0);
  printf("allocated all but %zu KiB of what was free before the burst: %s\n",
         margin >> 10, p ? "yes" : "no");
  omp_target_free(p, 0);
  if (argc > 2) {
    for (int k = 0; k < 8; ++k)
      v[k] = 0;
    burst(v);
    printf("second burst: v[0]=%ld v[7]=%ld\n", v[0], v[7]);
  }
  fflush(stdout);
  return p == NULL;
}
// CHECK: allocated all but 8192 KiB of what was free before the burst: yes
// RECLAIM: KLE: a device allocation failed; gave back {{[1-9][0-9]*}} bytes of reduction buffers kept by free slots
// TIGHT: allocated all but 256 KiB of what was free before the burst: yes
// AGAIN-NOT: VIOLATION
// AGAIN: allocated all but 256 KiB of what was free before the burst: yes
// AGAIN: second burst: v[0]=
// AGAIN: omptarget KLE stats: {{.*}} resident=2048;
// AGAIN: kle-standin: launches={{[0-9]+}} violations=0
// CHECK: omptarget KLE stats: {{.*}} slot_buffer_bytes_peak={{[0-9]+}}
// BOUND: omptarget KLE stats: {{.*}} slot_buffer_bytes_peak={{(0|65536|131072) }}
// Unbounded: at least 16 slots in use at the peak and 1 MiB of buffers (a
// slot that was free at the peak may keep its buffer too, so the bytes can
// exceed 64 KiB per slot in use: 457 buffers for 454 slots once, on 2 loaded
// cores; typically 650 to 720 slots, 64 KiB each).
// UNBOUNDED: omptarget KLE stats: {{.*}} peak_slots_in_use={{(1[6-9]|[2-9][0-9]|[1-9][0-9][0-9]+)}} 
// UNBOUNDED-SAME: slot_buffer_bytes_peak={{[1-9][0-9][0-9][0-9][0-9][0-9][0-9]+}} 
