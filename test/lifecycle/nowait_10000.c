// 10,000 nowait reduction launches.  The live-allocation report at context
// release must be empty and the peak number of live allocations must stay
// small (bounded by the launches in flight, not by the launch count).
// NOTE: fails against upstream LLVM 22.1.8: peak device=20007 -- the nowait
// completion path (queryAsync) never frees AssociatedAllocations (KLE +
// reduction buffer), only synchronize() does.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -t zerocopy,copy -s @=10000,rest=0 KLE_STANDIN_DELAY_US=0:5 %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=0:5 KLE_STANDIN_EXPECT=resident %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -t zerocopy,copy -s @=10000,rest=0 KLE_STANDIN_DELAY_US=0:5 %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=0:5 KLE_STANDIN_EXPECT=resident %t.hsa | %fcs=CHECK,HSA %}
#include <stdio.h>
#define N 256
int main(void) {
  static long s[100];
#pragma omp parallel num_threads(1)
#pragma omp single
  for (int r = 0; r < 100; ++r) {
    for (int k = 0; k < 100; ++k) {
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
// COPY: ; slabs=0 
// CUDA: kle-standin: live device=0 pinned=0 managed=0 (bytes device=0 pinned=0 managed=0) at=cuDevicePrimaryCtxRelease
// CUDA-NEXT: kle-standin: peak device={{[0-9]?[0-9]?[0-9]}} pinned={{[0-9]?[0-9]?[0-9]}} managed=0
// CUDA-NEXT: kle-standin: launches=10000 violations=0
// The HSA stand-in's own report (the gfx90a runs):
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0 (bytes device=0 fine=0 kernarg=0) at=hsa_shut_down
// HSA-NEXT: kle-hsa-standin: peak device={{[0-9]?[0-9]?[0-9]}} fine={{[0-9]?[0-9]?[0-9]}} kernarg={{[0-9]?[0-9]?[0-9]}} host-coarse=0 locked=0
// HSA-NEXT: kle-hsa-standin: launches=10000 violations=0
