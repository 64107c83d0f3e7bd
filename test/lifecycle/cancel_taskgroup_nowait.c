// A sibling task cancels the taskgroup while its `target nowait` regions are
// in flight. A target task whose device work is enqueued is re-queued until
// its queue completes; once cancelled, libomp discarded it at each
// re-run without querying its queue, and re-queued it again: the taskgroup's
// end waited forever (upstream libomp; patch 0042 keeps such a task out of
// the discard). Re-run tasks: no hidden helpers, or
// LIBOMPTARGET_NOWAIT_DEFER=0. Before, the 0-helper run timed out (also
// with LLVM 22.1.8's libomp and this libomptarget: 3 of 3 runs); after,
// each run finishes and every started region's memory is freed. Each region maps its own element: regions
// copying one object back concurrently would race in the program.
// REQUIRES: cuda-standin || hsa-standin
// The sanitizer job's TSan runs load Archer, an OMPT tool, so every target
// task takes the re-run path; a re-queued task is re-run by another thread
// after libomp's deque hand-off, which TSan does not see (libomp is not
// instrumented): it reports the two runs' accesses to the task's async info
// (__tgt_target_nowait_query) as a race.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda OMP_CANCELLATION=true LIBOMP_NUM_HIDDEN_HELPER_THREADS=0 timeout 30 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda OMP_CANCELLATION=true LIBOMPTARGET_NOWAIT_DEFER=0 timeout 30 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda OMP_CANCELLATION=true timeout 30 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa OMP_CANCELLATION=true LIBOMP_NUM_HIDDEN_HELPER_THREADS=0 timeout 30 %t.hsa | %fcs=CHECK,HSA %}
// CHECK: done
// CUDA: kle-standin: live device=0 pinned=0 managed=0 {{.*}} at=cuDevicePrimaryCtxRelease
// CUDA: kle-standin: launches={{[0-9]+}} violations=0
// HSA: kle-hsa-standin: live device=0 {{.*}} signals=0 queues=0 {{.*}} at=hsa_shut_down
// HSA: kle-hsa-standin: launches={{[0-9]+}} violations=0
#include <stdio.h>

static double A[64];

int main(void) {
  for (int Round = 0; Round < 4; ++Round) {
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskgroup
    {
      for (int K = 0; K < 32; ++K) {
#pragma omp target map(tofrom : A[K : 1]) nowait
        { A[K] += 1; }
        if (K == 10) {
#pragma omp task
          {
#pragma omp cancel taskgroup
          }
        }
      }
    }
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
