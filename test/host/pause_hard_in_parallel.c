// omp_pause_resource_all(omp_pause_hard) from inside a parallel region fails
// (returns nonzero) and the program goes on: the pause ends every libomp
// thread, and the team it is called from cannot end there. Before the libomp
// fix the caller waited forever for the team's other threads (LLVM 19's
// libomp too). From a master construct with a nowait region waited for
// first, from a single construct of a nested region, and then, outside any
// parallel region, a pause that succeeds; a target region after each.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | %fc --match-full-lines
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 0, master = -1, nested = -1;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    {
#pragma omp target map(tofrom : x) nowait
      x += 1;
#pragma omp taskwait
      master = omp_pause_resource_all(omp_pause_hard);
    }
  }
#pragma omp target map(tofrom : x)
  x += 1;
  omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp parallel num_threads(2)
#pragma omp single
  nested = omp_pause_resource_all(omp_pause_hard);
  int outside = omp_pause_resource_all(omp_pause_hard);
#pragma omp target map(tofrom : x)
  x += 1;
  printf("master=%s nested=%s outside=%d x=%d\n", master ? "failed" : "0",
         nested ? "failed" : "0", outside, x);
  return 0;
}
// CHECK: master=failed nested=failed outside=0 x=3
