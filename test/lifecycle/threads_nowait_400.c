// 8 threads each issue 50 `target teams ... reduction nowait` regions, then
// a taskwait: exactly 400 KLE launches under every transport (the stand-in's
// launch count and the runtime's per-transport count agree).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each KLE_STANDIN_DELAY_US=20:200 %t.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each KLE_STANDIN_DELAY_US=20:200 %t.hsa %}
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
