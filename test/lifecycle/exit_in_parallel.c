// exit() from inside a parallel region (a `single`), right after that thread
// created nowait teams reductions whose kernels take 100-200 ms: the exit
// handler must let those target tasks finish before it tears the runtime
// down. Before patch 0004 covered this case (2026-12-01) the exit handler
// unregistered the image and deleted the PluginManager while the hidden
// helper threads had not launched any of them yet; they then ran on the
// torn-down runtime: SIGSEGV under copy, zerocopy and resident, the stand-in
// counting 0 launches. Now the calling task's children (these target tasks)
// are waited for, whatever the nesting level: exit status 0, 4 launches,
// nothing live or outstanding. Nowait regions created by the other threads
// of the team, or by an ancestor of the exiting task, are waited for through
// libomp's count of unfinished hidden helper tasks: exit_pending_elsewhere.c
// (docs/DESIGN.md "Shutdown with launches in flight").
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each -x staged KLE_STANDIN_DELAY_US=100000:200000 %t.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each -x staged KLE_STANDIN_DELAY_US=100000:200000 %t.hsa %}
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  static long s[4];
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      for (int k = 0; k < 4; ++k) {
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : s[k]) map(tofrom : s[k]) nowait
        for (int i = 0; i < 64; ++i)
          s[k] += 1;
      }
      printf("exiting inside the parallel region\n");
      fflush(stdout);
      exit(0);
    }
  }
  printf("unreachable\n");
  return 1;
}
// CHECK-NOT: VIOLATION
// CHECK: exiting inside the parallel region
// CHECK-NOT: unreachable
// ZEROCOPY: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=4 resident=0; {{.*}} outstanding_at_deinit=0
// RESIDENT: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=0 resident=4; {{.*}} outstanding_at_deinit=0
// COPY: omptarget KLE stats: device 0: launches copy=4 staged=0 zerocopy=0 resident=0; {{.*}} outstanding_at_deinit=0
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA: kle-standin: launches=4 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=4 violations=0
