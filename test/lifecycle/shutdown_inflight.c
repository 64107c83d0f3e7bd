// Exit while nowait launches are still in flight (no taskwait): the runtime
// must finish them before it frees KLE memory or releases the context.
// Upstream LLVM 22.1.8 crashed here, with and without the stand-in: the
// program's atexit handler (__tgt_unregister_lib) tore libomptarget down while
// hidden helper threads still held the deferred target tasks, which then
// called __tgt_target_kernel on a deleted PluginManager. Patch 0004 waits for
// the calling task's children first; test/host/exit_with_nowait_inflight.c
// checks the same on the host device.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=2000:5000 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=2000:5000 %t.hsa | %fcs=CHECK,HSA %}
#include <stdio.h>
#define N 1024
int main(void) {
  static long s[16];
  // Deferred target tasks of the initial thread (hidden helper threads); no
  // taskwait before returning from main.
  for (int k = 0; k < 16; ++k) {
#pragma omp target teams distribute parallel for reduction(+ : s[k]) map(tofrom : s[k]) nowait
    for (int i = 0; i < N; ++i) s[k] += i;
  }
  printf("returning with launches in flight\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: returning with launches in flight
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=16 violations=0
// The HSA stand-in's own report (the gfx90a runs):
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=16 violations=0
