// resident with many slots of one slab written while others are reused: 8
// threads x 50 nowait reductions, with no slot-kept buffers
// (LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=0), so every launch brings a new
// reduction buffer and rewrites its slot's device KLE. A slot's KLE written
// long ago (more than the stand-in's 16 most recent writes to the slab) and
// reused unchanged is still a written KLE: the stand-in once reported
// "resident KLE ... was never written" here (found by a new-user trial).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 -O2 %s -o %t.cuda %}
// RUN: %cuda{ %cuda %as-resident LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=0 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %cuda{ %cuda %as-resident LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=8192 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a -O2 %s -o %t.hsa %}
// RUN: %hsa{ %hsa %as-resident LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=0 %t.hsa | %fcs=CHECK,HSA %}
// RUN: %hsa{ %hsa %as-resident LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL=8192 %t.hsa | %fcs=CHECK,HSA %}
#include <omp.h>
#include <stdio.h>
int main(void) {
  static long res[8][50];
#pragma omp parallel num_threads(8)
  {
    int t = omp_get_thread_num();
    for (int k = 0; k < 50; k++) {
      long *r = &res[t][k];
#pragma omp target teams distribute parallel for reduction(+ : r[0])         \
    map(tofrom : r[0 : 1]) nowait depend(inout : r[0])
      for (int i = 0; i < 1000; i++)
        r[0] += 1;
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: launches copy=0 staged=0 zerocopy=0 resident=400;
// CUDA: kle-standin: launches=400 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA: kle-hsa-standin: launches=400 violations=0
