// Stress for patch 0005: host threads of a parallel region keep creating
// target nowait tasks while hidden helper threads run earlier ones, each of
// which forks a serialized one-team teams region on the host device. Before
// the patch a new task could be bound to the team and task team its shadow
// hidden helper held at that instant (a serial team and a NULL task team, or
// with nested parallelism an inner team's), and libomp crashed in
// __kmpc_give_task: 4 runs in 5 of this program (100 rounds), 3 in 3 with
// OMP_MAX_ACTIVE_LEVELS=3, with or without the reduction.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | %fc --match-full-lines
// RUN: env OMP_MAX_ACTIVE_LEVELS=3 %run %t | %fc --match-full-lines
// RUN: env LIBOMP_NUM_HIDDEN_HELPER_THREADS=2 %run %t | %fc --match-full-lines

#include <omp.h>
#include <stdio.h>

#define ROUNDS 100
#define N 64
#define THREADS 8
#define TASKS 4

int main(void) {
  long bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(THREADS) reduction(+ : bad)
    {
      int t = omp_get_thread_num();
      int s[TASKS], z[TASKS];
      for (int k = 0; k < TASKS; k++) {
        s[k] = 0;
        z[k] = 0;
#pragma omp target teams distribute parallel for reduction(+ : s[k : 1])      \
    map(tofrom : s[k : 1]) nowait
        for (int i = 0; i < N; i++)
          s[k] += i + t + k;
        // No reduction: the race does not need one.
#pragma omp target teams distribute parallel for map(tofrom : z[k : 1]) nowait
        for (int i = 0; i < 1; i++)
          z[k] = t + k + 1;
      }
#pragma omp taskwait
      for (int k = 0; k < TASKS; k++)
        bad += (s[k] != 2016 + N * (t + k)) + (z[k] != t + k + 1);
    }
  }
  printf("rounds=%d wrong=%ld\n", ROUNDS, bad);
  return bad != 0;
}
// CHECK: rounds=100 wrong=0
