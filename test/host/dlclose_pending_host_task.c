// dlclose of a library with offload code must not wait for unrelated tasks
// of the caller. Upstream's __tgt_unregister_lib (which dlclose runs) never
// waits for tasks. Patch 0004 finishes deferred target tasks before an image
// is unregistered, but only at process exit (for the main executable's image,
// or for any image once the main thread started exiting), so dlclose returns
// here although the calling
// (initial) task still has a pending detached host task, whose event is
// fulfilled only after dlclose returned. Before that limit, dlclose from
// serial code waited for every child task (__kmpc_omp_taskwait) and this
// program hung in dlclose: the timeout fails the test.
// RUN: %clang-host -fPIC -shared %S/Inputs/dlclose_lib.c -o %t.so
// RUN: %clang-host %s -o %t
// RUN: timeout 60 %t %t.so | %fc
// CHECK: lib_work=4950
// CHECK-NEXT: dlclose returned 0
// CHECK-NEXT: detached task done
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  omp_event_handle_t ev;
  // A child task of the initial task that stays incomplete until ev is
  // fulfilled, which happens only after dlclose.
#pragma omp task detach(ev)
  {}

  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  long (*work)(void) = (long (*)(void))dlsym(h, "lib_work");
  printf("lib_work=%ld\n", work ? work() : -1L);
  fflush(stdout);
  int rc = dlclose(h);
  printf("dlclose returned %d\n", rc);
  fflush(stdout);

  omp_fulfill_event(ev);
#pragma omp taskwait
  printf("detached task done\n");
  return rc;
}
