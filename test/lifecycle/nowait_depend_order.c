// A chain of `target ... nowait depend(...)` kernels, each with a cross-team
// reduction (so a KLE): stage_a depend(out), stage_b depend(inout), stage_c
// depend(in), four rounds, one taskwait at the end. Under every transport
// each kernel is launched exactly once (12 launches), and each is launched
// only after its predecessor ran (kernels run 2 ms; the CUDA stand-in logs a
// launch when it is enqueued and again when it executes, the HSA stand-in
// when its packet's doorbell rings and again when it completed).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-each KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 %t.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-each KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 %t.hsa %}
#include <stdio.h>
#define N 256
static long sa, sb, sc;
static int tok; // the dependence object

static void stage_a(void) {
#pragma omp target teams distribute parallel for reduction(+ : sa) map(tofrom : sa) \
    nowait depend(out : tok)
  for (int i = 0; i < N; ++i)
    sa += 1;
}
static void stage_b(void) {
#pragma omp target teams distribute parallel for reduction(+ : sb) map(tofrom : sb) \
    nowait depend(inout : tok)
  for (int i = 0; i < N; ++i)
    sb += 2;
}
static void stage_c(void) {
#pragma omp target teams distribute parallel for reduction(+ : sc) map(tofrom : sc) \
    nowait depend(in : tok)
  for (int i = 0; i < N; ++i)
    sc += 3;
}

int main(void) {
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int r = 0; r < 4; ++r) {
      stage_a();
      stage_b();
      stage_c();
    }
#pragma omp taskwait
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CUDA: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CUDA: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_a_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_b_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_c_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_a_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_b_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_c_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_a_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_b_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_c_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_a_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_b_l
// HSA: launch #[[L]] done
// HSA: launch #[[L:[0-9]+]] queue {{.*}}_stage_c_l
// HSA: launch #[[L]] done
// CUDA-NOT: cuLaunchKernel #
// HSA-NOT: launch #{{[0-9]+}} queue
// CHECK: done
// ZEROCOPY: launches copy=0 staged=0 zerocopy=12 resident=0;
// STAGED: launches copy=0 staged=12 zerocopy=0 resident=0;
// COPY: launches copy=12 staged=0 zerocopy=0 resident=0;
// RESIDENT: launches copy=0 staged=0 zerocopy=0 resident=12;
// CUDA: kle-standin: launches=12 violations=0
// HSA: kle-hsa-standin: launches=12 violations=0
