// 32 nowait cross-team reductions, then taskwait, in two rounds: the second
// round reuses slots recycled after the first round's completion was observed
// (queryAsync), so under zerocopy one slab serves both rounds.
// REQUIRES: gpu
// RUN: %clang-gpu -O2 %s -o %t
// RUN: env %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: env %use-staged LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,STAGED %s
// RUN: env %use-copy %run %t 2>&1 | %fcheck %s
// RUN: env %use-resident LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,RESIDENT %s
#include <stdio.h>

int main(void) {
  int bad = 0;
  for (int round = 0; round < 2; ++round) {
    long s[32];
#pragma omp parallel num_threads(1)
#pragma omp single
    {
      for (int k = 0; k < 32; ++k) {
        s[k] = 0;
#pragma omp target teams distribute parallel for num_teams(k + 1)             \
    reduction(+ : s[k : 1]) map(tofrom : s[k : 1]) nowait
        for (int i = 0; i < 4096; ++i)
          s[k] += k + round;
      }
#pragma omp taskwait
    }
    for (int k = 0; k < 32; ++k)
      bad += s[k] != 4096L * (k + round);
    printf("round %d wrong=%d\n", round, bad);
  }
  // Before the KLE stats line, which libomptarget prints at exit.
  fflush(stdout);
  return bad != 0;
}
// CHECK: round 0 wrong=0
// CHECK: round 1 wrong=0
// ZEROCOPY: launches copy=0 staged=0 zerocopy=64 resident=0; fallbacks PoolExhausted=0 AllocationFailed=0 {{.*}}; slabs=1
// STAGED: launches copy=0 staged=64 zerocopy=0 resident=0; fallbacks PoolExhausted=0 AllocationFailed=0 {{.*}}; slabs=1
// RESIDENT: launches copy=0 staged=0 zerocopy=0 resident=64; fallbacks PoolExhausted=0 AllocationFailed=0 {{.*}}; slabs=1
