// target update to/from ... nowait, each followed by a taskwait: exactly one
// host-to-device copy per `update to`, one device-to-host copy per `update
// from`, one stream, under every transport. A libomp built without
// OPENMP_ENABLE_LIBOMPTARGET re-ran the re-queued target task instead of
// polling it: 19 to 3,094 copies for one update, up to 4,096 streams.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -p CHECK,CUDA KLE_STANDIN_DELAY_US=200:400 KLE_STANDIN_STATS=1 %t.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -p CHECK,HSA KLE_STANDIN_DELAY_US=200:400 KLE_STANDIN_STATS=1 %t.hsa %}
#include <stdio.h>
#define N 4096
static int x[N];
int main(void) {
  for (int i = 0; i < N; ++i)
    x[i] = i;
  // 1 host-to-device copy (the enter).
#pragma omp target enter data map(to : x[0 : N])
  // 3 host-to-device copies.
  for (int r = 0; r < 3; ++r) {
#pragma omp target update to(x[0 : N]) nowait
#pragma omp taskwait
  }
  // 2 device-to-host copies.
  for (int r = 0; r < 2; ++r) {
#pragma omp target update from(x[0 : N]) nowait
#pragma omp taskwait
  }
#pragma omp target exit data map(delete : x[0 : N])
  printf("done\n");
  fflush(stdout);
  return 0;
}
// The stand-in's call counts at context release: 1 + 3 and 2.
// CHECK: done
// CUDA-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=4{{$}}
// CUDA-DAG: kle-standin: calls cuMemcpyDtoHAsync_v2=2{{$}}
// CUDA-DAG: kle-standin: calls cuStreamCreate=1{{$}}
// CUDA: kle-standin: launches=0 violations=0
// HSA (one entry point for both directions; a stream is a queue):
// HSA-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=6{{$}}
// HSA-DAG: kle-hsa-standin: calls hsa_queue_create=1{{$}}
// HSA: kle-hsa-standin: launches=0 violations=0
