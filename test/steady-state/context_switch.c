// User code that switches the thread's CUDA context between target regions:
// the plugin makes its context current only when another one is (patch
// 0024), so each region must find the thread on another context (the
// program's own, or none) and leave its own current. The stand-in rejects a
// stream of another context and any call without one, so a region that
// skipped the switch would fail its launch or copy.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t -ldl
// RUN: %cuda KLE_STANDIN_STATS=1 %t | %fc
#include <dlfcn.h>
#include <stdio.h>

typedef int (*CtxGetFn)(void **);
typedef int (*CtxSetFn)(void *);
typedef int (*CtxCreateFn)(void **, unsigned, int);
typedef int (*CtxDestroyFn)(void *);

int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x += 1;
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!Lib) {
    printf("libcuda.so.1 is not loaded\n");
    return 1;
  }
  CtxGetFn Get = (CtxGetFn)dlsym(Lib, "cuCtxGetCurrent");
  CtxSetFn Set = (CtxSetFn)dlsym(Lib, "cuCtxSetCurrent");
  CtxCreateFn Create = (CtxCreateFn)dlsym(Lib, "cuCtxCreate_v2");
  CtxDestroyFn Destroy = (CtxDestroyFn)dlsym(Lib, "cuCtxDestroy_v2");
  void *Plugin = NULL, *Mine = NULL, *Now = NULL;
  if (Get(&Plugin) || !Plugin || Create(&Mine, 0, 0) || !Mine) {
    printf("no context\n");
    return 1;
  }
  for (int R = 0; R < 4; ++R) {
    // Even rounds: the program's own context; odd rounds: none.
    if (Set(R % 2 ? NULL : Mine))
      return 1;
#pragma omp target map(tofrom : x)
    x += 1;
    Get(&Now);
    printf("round %d: %s\n", R, Now == Plugin ? "plugin's context" : "another");
  }
  fflush(stdout);
  return Destroy(Mine) != 0;
}
// CHECK: round 0: plugin's context
// CHECK-NEXT: round 1: plugin's context
// CHECK-NEXT: round 2: plugin's context
// CHECK-NEXT: round 3: plugin's context
// CHECK-NOT: VIOLATION
// CHECK: kle-standin: launches=5 violations=0
