// omp_pause_resource_all(omp_pause_hard) runs every hidden helper task still
// unfinished before it ends the hidden helper team. A parallel region's
// barrier does not wait for the target tasks its explicit tasks created
// (libomp counts them as the explicit task's children only), so at the pause
// some are queued, re-enqueued to poll, or waiting for a dependence; the
// team's end runs only what its threads still find. Before the libomp fix the
// pause waited only once libomptarget had taken a target task over (never
// with LIBOMPTARGET_NOWAIT_DEFER=0): a task was lost with the team ("wrong"),
// its count stayed up ("left") and exit waited for it forever: 2 of 15 runs
// of the first RUN line and 1 of 15 of the second with a core kept busy (0 of
// 15 each after). Each round: 8 explicit tasks, each creating two dependent
// target tasks, then the pause.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | %fc --match-full-lines
// RUN: env LIBOMPTARGET_NOWAIT_DEFER=0 %run %t | %fc --match-full-lines
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

// libomp's count of hidden helper work not finished (kmp_tasking.cpp).
extern int __kmpc_unfinished_hidden_helper_tasks(void *, int);

#define ROUNDS 100
#define K 8
#define S 128

int main(void) {
  static int A[K][S];
  int r, wrong = 0, left = 0, paused = 0;
  for (r = 0; r < ROUNDS && !wrong && !left; ++r) {
#pragma omp parallel num_threads(3)
#pragma omp for
    for (int k = 0; k < K; ++k) {
      int *p = A[k];
#pragma omp task firstprivate(p)
      {
#pragma omp target map(tofrom : p[0:S]) depend(inout : p[0]) nowait
        for (int i = 0; i < S; ++i)
          p[i] += 1;
#pragma omp target map(tofrom : p[0:S]) depend(inout : p[0]) nowait
        for (int i = 0; i < S; ++i)
          p[i] += 1;
      }
    }
    paused += omp_pause_resource_all(omp_pause_hard) == 0;
    left += __kmpc_unfinished_hidden_helper_tasks(NULL, -1) != 0;
    for (int k = 0; k < K; ++k)
      wrong += A[k][0] != 2 * (r + 1) || A[k][S - 1] != 2 * (r + 1);
  }
  printf("rounds=%d paused=%d wrong=%d left=%d\n", r, paused, wrong, left);
  fflush(stdout);
  // A lost task's count would keep exit waiting: leave at once.
  _exit(wrong != 0 || left != 0);
}
// CHECK: rounds=100 paused=100 wrong=0 left=0
