// 16 host threads, each launching reduction kernels and synchronising.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -x resident -s @=64,rest=0 KLE_STANDIN_DELAY_US=0:300 %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=0:300 KLE_STANDIN_EXPECT=resident %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -x resident -s @=64,rest=0 KLE_STANDIN_DELAY_US=0:300 %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=0:300 KLE_STANDIN_EXPECT=resident %t.hsa | %fcs=CHECK,HSA %}
#include <stdio.h>
#define N 1024
int main(void) {
  int launched = 0;
#pragma omp parallel num_threads(16) reduction(+ : launched)
  {
    for (int k = 0; k < 4; ++k) {
      long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
      for (int i = 0; i < N; ++i) s += i;
      ++launched;
    }
  }
  printf("done launched=%d\n", launched);
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done launched=64
// ZEROCOPY: ; slabs={{[1-9][0-9]*}}
// STAGED: ; slabs={{[1-9][0-9]*}}
// COPY: ; slabs=0 
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=64 violations=0
// The HSA stand-in's own report (the gfx90a runs):
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=64 violations=0
