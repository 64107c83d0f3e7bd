// Under zerocopy, resident and staged a slot keeps its teams-reduction buffer (up to
// LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT, 64 KiB by default): the next holder
// reuses it (no per-launch device allocation), and a kernel that needs a
// larger one grows it once. Synchronous launches always get the same slot
// (LIFO), so the INFO lines show the buffer: the scalar kernel's first
// buffer, then one grown buffer that every later launch reuses. The
// stand-in checks each launch's KLE.ReductionBuffer is a live device
// allocation of at least what the kernel needs, not freed before the kernel
// completed, and that nothing is left at exit (the cached buffers are freed
// at deinit).
// REQUIRES: cuda-standin || hsa-standin
// DEFINE: %{lim} = LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT
// DEFINE: %{zc} = %use-zerocopy KLE_STANDIN_EXPECT=zerocopy
// RUN: %cuda{ %clang-sm90 -O2 %s -o %t.cuda %}
// The scalar kernel needs 8 B x 1024 = 8 KiB, the array kernel 32 KiB; with
// LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT below 32 KiB only the scalar kernel's
// buffer is kept (peak 8 KiB) and the array kernel's goes per launch.
// RUN: %cuda{ %cuda %{zc} LIBOMPTARGET_INFO=32 %t.cuda | %fcs=CHECK,CUDA,REUSE,PEAK32 %}
// RUN: %cuda{ %cuda %as-staged %t.cuda | %fcs=CHECK,CUDA,PEAK32 %}
// RUN: %cuda{ %cuda %as-zerocopy %{lim}=16384 %t.cuda | %fcs=CHECK,CUDA,PEAK8 %}
// RUN: %cuda{ %cuda %as-zerocopy %{lim}=0 %t.cuda | %fcs=CHECK,CUDA,PEAK0 %}
// RUN: %cuda{ %cuda %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %{lim}=lots %t.cuda | %fcs=CHECK,CUDA,BADLIMIT,PEAK32 %}
// RUN: %cuda{ %cuda %as-copy %t.cuda | %fcs=CHECK,CUDA,PEAK0 %}
// RUN: %hsa{ %clang-gfx90a -O2 %s -o %t.hsa %}
// RUN: %hsa{ %hsa %{zc} LIBOMPTARGET_INFO=32 %t.hsa | %fcs=CHECK,HSA,REUSE,PEAK32 %}
// RUN: %hsa{ %hsa %as-staged %t.hsa | %fcs=CHECK,HSA,PEAK32 %}
// RUN: %hsa{ %hsa %as-zerocopy %{lim}=16384 %t.hsa | %fcs=CHECK,HSA,PEAK8 %}
// RUN: %hsa{ %hsa %as-zerocopy %{lim}=0 %t.hsa | %fcs=CHECK,HSA,PEAK0 %}
// RUN: %hsa{ %hsa %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %{lim}=lots %t.hsa | %fcs=CHECK,HSA,BADLIMIT,PEAK32 %}
// RUN: %hsa{ %hsa %as-copy %t.hsa | %fcs=CHECK,HSA,PEAK0 %}
#include <stdio.h>

#define M 4

static long scalar(int n) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < n; ++i)
    s += i;
  return s;
}

static void array(long *a, int n) {
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : a[0 : M]) map(tofrom : a[0 : M])
  for (int i = 0; i < n; ++i)
    a[i % M] += i;
}

int main(void) {
  static long a[M];
  long t = scalar(100);
  array(a, 1000);
  t += scalar(100);
  array(a, 1000);
  t += scalar(100);
  printf("done %ld\n", t >= 0 ? 1L : 0L);
  fflush(stdout);
  return 0;
}
// REUSE: KLE transport=zerocopy slot=[[SLOT:0x[0-9a-f]+]] counters={{.*}} ReductionBuffer=[[SMALL:0x[0-9a-f]+]]
// REUSE: KLE transport=zerocopy slot=[[SLOT]] counters={{.*}} ReductionBuffer=[[BIG:0x[0-9a-f]+]]
// REUSE: KLE transport=zerocopy slot=[[SLOT]] counters={{.*}} ReductionBuffer=[[BIG]]
// REUSE: KLE transport=zerocopy slot=[[SLOT]] counters={{.*}} ReductionBuffer=[[BIG]]
// REUSE: KLE transport=zerocopy slot=[[SLOT]] counters={{.*}} ReductionBuffer=[[BIG]]
// BADLIMIT: "PluginInterface" message: warning: LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT="lots" is not valid (valid values: a number of bytes from 0 to 1099511627776); using the default
// CHECK-NOT: VIOLATION
// CHECK: done 1
// PEAK32: omptarget KLE stats: {{.*}} slot_buffer_bytes_peak=32768{{$|;| }}
// PEAK8: omptarget KLE stats: {{.*}} slot_buffer_bytes_peak=8192{{$|;| }}
// PEAK0: omptarget KLE stats: {{.*}} slot_buffer_bytes_peak=0{{$|;| }}
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=5 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=5 violations=0
