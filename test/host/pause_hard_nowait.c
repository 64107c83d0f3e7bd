// target nowait after omp_pause_resource_all(omp_pause_hard): the hard pause
// ends libomp's hidden helper team, and the next deferred target task needs
// a new one. Before the libomp fix the team's init/main/deinit flags stayed
// signaled from the first team, so the runtime reported the new team ready
// before it existed and the next round's first 'target nowait' crashed
// (SIGSEGV in __kmpc_give_task, or a hang waiting for a team that had
// already left): on every run of this program with 22.1.8's libomp (the
// issue's shape; llvm/llvm-project#154201). Each round: a nowait region from
// a single thread of a parallel region and one from the initial thread,
// both waited for, then the hard pause; then synchronous regions after a
// last pause. "host" counts the regions that ran on the host device.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | %fc --match-full-lines
// RUN: %run %t | %fc --match-full-lines
// RUN: env LIBOMP_NUM_HIDDEN_HELPER_THREADS=1 %run %t | %fc --match-full-lines
#include <omp.h>
#include <stdio.h>

#define ROUNDS 20
#define N 1000

int main(void) {
  int wrong = 0, paused = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    int x = 0;
    long s = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp target map(tofrom : x) nowait
      x = r + 1;
#pragma omp taskwait
    }
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s) nowait
    for (int i = 0; i < N; ++i)
      s += i;
#pragma omp taskwait
    wrong += (x != r + 1) + (s != N * (N - 1) / 2);
    paused += omp_pause_resource_all(omp_pause_hard) == 0;
  }
  // Synchronous regions after a hard pause (the runtime starts again).
  for (int r = 0; r < ROUNDS; ++r) {
    long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s)
    for (int i = 0; i < N; ++i)
      s += i + r;
    wrong += s != N * (N - 1) / 2 + (long)N * r;
  }
  printf("rounds=%d paused=%d wrong=%d\n", ROUNDS, paused, wrong);
  return wrong != 0;
}
// CHECK: rounds=20 paused=20 wrong=0
