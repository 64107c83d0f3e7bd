// Many nowait `target update from` of one-element slices of one mapped
// global, run by the hidden helper threads at once on the same map entry,
// then a taskwait; repeated. Each update's post-processing unlocked the
// entry a second time (upstream's targetDataContiguous; patch 0041 locks it
// instead), which released other threads' locks: glibc aborted in
// pthread_mutex_lock (status 134) in 9 of 10 runs on the CUDA stand-in,
// whose staged copies back defer that post-processing. Each update is one
// device-to-host copy (a re-run target task would copy again): 512 per
// round, and the enter's one host-to-device copy.
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=0:3000 KLE_STANDIN_STATS=1 %t.cuda 40 2>&1 | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=0:3000 KLE_STANDIN_STATS=1 %t.cuda 40 2>&1 | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=2000:5000 KLE_STANDIN_STATS=1 %t.hsa 30 2>&1 | %fcs=CHECK,HSA %}
// CHECK-NOT: VIOLATION
// CHECK-DAG: bad=0
// CUDA-DAG: kle-standin: calls cuMemcpyDtoHAsync_v2=20480{{$}}
// CUDA-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=1{{$}}
// CUDA-DAG: kle-standin: launches=0 violations=0
// HSA (one entry point for both directions): 1 + 30 * 512.
// HSA-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=15361{{$}}
// HSA-DAG: kle-hsa-standin: launches=0 violations=0
#include <stdio.h>
#include <stdlib.h>

static long G[8][64];

int main(int argc, char **argv) {
  int Rounds = argc > 1 ? atoi(argv[1]) : 40, Bad = 0;
  for (int T = 0; T < 8; ++T)
    for (int I = 0; I < 64; ++I)
      G[T][I] = T * 1000 + I;
#pragma omp target enter data map(to : G)
  for (int R = 0; R < Rounds; ++R) {
    for (int T = 0; T < 8; ++T)
      for (int I = 0; I < 64; ++I)
        G[T][I] = -1;
    for (int T = 0; T < 8; ++T)
      for (int I = 0; I < 64; ++I) {
#pragma omp target update from(G[T][I : 1]) nowait
      }
#pragma omp taskwait
    for (int T = 0; T < 8; ++T)
      for (int I = 0; I < 64; ++I)
        Bad += G[T][I] != T * 1000 + I;
  }
#pragma omp target exit data map(release : G)
  printf("bad=%d\n", Bad);
  return Bad != 0;
}
