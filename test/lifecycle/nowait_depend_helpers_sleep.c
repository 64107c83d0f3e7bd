// A chain of 4 dependent nowait regions whose kernels run 100 ms: while a
// kernel runs, its successor is a hidden helper task waiting for a
// dependence, not queued, and the hidden helper threads sleep (libomp's
// __kmp_hidden_helper_task_queued) instead of spinning until it is released.
// Checked as the process's CPU time over the chain: under a quarter of its
// wall time (spinning helpers use every core, or their share of a loaded
// machine's: about 1 or more here). Each kernel runs once, in order.
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: the tasks stay queued.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_KERNEL_US=100000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_KERNEL_US=100000 KLE_STANDIN_STATS=1 %t.hsa | %fc %}
#include "Inputs/wait_span.h"
#define R 4
int main(void) {
  int v = 0;
#pragma omp target map(tofrom : v)
  v = 0;
  WaitSpanTy Span = waitStart(CLOCK_PROCESS_CPUTIME_ID);
  for (int r = 0; r < R; ++r) {
#pragma omp target map(tofrom : v) depend(inout : v) nowait
    v += 1;
  }
#pragma omp taskwait
  waitReport(Span, "helpers", 4);
  return 0;
}
// CHECK: helpers slept
// CUDA: kle-standin: calls cuLaunchKernel=5{{$}}
// CHECK: {{kle-(hsa-)?standin}}: launches=5 violations=0
