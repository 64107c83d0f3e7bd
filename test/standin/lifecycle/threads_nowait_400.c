// 8 threads each issue 50 `target teams ... reduction nowait` regions, then
// a taskwait: exactly 400 KLE launches under every transport (the stand-in's
// launch count and the runtime's per-transport count agree).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %if cuda-standin %{ %clang-sm90 %s -o %t.cuda %}
// RUN: %if cuda-standin %{ %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=zerocopy KLE_STANDIN_EXPECT=zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t.cuda 2>&1 | %fcheck --check-prefixes=CHECK,CUDA,ZEROCOPY %s %}
// RUN: %if cuda-standin %{ %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=staged KLE_STANDIN_EXPECT=staged LIBOMPTARGET_KLE_STATS=1 %run %t.cuda 2>&1 | %fcheck --check-prefixes=CHECK,CUDA,STAGED %s %}
// RUN: %if cuda-standin %{ %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=copy KLE_STANDIN_EXPECT=copy LIBOMPTARGET_KLE_STATS=1 %run %t.cuda 2>&1 | %fcheck --check-prefixes=CHECK,CUDA,COPY %s %}
// RUN: %if cuda-standin %{ %standin-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=resident KLE_STANDIN_EXPECT=resident LIBOMPTARGET_KLE_STATS=1 %run %t.cuda 2>&1 | %fcheck --check-prefixes=CHECK,CUDA,RESIDENT %s %}
// RUN: %if hsa-standin %{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %if hsa-standin %{ %hsa-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=zerocopy KLE_STANDIN_EXPECT=zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t.hsa 2>&1 | %fcheck --check-prefixes=CHECK,HSA,ZEROCOPY %s %}
// RUN: %if hsa-standin %{ %hsa-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=staged KLE_STANDIN_EXPECT=staged LIBOMPTARGET_KLE_STATS=1 %run %t.hsa 2>&1 | %fcheck --check-prefixes=CHECK,HSA,STAGED %s %}
// RUN: %if hsa-standin %{ %hsa-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=copy KLE_STANDIN_EXPECT=copy LIBOMPTARGET_KLE_STATS=1 %run %t.hsa 2>&1 | %fcheck --check-prefixes=CHECK,HSA,COPY %s %}
// RUN: %if hsa-standin %{ %hsa-env KLE_STANDIN_DELAY_US=20:200 LIBOMPTARGET_KLE_TRANSPORT=resident KLE_STANDIN_EXPECT=resident LIBOMPTARGET_KLE_STATS=1 %run %t.hsa 2>&1 | %fcheck --check-prefixes=CHECK,HSA,RESIDENT %s %}
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
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=400 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=400 violations=0
