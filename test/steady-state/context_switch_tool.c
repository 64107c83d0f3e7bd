// An OMPT tool's callbacks are user code that runs between the copies of one
// construct: a tool that leaves the thread without a current CUDA context
// (or on its own) before the copy back must not make that copy fail. The
// plugin checks the context before each copy (patch 0024); checking once per
// queue and thread instead made the copy back fail ("invalid device
// context", abort).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t -ldl
// RUN: %cuda KLE_STANDIN_STATS=1 %t data none | %fc
// RUN: %cuda KLE_STANDIN_STATS=1 %t submit none | %fc
// RUN: %cuda KLE_STANDIN_STATS=1 %t data own | %fc
#include <dlfcn.h>
#include <omp-tools.h>
#include <stdio.h>
#include <string.h>

typedef int (*CtxGetFn)(void **);
typedef int (*CtxSetFn)(void *);
typedef int (*CtxCreateFn)(void **, unsigned, int);
static CtxGetFn Get;
static CtxSetFn Set;
static CtxCreateFn Create;
static void *Own;
static int AtSubmit, UseOwn, Switches;

/// Leaves the thread on no context, or on the tool's own.
static void switchContext(void) {
  if (!Set) {
    void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!Lib)
      return;
    Get = (CtxGetFn)dlsym(Lib, "cuCtxGetCurrent");
    Set = (CtxSetFn)dlsym(Lib, "cuCtxSetCurrent");
    Create = (CtxCreateFn)dlsym(Lib, "cuCtxCreate_v2");
  }
  if (UseOwn && !Own) {
    void *Current = NULL;
    Get(&Current);
    Create(&Own, 0, 0);
  }
  Set(UseOwn ? Own : NULL);
  ++Switches;
}

// Before a copy back: between the copy in and the copy back.
static void onDataOp(ompt_scope_endpoint_t Endpoint, ompt_data_t *TargetTask,
                     ompt_data_t *Target, ompt_id_t *HostOpId,
                     ompt_target_data_op_t Op, void *Src, int SrcDev,
                     void *Dst, int DstDev, size_t Bytes,
                     const void *CodePtr) {
  if (!AtSubmit && Endpoint == ompt_scope_begin &&
      Op == ompt_target_data_transfer_from_device)
    switchContext();
}

// After the kernel's submission: between the launch and the copy back.
static void onSubmit(ompt_scope_endpoint_t Endpoint, ompt_data_t *Target,
                     ompt_id_t *HostOpId, unsigned int Teams) {
  if (AtSubmit && Endpoint == ompt_scope_end)
    switchContext();
}

static int toolInit(ompt_function_lookup_t Lookup, int Dev,
                    ompt_data_t *Data) {
  ompt_set_callback_t SetCallback =
      (ompt_set_callback_t)Lookup("ompt_set_callback");
  SetCallback(ompt_callback_target_data_op_emi, (ompt_callback_t)onDataOp);
  SetCallback(ompt_callback_target_submit_emi, (ompt_callback_t)onSubmit);
  return 1;
}
static void toolFini(ompt_data_t *Data) {}
ompt_start_tool_result_t *ompt_start_tool(unsigned int Version,
                                          const char *Runtime) {
  static ompt_start_tool_result_t Result = {&toolInit, &toolFini, {0}};
  return &Result;
}

int main(int argc, char **argv) {
  AtSubmit = argc > 1 && !strcmp(argv[1], "submit");
  UseOwn = argc > 2 && !strcmp(argv[2], "own");
  int X = 0;
  for (int R = 0; R < 3; ++R) {
#pragma omp target map(tofrom : X)
    X += 1;
  }
  printf("switches=%d\n", Switches);
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK-NOT: invalid device context
// CHECK: switches=3
// CHECK: kle-standin: launches=3 violations=0
