// A targetsync interop object on a CUDA device: interop use(o) and interop
// destroy(o) synchronize the object's stream, which the plugin destroys once.
// Before patch 0010 the plugin had no sync barrier: both aborted ("Interop
// sync barrier failed"), and the stream was never returned to the pool, so
// never destroyed. A host function queued on the stream with a 200 ms stand-in
// delay must have run when interop use returns.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -ldl -o %t
// RUN: %cuda-each -p CHECK KLE_STANDIN_DELAY_US=200000:200000 KLE_STANDIN_STATS_FILE=%t.{t}.stats %t
// RUN: %each-transport -c %s -p STATS cat %t.{t}.stats
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

typedef int (*LaunchHostFuncTy)(void *Stream, void (*Fn)(void *), void *Data);
static volatile int Ran;
static void hostFn(void *Data) { Ran = 1; }

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0); // ordered with the stand-in's stderr
  omp_interop_t o = omp_interop_none;
#pragma omp interop init(targetsync : o) device(0)
  int rc = 0;
  void *Stream = omp_get_interop_ptr(o, omp_ipr_targetsync, &rc);
  printf("stream %s rc=%d\n", Stream ? "set" : "null", rc);
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  LaunchHostFuncTy Launch =
      Lib ? (LaunchHostFuncTy)dlsym(Lib, "cuLaunchHostFunc") : 0;
  if (!Stream || !Launch || Launch(Stream, hostFn, 0) != 0) {
    printf("cannot queue a host function\n");
    return 1;
  }
#pragma omp interop use(o)
  printf("after use: ran=%d\n", Ran);
#pragma omp interop destroy(o)
  printf("destroyed\n");
  return 0;
}
// CHECK: stream set rc=0
// CHECK-NEXT: after use: ran=1
// CHECK-NEXT: destroyed
// CHECK-NOT: streams never destroyed
// CHECK: kle-standin: live device=0
// CHECK-NOT: streams never destroyed
// CHECK: launches=0 violations=0
// CHECK-NOT: streams never destroyed
// STATS-DAG: cuStreamSynchronize 2
// STATS-DAG: cuLaunchHostFunc 1
// STATS-DAG: cuStreamCreate [[N:[0-9]+]]
// STATS-DAG: cuStreamDestroy_v2 [[N]]
