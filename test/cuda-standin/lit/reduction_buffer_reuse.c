// Under zerocopy and staged a slot keeps its teams-reduction buffer: the next
// holder reuses it (no per-launch device allocation), and a kernel that needs
// a larger one grows it once. Synchronous launches always get the same slot
// (LIFO), so the INFO lines show the buffer: the scalar kernel's first
// buffer, then one grown buffer that every later launch reuses. The
// stand-in checks each launch's KLE.ReductionBuffer is a live device
// allocation of at least what the kernel needs, not freed before the kernel
// completed, and that nothing is left at exit (the cached buffers are freed
// at deinit).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 -O2 %s -o %t
// RUN: %standin-env LIBOMPTARGET_KLE_TRANSPORT=zerocopy KLE_STANDIN_EXPECT=zerocopy LIBOMPTARGET_INFO=32 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,REUSE %s
// RUN: %standin-env LIBOMPTARGET_KLE_TRANSPORT=staged KLE_STANDIN_EXPECT=staged %run %t 2>&1 | %fcheck %s
// RUN: %standin-env LIBOMPTARGET_KLE_TRANSPORT=copy KLE_STANDIN_EXPECT=copy %run %t 2>&1 | %fcheck %s
#include <stdio.h>

#define M 256

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
// CHECK-NOT: VIOLATION
// CHECK: done 1
// CHECK: kle-standin: live device=0 pinned=0 managed=0
// CHECK: kle-standin: launches=5 violations=0
