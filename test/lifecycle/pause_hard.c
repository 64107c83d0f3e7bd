// omp_pause_resource_all(omp_pause_hard) between rounds of offloading, on
// both stand-ins: each round runs 2 nowait regions from a single thread of a
// parallel region and 2 from the initial thread, waits for them, then pauses
// (libomp ends its threads, the hidden helper team included); after the last
// round, 4 synchronous regions. Before the libomp fix the second round's
// first nowait region crashed in __kmpc_give_task (the hidden helper team
// was reported ready before it existed).
// After each pause no hidden helper work may be left ("left=0": libomp's
// count that exit waits for); before the libomp fix a bottom half queued
// after the taskwait returned was lost with the team, the count stayed up
// and exit hung (1 run in about 30 with a core kept busy). Then 4 rounds in
// which explicit tasks create 2 dependent nowait regions each and the
// program pauses with no taskwait (the region's barrier does not wait for
// them): the pause runs them first (all 68 launches, no work left;
// host/pause_hard_pending_tasks.c checks the results on the host device). Exact launches: 8 x 4 + 4 + 4 x 8.
// Under TSan (scripts/sanitizer-check.sh) libomp does not reload Archer after
// the first pause, so TSan sees none of libomp's ordering from there on: the
// completer's last post-processing raced with the plugins' teardown at exit
// until deinitRuntime joined the completer thread first.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=500:2000 %use-zerocopy KLE_STANDIN_EXPECT=zerocopy %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa %t.hsa | %fcs=CHECK,HSA %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=500:2000 %use-zerocopy KLE_STANDIN_EXPECT=zerocopy %t.hsa | %fcs=CHECK,HSA %}
#include <omp.h>
#include <stdio.h>

// libomp's count of hidden helper work not finished (kmp_tasking.cpp).
extern int __kmpc_unfinished_hidden_helper_tasks(void *, int);

#define ROUNDS 8
#define S 256

int main(void) {
  static int A[4][S];
  int paused = 0, left = 0;
  for (int r = 0; r < ROUNDS; ++r) {
#pragma omp parallel num_threads(2)
#pragma omp single
    {
      for (int k = 0; k < 2; ++k) {
        int *p = A[k];
#pragma omp target teams distribute parallel for map(tofrom : p[0:S]) nowait
        for (int i = 0; i < S; ++i) p[i] += 1;
      }
#pragma omp taskwait
    }
    for (int k = 2; k < 4; ++k) {
      int *p = A[k];
#pragma omp target teams distribute parallel for map(tofrom : p[0:S]) nowait
      for (int i = 0; i < S; ++i) p[i] += 1;
    }
#pragma omp taskwait
    paused += omp_pause_resource_all(omp_pause_hard) == 0;
    left += __kmpc_unfinished_hidden_helper_tasks(NULL, -1) != 0;
  }
  for (int k = 0; k < 4; ++k) {
    int *p = A[k];
#pragma omp target teams distribute parallel for map(tofrom : p[0:S])
    for (int i = 0; i < S; ++i) p[i] += 1;
  }
  static int B[4][S];
  for (int r = 0; r < 4; ++r) {
#pragma omp parallel num_threads(2)
#pragma omp for
    for (int k = 0; k < 4; ++k) {
      int *p = B[k];
#pragma omp task firstprivate(p)
      {
#pragma omp target teams distribute parallel for map(tofrom : p[0:S]) depend(inout : p[0]) nowait
        for (int i = 0; i < S; ++i) p[i] += 1;
#pragma omp target teams distribute parallel for map(tofrom : p[0:S]) depend(inout : p[0]) nowait
        for (int i = 0; i < S; ++i) p[i] += 1;
      }
    }
    paused += omp_pause_resource_all(omp_pause_hard) == 0;
    left += __kmpc_unfinished_hidden_helper_tasks(NULL, -1) != 0;
  }
  printf("rounds=%d paused=%d left=%d\n", ROUNDS, paused, left);
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: rounds=8 paused=12 left=0
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=68 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=68 violations=0
