// 16 nowait regions, each on its own queue, map one array while the first
// region's host-to-device copy of it is still pending (the stand-in holds each
// such copy 100 ms): the other 15 must wait for that copy. The entry's event is
// recorded once on the copy's queue and waited on 15 times, as stock LLVM
// 22.1.8 does; patch 0049 recorded it again for each waiter (15
// cuEventRecord). The HSA plugin's events are host-side records (no call to
// count): its run checks the ordering only.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_COPY_US=100000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=20000:40000 %t.hsa | %fc %}
// CHECK: done
// CUDA-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=2{{$}}
// CUDA-DAG: kle-standin: calls cuEventRecord=1{{$}}
// CUDA-DAG: kle-standin: calls cuStreamWaitEvent=15{{$}}
// CHECK: launches=16 violations=0
#include <stdio.h>

static double X[512];

int main(void) {
  for (int I = 0; I < 512; ++I)
    X[I] = I;
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int K = 0; K < 16; ++K) {
#pragma omp target map(to : X) nowait
      { X[1] = X[0]; }
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
