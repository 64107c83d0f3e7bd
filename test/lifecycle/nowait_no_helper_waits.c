// 16 nowait regions whose kernels run 100 ms, then one taskwait: libomp hands
// each target task to libomptarget's completer once its work is enqueued, so
// no hidden helper thread waits in the driver for a queue. Exact counts: 18
// launches (one synchronous and one nowait region first), each task once;
// one or two cuStreamSynchronize: the synchronous region's, and now and then
// that of a region libomp ran undeferred on the encountering thread. Before
// the completer (LIBOMPTARGET_NOWAIT_DEFER=0 keeps that path) a re-run
// task's query turned into a blocking synchronize after a few tries: 10 to 14
// cuStreamSynchronize here.
// REQUIRES: cuda-standin
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: none is handed over.
// UNSUPPORTED: tsan
// RUN: %clang-sm90 %s -o %t
// RUN: %cuda KLE_STANDIN_KERNEL_US=100000 KLE_STANDIN_STATS=1 %t | %fc
#include <stdio.h>
#define R 16
int main(void) {
  int v[R] = {0};
#pragma omp target map(tofrom : v[0 : 1])
  v[0] = 0;
#pragma omp target map(tofrom : v[0 : 1]) nowait
  v[0] = 0;
#pragma omp taskwait
  for (int r = 0; r < R; ++r) {
#pragma omp target map(tofrom : v[r : 1]) nowait
    v[r] = 1;
  }
#pragma omp taskwait
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK: done
// CHECK-DAG: kle-standin: calls cuLaunchKernel=18{{$}}
// CHECK-DAG: kle-standin: calls cuStreamSynchronize={{[12]$}}
// CHECK: kle-standin: launches=18 violations=0
