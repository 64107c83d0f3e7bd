// 64 nowait regions whose kernels run 20 ms, then one taskwait on a thread
// alone in its team: the waiting thread sleeps (nowait_taskwait_sleeps.c),
// and only a completion that can end its wait wakes it (the last child's),
// not every one of the 64 target tasks' two completion steps. Checked as the
// futex wake-ups libomp makes for sleepers (Inputs/futex_wakes.h): at most
// 4 over the batch (the last child, the last bottom half, and slack). Each
// task runs once.
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: none is handed over.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -ldl %}
// RUN: %cuda{ %cuda KLE_STANDIN_KERNEL_US=20000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -ldl %}
// RUN: %hsa{ %hsa KLE_STANDIN_KERNEL_US=20000 KLE_STANDIN_STATS=1 %t.hsa | %fc %}
#include "Inputs/futex_wakes.h"
#include <stdio.h>

#define R 64

int main(void) {
  int v[R] = {0};
#pragma omp target map(tofrom : v[0 : 1])
  v[0] = 0;
  long Before = __atomic_load_n(&FutexWakes, __ATOMIC_RELAXED);
  for (int r = 0; r < R; ++r) {
#pragma omp target map(tofrom : v[r : 1]) nowait
    v[r] = 1;
  }
#pragma omp taskwait
  long N = __atomic_load_n(&FutexWakes, __ATOMIC_RELAXED) - Before;
  printf("taskwait wake-ups %s: %ld for %d regions\n", N <= 4 ? "few" : "many",
         N, R);
  fflush(stdout);
  return 0;
}
// CHECK: taskwait wake-ups few
// CUDA: kle-standin: calls cuLaunchKernel=65{{$}}
// CHECK: {{kle-(hsa-)?standin}}: launches=65 violations=0
