// A failing hsa_amd_memory_async_copy must end the program with a fatal error
// naming the call, as on CUDA, under every transport: never hang. The first
// copy is the 48-byte host-to-device write of the device environment while the
// image loads (DeviceTy::loadBinary); before patch 0009 its stream slot's
// signal stayed at 1 and the AsyncInfoTy destructor waited for it forever
// (the 120 s limit of %hsa-each ends the run with status 124). The second copy, the
// first map of the target region, is covered too.
// LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES=true fails every copy in this
// build ("requires ROCm 5.7"): the same fatal error instead of a hang.
// REQUIRES: hsa-standin
// RUN: %clang-gfx90a %s -o %t
// RUN: %hsa-each -p CHECK,CALL1 KLE_STANDIN_FAIL=hsa_amd_memory_async_copy:1:HSA_STATUS_ERROR_OUT_OF_RESOURCES \
// RUN:   sh -c '%t; echo status=$?'
// RUN: %hsa-each -p CHECK,CALL2 KLE_STANDIN_FAIL=hsa_amd_memory_async_copy:2:HSA_STATUS_ERROR_OUT_OF_RESOURCES \
// RUN:   sh -c '%t; echo status=$?'
// RUN: %hsa-each -p SDMA LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES=true sh -c '%t; echo status=$?'
#include <stdio.h>
#define N 1024
int main(void) {
  static int a[N];
  for (int i = 0; i < N; ++i) a[i] = i;
  long s = 0;
#pragma omp target teams distribute parallel for map(to : a[0:N]) reduction(+ : s)
  for (int i = 0; i < N; ++i) s += a[i];
  printf("unreachable s=%ld\n", s);
  return 0;
}
// CALL1: kle-hsa-standin: injected failure: hsa_amd_memory_async_copy call #1 -> 4105
// CALL2: kle-hsa-standin: injected failure: hsa_amd_memory_async_copy call #2 -> 4105
// CHECK: error in hsa_amd_memory_async_copy: out of resources
// CHECK-NOT: unreachable
// CHECK-NOT: VIOLATION
// CHECK: status=134
// SDMA: async copy on selected SDMA requires ROCm 5.7
// SDMA-NOT: unreachable
// SDMA-NOT: VIOLATION
// SDMA: status=134
