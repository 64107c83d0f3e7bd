// 8 nowait regions whose kernels run 400 ms, then one taskwait on a thread
// alone in its team: while the target tasks are with libomptarget's
// completer, the waiting thread sleeps until one completes (libomp's
// kmp_deferred_target_wait.h) instead of spinning over its empty task queue.
// Checked as the thread's own CPU time over the taskwait: under a tenth of
// its wall time (a spinning thread uses about all of it, or its share of a
// loaded machine's cores: still above a tenth here). Each task runs once.
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: none is handed over.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_KERNEL_US=400000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_KERNEL_US=400000 KLE_STANDIN_STATS=1 %t.hsa | %fc %}
#include "Inputs/wait_span.h"
#define R 8
int main(void) {
  int v[R] = {0};
  for (int r = 0; r < R; ++r) {
#pragma omp target map(tofrom : v[r : 1]) nowait
    v[r] = 1;
  }
  WaitSpanTy Span = waitStart(CLOCK_THREAD_CPUTIME_ID);
#pragma omp taskwait
  waitReport(Span, "taskwait", 10);
  return 0;
}
// CHECK: taskwait slept
// CUDA: kle-standin: calls cuLaunchKernel=8{{$}}
// CHECK: {{kle-(hsa-)?standin}}: launches=8 violations=0
