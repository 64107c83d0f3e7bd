// exit() while nowait teams reductions (kernels of 100-200 ms) are in flight
// that are NOT children of the task calling exit(), one shape per argument:
//   other     another thread of the parallel region created them;
//   if0       the exiting thread's implicit task created them, and exit() is
//             called from an undeferred child task (task if(0));
//   deferred  the initial task created them in serial code, and exit() is
//             called from a deferred task inside a later parallel region;
//   fallback  the initial task created them, and exit() is called from the
//             host fallback of a deferred target task (target nowait if(0)),
//             on a hidden helper thread. libomp's exit then waited for the
//             hidden helper team to end, the exiting thread among it: a hang
//             in stock 22.1.8 as in the fork before patch 0004 skipped that
//             wait for a hidden helper thread (2026-12-07).
// Patch 0004's taskwait covers only the calling task's children; it now also
// waits for libomp's process-wide count of unfinished hidden helper tasks
// (__kmpc_unfinished_hidden_helper_tasks). Before that (found by a new-user
// trial, 2026-12-01) all three tore the runtime down under the pending tasks:
// SIGSEGV with 0 launches (if0, deferred) or "Host ptr ... does not have a
// matching target pointer" and a fatal error (other). Now: status 0, 4
// launches, nothing live or outstanding, under zerocopy, resident and copy.
// The `long` run makes kernels of 1-2 s (4 regions of several seconds each on
// the stand-in): an earlier version of the wait gave up after 10 s without a
// task finishing and tore the runtime down under a running kernel.
// REQUIRES: cuda-standin || hsa-standin
// Not under TSan: the exit path's wait orders the hidden helper threads'
// last accesses before the teardown through libomp's task counter, an atomic
// in the uninstrumented libomp that Archer does not model, so TSan reports
// the teardown (PluginManager::unregisterLib) as racing with them.
// UNSUPPORTED: tsan
// DEFINE: %{slow} = KLE_STANDIN_DELAY_US=100000:200000
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda %as-zerocopy %{slow} %t.cuda other | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda %as-resident %{slow} %t.cuda if0 | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda %as-copy %{slow} %t.cuda deferred | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda %as-resident %{slow} %t.cuda fallback | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda %as-zerocopy KLE_STANDIN_DELAY_US=1000000:2000000 %t.cuda other | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa %as-zerocopy %{slow} %t.hsa other | %fcs=CHECK,HSA %}
// RUN: %hsa{ %hsa %as-resident %{slow} %t.hsa if0 | %fcs=CHECK,HSA %}
// RUN: %hsa{ %hsa %as-copy %{slow} %t.hsa deferred | %fcs=CHECK,HSA %}
// RUN: %hsa{ %hsa %as-zerocopy %{slow} %t.hsa fallback | %fcs=CHECK,HSA %}
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
static long s[4];
static int issued;
static void issue(void) {
  for (int k = 0; k < 4; ++k) {
    long *r = &s[k];
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : r[0]) map(tofrom : r[0 : 1]) nowait
    for (int i = 0; i < 64; ++i)
      r[0] += 1;
  }
}
static void bye(void) {
  printf("exiting\n");
  fflush(stdout);
  exit(0);
}
int main(int argc, char **argv) {
  const char *shape = argc > 1 ? argv[1] : "";
  if (!strcmp(shape, "other")) {
#pragma omp parallel num_threads(2)
    {
      // Thread 0 exits once thread 1 has created its nowait regions (not
      // after a fixed delay, which a loaded machine can outlast).
      if (omp_get_thread_num() == 1) {
        issue();
        __atomic_store_n(&issued, 1, __ATOMIC_RELEASE);
        sleep(5);
      } else {
        while (!__atomic_load_n(&issued, __ATOMIC_ACQUIRE))
          usleep(1000);
        bye();
      }
    }
  } else if (!strcmp(shape, "if0")) {
#pragma omp parallel num_threads(2)
#pragma omp single
    {
      issue();
#pragma omp task if (0)
      bye();
    }
  } else if (!strcmp(shape, "deferred")) {
    issue();
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp task
    bye();
  } else if (!strcmp(shape, "fallback")) {
    issue();
#pragma omp target nowait if (0)
    bye();
#pragma omp taskwait
  }
  printf("unreachable\n");
  return 1;
}
// CHECK-NOT: VIOLATION
// CHECK: exiting
// CHECK-NOT: unreachable
// CHECK: omptarget KLE stats: device 0: launches {{.*}}; {{.*}} outstanding_at_deinit=0
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=4 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=4 violations=0
