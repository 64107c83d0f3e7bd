// A main executable that uses libomp and has no offload image dlopen()s,
// without RTLD_GLOBAL, a library with nowait regions (a plugin or a Python
// extension, say). libomp was loaded first and looked libomptarget's entry
// points up by name, which a local libomptarget hides: its nowait target
// tasks failed libomp's assertion ("Assertion failure at kmp_tasking.cpp",
// status 134) and omp_get_num_devices() returned 0. libomptarget now hands
// them to libomp when it initializes (__kmpc_set_offload_entries).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 -fPIC -shared %S/Inputs/dlopen_local_lib.c -o %t.cuda.so %}
// RUN: %cuda{ %clang-nooffload %s -o %t.cuda -ldl %}
// RUN: %cuda{ %cuda KLE_STANDIN_STATS=1 %t.cuda %t.cuda.so | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a -fPIC -shared %S/Inputs/dlopen_local_lib.c -o %t.hsa.so %}
// RUN: %hsa{ %clang-nooffload %s -o %t.hsa -ldl %}
// RUN: %hsa{ %hsa KLE_STANDIN_STATS=1 %t.hsa %t.hsa.so | %fc %}
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int Threads = 0;
#pragma omp parallel num_threads(2) // libomp starts before the library loads
#pragma omp single
  Threads = omp_get_num_threads();
  void *H = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!H) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  int (*Run)(void) = (int (*)(void))dlsym(H, "run");
  printf("threads %d, run %d\n", Threads, Run());
  fflush(stdout);
  return 0;
}
// CHECK: lib: devices {{[1-9]}}
// CHECK: threads 2, run 0
// CUDA: kle-standin: calls cuLaunchKernel=4{{$}}
// CHECK: {{kle-(hsa-)?standin}}: launches=4 violations=0
