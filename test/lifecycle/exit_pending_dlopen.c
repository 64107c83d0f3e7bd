// main returns while nowait teams reductions started by a library opened with
// dlopen are still pending (kernels of 5-20 ms), without a taskwait or a
// dlclose. The library's exit handler (which unregisters its image) was
// registered at dlopen, after the main executable's, so it runs first at
// exit; patch 0004 waited only when the main executable's image was
// unregistered, so the library's image was torn down under its own pending
// target tasks: "Host ptr ... does not have a matching target pointer" and a
// fatal error (status 134) under every transport (a new-user trial,
// 2026-12-01). Now any image waits once the main thread has started exiting
// (exit() runs the exiting thread's thread_local destructors before the
// atexit handlers; dlclose runs none, so a dlclose still never waits:
// test/host/dlclose_pending_host_task.c). main has a target region of its
// own, so the main executable's image is registered first.
// The `linked` build has no target region and no offload image of its own
// and links the library at start-up: every target region of the program is
// in the library, so no image was the main executable's and nothing waited
// (SIGSEGV with 0 launches, 3 of 3 runs, before 2026-12-01); the library's
// image now waits because it was registered on the main thread.
// Runs under TSan too: the pending tasks are the initial task's children,
// so the wait is a taskwait, whose ordering Archer models.
// REQUIRES: cuda-standin || hsa-standin
// DEFINE: %{quiet} = --implicit-check-not=VIOLATION --implicit-check-not="omptarget error"
// DEFINE: %{fcquiet} = --fc=--implicit-check-not=VIOLATION --fc=--implicit-check-not="omptarget error"
// DEFINE: %{delay} = KLE_STANDIN_DELAY_US=5000:20000
// RUN: %cuda{ %clang-sm90 -fPIC -shared %S/Inputs/exit_pending_dlopen_lib.c -o %t.cuda.so %}
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -ldl %}
// RUN: %cuda{ %clang-nooffload -DLINKED %s %t.cuda.so -o %t.cuda.linked %}
// RUN: %cuda{ %cuda-each -x staged %{fcquiet} %{delay} %t.cuda %t.cuda.so %}
// RUN: %cuda{ %cuda %as-zerocopy %{delay} %t.cuda.linked | %fc %{quiet} --check-prefixes=LINKED,LINKED-CUDA %}
// RUN: %hsa{ %clang-gfx90a -fPIC -shared %S/Inputs/exit_pending_dlopen_lib.c -o %t.hsa.so %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -ldl %}
// RUN: %hsa{ %clang-nooffload -DLINKED %s %t.hsa.so -o %t.hsa.linked %}
// RUN: %hsa{ %hsa-each -x staged %{fcquiet} %{delay} %t.hsa %t.hsa.so %}
// RUN: %hsa{ %hsa %as-zerocopy %{delay} %t.hsa.linked | %fc %{quiet} --check-prefixes=LINKED,LINKED-HSA %}
#include <dlfcn.h>
#include <stdio.h>
#ifdef LINKED
void lib_burst(int n);
int main(void) {
  lib_burst(8);
  printf("main returns with the library's regions pending\n");
  fflush(stdout);
  return 0;
}
#else
int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < 1024; ++i)
    s += i;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 2;
  }
  void (*burst)(int) = (void (*)(int))dlsym(h, "lib_burst");
  burst(8);
  printf("main returns with the library's regions pending\n");
  fflush(stdout);
  return 0;
}
#endif
// CHECK: main returns with the library's regions pending
// ZEROCOPY: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=9 resident=0; {{.*}} outstanding_at_deinit=0
// RESIDENT: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=0 resident=9; {{.*}} outstanding_at_deinit=0
// COPY: omptarget KLE stats: device 0: launches copy=9 staged=0 zerocopy=0 resident=0; {{.*}} outstanding_at_deinit=0
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=9 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=9 violations=0
// LINKED: main returns with the library's regions pending
// LINKED: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=8 resident=0; {{.*}} outstanding_at_deinit=0
// LINKED-CUDA: kle-standin: live device=0 pinned=0 managed=0
// LINKED-CUDA: kle-standin: launches=8 violations=0
// LINKED-HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// LINKED-HSA: kle-hsa-standin: launches=8 violations=0
