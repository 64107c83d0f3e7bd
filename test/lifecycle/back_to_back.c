// Back-to-back reduction launches (each needs a KLE) without any explicit
// synchronisation between them, in two rounds over different data.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -x resident -s @=32,rest=0,host_ns=+ KLE_STANDIN_DELAY_US=0:200 %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=0:200 KLE_STANDIN_EXPECT=resident %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -x resident -s @=32,rest=0,host_ns=+ KLE_STANDIN_DELAY_US=0:200 %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=0:200 KLE_STANDIN_EXPECT=resident %t.hsa | %fcs=CHECK,HSA %}
#include <stdio.h>
#define N 4096
int main(void) {
  static int a[N];
  for (int i = 0; i < N; ++i) a[i] = i;
  long total = 0;
#pragma omp target data map(to : a[0:N])
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 16; ++k) {
      long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
      for (int i = 0; i < N; ++i) s += a[i] + round;
      total += s; // kernels compute nothing under the stand-in
    }
#pragma omp target update to(a[0:N])
  }
  printf("done total=%ld\n", total >= 0 ? 1L : 0L);
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
