// A chain of `target ... nowait depend(...)` kernels, each with a cross-team
// reduction (so a KLE): stage_a depend(out), stage_b depend(inout), stage_c
// depend(in), four rounds, one taskwait at the end. Under every transport
// each kernel is launched exactly once (12 launches), and each is launched
// only after its predecessor ran (the stand-in logs a launch when it is
// enqueued and again when it executes; kernels run 2 ms).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %standin-env KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 LIBOMPTARGET_KLE_TRANSPORT=zerocopy KLE_STANDIN_EXPECT=zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: %standin-env KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 LIBOMPTARGET_KLE_TRANSPORT=staged KLE_STANDIN_EXPECT=staged LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,STAGED %s
// RUN: %standin-env KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 LIBOMPTARGET_KLE_TRANSPORT=copy KLE_STANDIN_EXPECT=copy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,COPY %s
// RUN: %standin-env KLE_STANDIN_VERBOSE=1 KLE_STANDIN_KERNEL_US=2000 LIBOMPTARGET_KLE_TRANSPORT=resident KLE_STANDIN_EXPECT=resident LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,RESIDENT %s
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
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_a_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_b_l
// CHECK: cuLaunchKernel #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK: exec launch #{{[0-9]+}} '{{.*}}_stage_c_l
// CHECK-NOT: cuLaunchKernel #
// CHECK: done
// ZEROCOPY: launches copy=0 staged=0 zerocopy=12 resident=0;
// STAGED: launches copy=0 staged=12 zerocopy=0 resident=0;
// COPY: launches copy=12 staged=0 zerocopy=0 resident=0;
// RESIDENT: launches copy=0 staged=0 zerocopy=0 resident=12;
// CHECK: kle-standin: launches=12 violations=0
