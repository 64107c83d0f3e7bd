// 32 nowait reduction target regions in flight, then one taskwait.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -x resident -s @=32,rest=0 KLE_STANDIN_DELAY_US=50:500 %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=50:500 KLE_STANDIN_EXPECT=resident %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -x resident -s @=32,rest=0 KLE_STANDIN_DELAY_US=50:500 %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=50:500 KLE_STANDIN_EXPECT=resident %t.hsa | %fcs=CHECK,HSA %}
#include <stdio.h>
#define N 1024
int main(void) {
  long s[32] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < 32; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : s[k]) map(tofrom : s[k]) nowait
      for (int i = 0; i < N; ++i) s[k] += i;
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// ZEROCOPY: ; slabs={{[1-9][0-9]*}}
// STAGED: ; slabs={{[1-9][0-9]*}}
// COPY: ; slabs=0 
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=32 violations=0
// The HSA stand-in's own report (the gfx90a runs):
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=32 violations=0
