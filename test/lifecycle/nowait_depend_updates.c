// The pipeline shape that aborted on the stand-in with "cuLaunchKernel:
// invalid device context" (stock 22.1.8 as the fork): per round,
// `target update to(...) nowait depend(out:)`, a kernel with a cross-team
// reduction `nowait depend(inout:)`, `target update from(...) nowait
// depend(in:)`, then taskwait. The hidden-helper thread that launches never
// made the context current; the real driver accepts that (seen on an H200,
// test/gpu/nowait_depend_chain.c), so the stand-in does too. Exact counts
// per construct, 4 rounds: 4 launches; device-to-host copies: 4 updates + 4
// maps of `sum`; host-to-device copies: 4 updates + 4 maps of `sum` + 1 at
// image load (the DeviceRTL's device environment), + 1 zeroing of the
// slot's counter block at its first use (zerocopy), + 1 write of the slot's
// device KLE at its first use (resident: the rounds reuse the slot and its
// reduction buffer), + 4 KLE copies (staged, copy).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -p CHECK,CUDA,CUDA-@ KLE_STANDIN_STATS=1 KLE_STANDIN_DELAY_US=50:300 %t.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -p CHECK,HSA,HSA-@ KLE_STANDIN_STATS=1 KLE_STANDIN_DELAY_US=50:300 %t.hsa %}
#include <stdio.h>
#define N 1024
static int a[N];
int main(void) {
#pragma omp target enter data map(alloc : a[0 : N])
  for (int round = 0; round < 4; ++round) {
    long sum = 0;
    for (int i = 0; i < N; ++i)
      a[i] = i + round;
#pragma omp target update to(a[0 : N]) nowait depend(out : a)
#pragma omp target teams distribute parallel for reduction(+ : sum)           \
    map(tofrom : sum) nowait depend(inout : a)
    for (int i = 0; i < N; ++i)
      sum += a[i] += 1;
#pragma omp target update from(a[0 : N]) nowait depend(in : a)
#pragma omp taskwait
  }
#pragma omp target exit data map(delete : a[0 : N])
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: invalid device context
// CHECK: done
// CUDA-DAG: kle-standin: calls cuMemcpyDtoHAsync_v2=8{{$}}
// CUDA-ZEROCOPY-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=10{{$}}
// CUDA-STAGED-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=13{{$}}
// CUDA-COPY-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=13{{$}}
// CUDA-RESIDENT-DAG: kle-standin: calls cuMemcpyHtoDAsync_v2=10{{$}}
// HSA has one entry point for both directions: the sum of the two.
// HSA-ZEROCOPY-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=18{{$}}
// HSA-STAGED-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=21{{$}}
// HSA-COPY-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=21{{$}}
// HSA-RESIDENT-DAG: kle-hsa-standin: calls hsa_amd_memory_async_copy=18{{$}}
// CUDA: kle-standin: launches=4 violations=0
// HSA: kle-hsa-standin: launches=4 violations=0
