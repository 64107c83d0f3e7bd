// 8 threads each issue 50 `target teams ... reduction nowait` regions, then
// a taskwait: exactly 400 KLE launches under every transport (the stand-in's
// launch count and the runtime's per-transport count agree).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=zerocopy KLE_STANDIN_EXPECT=zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=staged KLE_STANDIN_EXPECT=staged LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,STAGED %s
// RUN: %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=copy KLE_STANDIN_EXPECT=copy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,COPY %s
// RUN: %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=resident KLE_STANDIN_EXPECT=resident LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,RESIDENT %s
#include <omp.h>
#include <stdio.h>
#define N 256
int main(void) {
  static long s[8][50];
#pragma omp parallel num_threads(8)
  {
    int t = omp_get_thread_num();
    for (int k = 0; k < 50; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : s[t][k])       \
    map(tofrom : s[t][k]) nowait
      for (int i = 0; i < N; ++i)
        s[t][k] += i;
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// ZEROCOPY: launches copy=0 staged=0 zerocopy=400 resident=0;
// STAGED: launches copy=0 staged=400 zerocopy=0 resident=0;
// COPY: launches copy=400 staged=0 zerocopy=0 resident=0;
// RESIDENT: launches copy=0 staged=0 zerocopy=0 resident=400;
// CHECK: kle-standin: live device=0 pinned=0 managed=0
// CHECK: kle-standin: launches=400 violations=0
