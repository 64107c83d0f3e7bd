// A chain of nowait target tasks ordered by depend clauses, as users write
// pipelines: update to, a kernel that is not idempotent (x[i] += 1) with a
// cross-team reduction, update from, then one taskwait, four rounds. Each
// task runs on a hidden helper thread. A task that ran twice (libomp built
// without OPENMP_ENABLE_LIBOMPTARGET re-ran re-queued target tasks) or out
// of dependence order gives a wrong array or sum. On the CUDA driver stand-in
// this shape failed with "cuLaunchKernel: invalid device context" (the
// launching helper thread never made the context current); on a real driver
// it shows whether the driver needs a current context for the launch.
// REQUIRES: gpu
// RUN: %clang-gpu -O2 %s -o %t
// RUN: env %use-zerocopy %run %t 2>&1 | %fcheck %s
// RUN: env %use-staged %run %t 2>&1 | %fcheck %s
// RUN: env %use-copy %run %t 2>&1 | %fcheck %s
// RUN: env %use-resident %run %t 2>&1 | %fcheck %s
#include <stdio.h>

#define N 4096
static int a[N];

int main(void) {
  int bad = 0;
#pragma omp target enter data map(alloc : a[0 : N])
  for (int round = 0; round < 4; ++round) {
    long sum = 0;
    for (int i = 0; i < N; ++i)
      a[i] = i + round;
#pragma omp target update to(a[0 : N]) nowait depend(out : a)
#pragma omp target teams distribute parallel for reduction(+ : sum)           \
    map(tofrom : sum) nowait depend(inout : a)
    for (int i = 0; i < N; ++i)
      sum += a[i] += 1;
#pragma omp target update from(a[0 : N]) nowait depend(in : a)
#pragma omp taskwait
    long want = (long)N * (N - 1) / 2 + (long)N * (round + 1);
    int wrong = 0;
    for (int i = 0; i < N; ++i)
      wrong += a[i] != i + round + 1;
    printf("round %d sum=%ld want=%ld wrong=%d\n", round, sum, want, wrong);
    bad += wrong != 0 || sum != want;
  }
#pragma omp target exit data map(delete : a[0 : N])
  printf("bad=%d\n", bad);
  return bad != 0;
}
// CHECK: round 0 sum=[[S0:[0-9]+]] want=[[S0]] wrong=0
// CHECK: round 1 sum=[[S1:[0-9]+]] want=[[S1]] wrong=0
// CHECK: round 2 sum=[[S2:[0-9]+]] want=[[S2]] wrong=0
// CHECK: round 3 sum=[[S3:[0-9]+]] want=[[S3]] wrong=0
// CHECK: bad=0
