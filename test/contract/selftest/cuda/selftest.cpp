//===- selftest.cpp - direct driver-API test of the CUDA stand-in ---------===//
//
// Usage: kle_standin_selftest <case> [cubin]
//   overwrite  launch with a pinned KLE slot as dyn_ptr, overwrite the slot
//              before the kernel ran           -> VIOLATION, exit status 97
//   free       same, but cuMemFreeHost the slot -> VIOLATION, exit status 97
//   correct    launch, synchronize, then reuse/free -> 0 violations, status 0
//   staged-race   pinned slot -> cuMemcpyHtoDAsync -> device KLE -> launch,
//              slot recycled before the copy ran (KLE_STANDIN_EXPECT=staged)
//                                                -> VIOLATION, exit status 97
//   staged-ok  same, slot recycled after synchronize -> status 0
//   api        driver semantics: error codes, stream/event ordering, module
//              globals, fault injection            -> status 0 on success
//   red-no-kle    a reduction kernel launched without a KLE (check E)
//   red-buffer    its KLE names a reduction buffer too small (check D)
//   counters-dirty  its tagged KLE names device counters that are not zero
//              at kernel start (check Z)
//   counters-inkle  its untagged KLE has non-zero in-KLE counters (Z)
//   no-copy    a device KLE nothing wrote, under KLE_STANDIN_EXPECT=copy (W)
//   other-stream  a device KLE filled on another stream than the launch's (W)
//   red-ok     the same kernel with a correct KLE  -> 0 violations, status 0
//   hb-copy-back  a kernel on one stream uses device memory that a copy on
//              another stream reads back without waiting for its event (H)
//   hb-kernel-read  a kernel reads device memory that a copy on another
//              stream has not finished writing, no event between them (H)
//   hb-ok      the same accesses ordered by events, by a stream
//              synchronization and by stream order -> 0 violations, status 0
//              (the other cases above: VIOLATION, exit status 97;
//              run-selftest.sh checks each one's line)
//
// The stand-in is dlopen()ed from KLE_STANDIN_LIB (compile-time default,
// overridable with the env var of the same name).  KLE_STANDIN_DELAY_US is set
// to a long delay (200 ms) unless already set, so the race windows are
// deterministic: every stream operation waits 200 ms before it executes.
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>
extern "C" {
#include "cuda.h"
}

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef KLE_STANDIN_LIB
#define KLE_STANDIN_LIB "libcuda.so.1"
#endif
#ifndef KLE_STANDIN_SELFTEST_CUBIN
#define KLE_STANDIN_SELFTEST_CUBIN ""
#endif

static void *Lib;
template <typename T> static T sym(const char *N) {
  void *P = dlsym(Lib, N);
  if (!P) {
    fprintf(stderr, "selftest: missing symbol %s\n", N);
    exit(2);
  }
  return reinterpret_cast<T>(P);
}

#define DECL(NAME, ...) static CUresult (*p_##NAME)(__VA_ARGS__);
DECL(cuInit, unsigned)
DECL(cuDeviceGet, CUdevice *, int)
DECL(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)
DECL(cuDevicePrimaryCtxRelease_v2, CUdevice)
DECL(cuCtxSetCurrent, CUcontext)
DECL(cuModuleLoadDataEx, CUmodule *, const void *, unsigned, void *, void **)
DECL(cuModuleGetFunction, CUfunction *, CUmodule, const char *)
DECL(cuModuleGetGlobal_v2, CUdeviceptr *, size_t *, CUmodule, const char *)
DECL(cuFuncGetParamInfo, CUfunction, size_t, size_t *, size_t *)
DECL(cuMemAllocHost_v2, void **, size_t)
DECL(cuMemFreeHost, void *)
DECL(cuMemAlloc_v2, CUdeviceptr *, size_t)
DECL(cuMemFree_v2, CUdeviceptr)
DECL(cuStreamCreate, CUstream *, unsigned)
DECL(cuStreamSynchronize, CUstream)
DECL(cuStreamQuery, CUstream)
DECL(cuStreamDestroy_v2, CUstream)
DECL(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,
     unsigned, unsigned, unsigned, CUstream, void **, void **)
DECL(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, size_t, CUstream)
DECL(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, size_t, CUstream)
DECL(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t)
DECL(cuMemcpyHtoD_v2, CUdeviceptr, const void *, size_t)
DECL(cuEventCreate, CUevent *, unsigned)
DECL(cuEventRecord, CUevent, CUstream)
DECL(cuEventQuery, CUevent)
DECL(cuEventSynchronize, CUevent)
DECL(cuStreamWaitEvent, CUstream, CUevent, unsigned)
DECL(cuDeviceGetAttribute, int *, CUdevice_attribute, CUdevice)

static void load() {
  const char *Path = getenv("KLE_STANDIN_LIB");
  if (!Path)
    Path = KLE_STANDIN_LIB;
  Lib = dlopen(Path, RTLD_NOW | RTLD_LOCAL);
  if (!Lib) {
    fprintf(stderr, "selftest: dlopen(%s): %s\n", Path, dlerror());
    exit(2);
  }
#define LOAD(NAME) p_##NAME = sym<decltype(p_##NAME)>(#NAME);
  LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain)
  LOAD(cuDevicePrimaryCtxRelease_v2) LOAD(cuCtxSetCurrent)
  LOAD(cuModuleLoadDataEx) LOAD(cuModuleGetFunction) LOAD(cuModuleGetGlobal_v2)
  LOAD(cuFuncGetParamInfo) LOAD(cuMemAllocHost_v2) LOAD(cuMemFreeHost)
  LOAD(cuMemAlloc_v2) LOAD(cuMemFree_v2) LOAD(cuStreamCreate)
  LOAD(cuStreamSynchronize) LOAD(cuStreamQuery) LOAD(cuStreamDestroy_v2)
  LOAD(cuLaunchKernel) LOAD(cuMemcpyHtoDAsync_v2) LOAD(cuMemcpyDtoHAsync_v2)
  LOAD(cuMemcpyDtoH_v2) LOAD(cuMemcpyHtoD_v2) LOAD(cuEventCreate)
  LOAD(cuEventRecord) LOAD(cuEventQuery) LOAD(cuEventSynchronize)
  LOAD(cuStreamWaitEvent) LOAD(cuDeviceGetAttribute)
}

static int Failures = 0;
#define CHECK_EQ(EXPR, WANT)                                                   \
  do {                                                                         \
    int Got__ = (int)(EXPR);                                                   \
    if (Got__ != (int)(WANT)) {                                                \
      fprintf(stderr, "selftest: FAIL %s:%d: %s = %d, want %d\n", __FILE__,    \
              __LINE__, #EXPR, Got__, (int)(WANT));                            \
      ++Failures;                                                              \
    }                                                                          \
  } while (0)
#define OK(EXPR) CHECK_EQ(EXPR, CUDA_SUCCESS)

struct KLE {
  uint32_t ReductionCnt, ReductionIterCnt;
  void *ReductionBuffer;
};

struct Env {
  CUdevice Dev;
  CUcontext Ctx;
  CUmodule Mod;
  CUfunction Kern;
  CUstream S;
};

static std::vector<char> readCubin(const char *Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In) {
    fprintf(stderr, "selftest: cannot read cubin '%s' (build needs ptxas); "
                    "skipping\n", Path);
    exit(77);
  }
  return std::vector<char>(std::istreambuf_iterator<char>(In), {});
}

static Env setup(const std::vector<char> &Cubin) {
  Env E{};
  OK(p_cuInit(0));
  OK(p_cuDeviceGet(&E.Dev, 0));
  OK(p_cuDevicePrimaryCtxRetain(&E.Ctx, E.Dev));
  OK(p_cuCtxSetCurrent(E.Ctx));
  OK(p_cuModuleLoadDataEx(&E.Mod, Cubin.data(), 0, nullptr, nullptr));
  OK(p_cuModuleGetFunction(&E.Kern, E.Mod, "kle_kernel"));
  OK(p_cuStreamCreate(&E.S, CU_STREAM_NON_BLOCKING));
  return E;
}

// dyn_ptr for a KLE in pinned host memory: its host flag (bit 0,
// Shared/KLEAbi.h) set, as the plugin sets it.
static void *hostKLE(void *Slot) {
  return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(Slot) | 1);
}

static CUresult launch(Env &E, void *DynPtr, int X) {
  void *Args[] = {&DynPtr, &X};
  return p_cuLaunchKernel(E.Kern, 1, 1, 1, 32, 1, 1, 0, E.S, Args, nullptr);
}

static void teardown(Env &E);

// A device KLE under KLE_STANDIN_EXPECT=copy: never written (no-copy), or
// written by a copy on a stream other than the launch's (other-stream).
static int caseArrival(const std::vector<char> &Cubin, const std::string &C) {
  Env E = setup(Cubin);
  CUdeviceptr DevKle = 0;
  OK(p_cuMemAlloc_v2(&DevKle, sizeof(KLE)));
  CUstream S2;
  OK(p_cuStreamCreate(&S2, CU_STREAM_NON_BLOCKING));
  KLE Host{0, 0, nullptr};
  if (C == "other-stream")
    OK(p_cuMemcpyHtoDAsync_v2(DevKle, &Host, sizeof(KLE), S2)); // BUG
  OK(p_cuStreamSynchronize(S2));
  OK(launch(E, reinterpret_cast<void *>(DevKle), 1));
  OK(p_cuStreamSynchronize(E.S));
  OK(p_cuStreamDestroy_v2(S2));
  OK(p_cuMemFree_v2(DevKle));
  teardown(E);
  return Failures ? 1 : 0;
}

// One launch of red_kernel with a KLE in pinned host memory (as zerocopy
// passes it), correct for red-ok, wrong in the one way case \p C names.
static int caseReduction(const std::vector<char> &Cubin, const std::string &C) {
  Env E = setup(Cubin);
  CUfunction Red;
  OK(p_cuModuleGetFunction(&Red, E.Mod, "red_kernel"));
  CUdeviceptr Buf = 0, Small = 0, Cnt = 0;
  OK(p_cuMemAlloc_v2(&Buf, 8 * 4));
  OK(p_cuMemAlloc_v2(&Small, 16)); // BUG for red-buffer: needs 32 bytes
  OK(p_cuMemAlloc_v2(&Cnt, 8));
  uint64_t CntValue = C == "counters-dirty" ? 3 : 0; // BUG: not reset
  OK(p_cuMemcpyHtoD_v2(Cnt, &CntValue, 8));
  KLE *Slot = nullptr;
  OK(p_cuMemAllocHost_v2(reinterpret_cast<void **>(&Slot), sizeof(KLE)));
  *Slot = KLE{0, 0, reinterpret_cast<void *>(Buf)};
  if (C == "red-buffer")
    Slot->ReductionBuffer = reinterpret_cast<void *>(Small);
  if (C == "counters-inkle")
    Slot->ReductionCnt = 2; // BUG: the previous launch's count
  if (C == "counters-dirty") {
    // Tagged layout: word 0 the counters' address, bit 0 of word 1 set.
    memcpy(Slot, &Cnt, 8);
    Slot->ReductionBuffer = reinterpret_cast<void *>(Buf | 1);
  }
  void *Dyn = C == "red-no-kle" ? reinterpret_cast<void *>(~uintptr_t(0))
                                : hostKLE(Slot);
  int X = 1;
  void *Args[] = {&Dyn, &X};
  OK(p_cuLaunchKernel(Red, 4, 1, 1, 32, 1, 1, 0, E.S, Args, nullptr));
  OK(p_cuStreamSynchronize(E.S));
  OK(p_cuMemFreeHost(Slot));
  OK(p_cuMemFree_v2(Cnt));
  OK(p_cuMemFree_v2(Small));
  OK(p_cuMemFree_v2(Buf));
  teardown(E);
  return Failures ? 1 : 0;
}

// Device memory shared by a copy and a kernel on two streams: ordered by an
// event, a host synchronization or stream order (hb-ok), or not ordered at
// all in the one way case \p C names (the happens-before check, H).  The
// copies move the bytes the memory already holds (the 0xA5 poison), so only
// H can fire.
static int caseHappensBefore(const std::vector<char> &Cubin,
                             const std::string &C) {
  Env E = setup(Cubin);
  CUstream S2;
  OK(p_cuStreamCreate(&S2, CU_STREAM_NON_BLOCKING));
  CUevent Ev;
  OK(p_cuEventCreate(&Ev, 0));
  CUdeviceptr X = 0;
  OK(p_cuMemAlloc_v2(&X, 64));
  unsigned char *Pin = nullptr;
  OK(p_cuMemAllocHost_v2(reinterpret_cast<void **>(&Pin), 64));
  memset(Pin, 0xA5, 64);
  CUdeviceptr K = X + 16; // dyn_ptr: the kernel uses its 16 KLE bytes
  void *Dyn = reinterpret_cast<void *>(K);
  if (C == "hb-kernel-read") {
    OK(p_cuMemcpyHtoDAsync_v2(K, Pin, 16, S2));
    OK(launch(E, Dyn, 0)); // BUG: no event between the copy and the kernel
  } else if (C == "hb-copy-back") {
    OK(launch(E, Dyn, 0));
    OK(p_cuMemcpyDtoHAsync_v2(Pin, K, 16, S2)); // BUG: no event
  } else {
    // A copy on S2, the kernel on E.S after the copy's event, the copy back
    // on S2 after the kernel's event.
    OK(p_cuMemcpyHtoDAsync_v2(K, Pin, 16, S2));
    OK(p_cuEventRecord(Ev, S2));
    OK(p_cuStreamWaitEvent(E.S, Ev, 0));
    OK(launch(E, Dyn, 0));
    OK(p_cuEventRecord(Ev, E.S));
    OK(p_cuStreamWaitEvent(S2, Ev, 0));
    OK(p_cuMemcpyDtoHAsync_v2(Pin, K, 16, S2));
    // A copy ordered by a host synchronization of the kernel's stream (the
    // kernel after one of the copy's).
    OK(p_cuStreamSynchronize(S2));
    OK(launch(E, Dyn, 0));
    OK(p_cuStreamSynchronize(E.S));
    OK(p_cuMemcpyDtoHAsync_v2(Pin, K, 16, S2));
    // By an event the host synchronized with.
    OK(p_cuMemcpyHtoDAsync_v2(K, Pin, 16, S2));
    OK(p_cuEventRecord(Ev, S2));
    OK(p_cuEventSynchronize(Ev));
    OK(launch(E, Dyn, 0));
    // By stream order, and a synchronous copy after the host synchronized.
    OK(p_cuMemcpyDtoHAsync_v2(Pin, K, 16, E.S));
    OK(p_cuStreamSynchronize(E.S));
    OK(p_cuMemcpyDtoH_v2(Pin, K, 16));
  }
  OK(p_cuStreamSynchronize(S2));
  OK(p_cuStreamSynchronize(E.S));
  OK(p_cuStreamDestroy_v2(S2));
  OK(p_cuMemFreeHost(Pin));
  OK(p_cuMemFree_v2(X));
  teardown(E);
  return Failures ? 1 : 0;
}

static void teardown(Env &E) {
  OK(p_cuStreamDestroy_v2(E.S));
  OK(p_cuDevicePrimaryCtxRelease_v2(E.Dev));
}

static int caseZeroCopy(const std::vector<char> &Cubin, const std::string &C) {
  Env E = setup(Cubin);
  KLE *Slot = nullptr;
  OK(p_cuMemAllocHost_v2(reinterpret_cast<void **>(&Slot), sizeof(KLE)));
  *Slot = KLE{0, 0, nullptr};
  OK(launch(E, hostKLE(Slot), 1));
  // The kernel is queued behind a 200 ms delay: it has not run yet.
  CHECK_EQ(p_cuStreamQuery(E.S), CUDA_ERROR_NOT_READY);
  if (C == "overwrite") {
    Slot->ReductionCnt = 0xdead; // BUG: slot reused for the next launch
    OK(p_cuStreamSynchronize(E.S));
    OK(p_cuMemFreeHost(Slot));
  } else if (C == "free") {
    OK(p_cuMemFreeHost(Slot)); // BUG: returned to the allocator too early
    OK(p_cuStreamSynchronize(E.S));
  } else { // correct
    OK(p_cuStreamSynchronize(E.S));
    CHECK_EQ(p_cuStreamQuery(E.S), CUDA_SUCCESS);
    Slot->ReductionCnt = 0xbeef; // fine: the kernel completed
    OK(p_cuMemFreeHost(Slot));
  }
  teardown(E);
  return Failures ? 1 : 0;
}

// Staged path: pinned slot -> async H2D copy -> device KLE -> launch.
static int caseStaged(const std::vector<char> &Cubin, bool Race) {
  Env E = setup(Cubin);
  KLE *Slot = nullptr;
  CUdeviceptr DevKle = 0;
  OK(p_cuMemAllocHost_v2(reinterpret_cast<void **>(&Slot), sizeof(KLE)));
  OK(p_cuMemAlloc_v2(&DevKle, sizeof(KLE)));
  *Slot = KLE{0, 0, nullptr};
  OK(p_cuMemcpyHtoDAsync_v2(DevKle, Slot, sizeof(KLE), E.S));
  OK(launch(E, reinterpret_cast<void *>(DevKle), 1));
  if (Race)
    Slot->ReductionIterCnt = 77; // BUG: DMA has not read the slot yet
  OK(p_cuStreamSynchronize(E.S));
  Slot->ReductionIterCnt = 78; // fine after synchronize
  OK(p_cuMemFree_v2(DevKle));
  OK(p_cuMemFreeHost(Slot));
  teardown(E);
  return Failures ? 1 : 0;
}

static int caseApi(const std::vector<char> &Cubin) {
  // Before cuInit.
  CUdevice D;
  CHECK_EQ(p_cuDeviceGet(&D, 0), 3 /*CUDA_ERROR_NOT_INITIALIZED*/);
  Env E = setup(Cubin);
  int V = 0;
  OK(p_cuDeviceGetAttribute(&V, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  CHECK_EQ(V, 9);
  OK(p_cuDeviceGetAttribute(&V, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  CHECK_EQ(V, 132);
  OK(p_cuDeviceGetAttribute(&V, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
  CHECK_EQ(V, 1);

  // Kernel parameter layout from the cubin's .nv.info.
  size_t Off = 99, Sz = 99;
  OK(p_cuFuncGetParamInfo(E.Kern, 0, &Off, &Sz));
  CHECK_EQ(Off, 0);
  CHECK_EQ(Sz, 8);
  OK(p_cuFuncGetParamInfo(E.Kern, 1, &Off, &Sz));
  CHECK_EQ(Off, 8);
  CHECK_EQ(Sz, 4);
  CHECK_EQ(p_cuFuncGetParamInfo(E.Kern, 2, &Off, &Sz), CUDA_ERROR_INVALID_VALUE);
  CUfunction F;
  CHECK_EQ(p_cuModuleGetFunction(&F, E.Mod, "nope"), CUDA_ERROR_NOT_FOUND);

  // Module globals carry their initial values.
  CUdeviceptr G = 0;
  size_t GS = 0;
  OK(p_cuModuleGetGlobal_v2(&G, &GS, E.Mod, "kle_table"));
  CHECK_EQ(GS, 32);
  long Table[4] = {0, 0, 0, 0};
  OK(p_cuMemcpyDtoH_v2(Table, G, sizeof(Table)));
  CHECK_EQ(Table[0], 11);
  CHECK_EQ(Table[3], 44);
  OK(p_cuModuleGetGlobal_v2(&G, &GS, E.Mod, "__kle_abi_version"));
  int Abi = 0;
  OK(p_cuMemcpyDtoH_v2(&Abi, G, 4));
  CHECK_EQ(Abi, 1);
  CHECK_EQ(p_cuModuleGetGlobal_v2(&G, &GS, E.Mod, "missing"), CUDA_ERROR_NOT_FOUND);

  // Memory kinds and bad pointers.
  CUdeviceptr Dp = 0;
  OK(p_cuMemAlloc_v2(&Dp, 64));
  CHECK_EQ(p_cuMemFreeHost(reinterpret_cast<void *>(Dp)), CUDA_ERROR_INVALID_VALUE);
  char Host[64] = {1};
  // A pageable host pointer is not a device pointer.
  CHECK_EQ(p_cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(Host), Host, 8),
           CUDA_ERROR_INVALID_VALUE);
  // A device pointer is not a host pointer.
  CHECK_EQ(p_cuMemcpyDtoH_v2(reinterpret_cast<void *>(Dp), Dp, 8),
           CUDA_ERROR_INVALID_VALUE);
  // Out of bounds.
  CHECK_EQ(p_cuMemcpyHtoD_v2(Dp + 60, Host, 8), CUDA_ERROR_INVALID_VALUE);
  OK(p_cuMemFree_v2(Dp));
  CHECK_EQ(p_cuMemFree_v2(Dp), CUDA_ERROR_INVALID_VALUE); // double free
  CHECK_EQ(p_cuStreamSynchronize(reinterpret_cast<CUstream>(Host)),
           CUDA_ERROR_INVALID_HANDLE);

  // Async copies read a pinned source at execution time (DMA semantics).
  int *Pin = nullptr;
  OK(p_cuMemAllocHost_v2(reinterpret_cast<void **>(&Pin), 4));
  OK(p_cuMemAlloc_v2(&Dp, 4));
  *Pin = 1;
  OK(p_cuMemcpyHtoDAsync_v2(Dp, Pin, 4, E.S));
  *Pin = 2; // the copy has not executed yet
  int Out = 0;
  OK(p_cuStreamSynchronize(E.S));
  OK(p_cuMemcpyDtoH_v2(&Out, Dp, 4));
  CHECK_EQ(Out, 2);
  // ... and a pageable source at call time (driver staging).
  int Pageable = 5;
  OK(p_cuMemcpyHtoDAsync_v2(Dp, &Pageable, 4, E.S));
  Pageable = 6;
  OK(p_cuStreamSynchronize(E.S));
  OK(p_cuMemcpyDtoH_v2(&Out, Dp, 4));
  CHECK_EQ(Out, 5);

  // Events and cross-stream waits.
  CUstream S2;
  OK(p_cuStreamCreate(&S2, CU_STREAM_NON_BLOCKING));
  CUevent Ev;
  OK(p_cuEventCreate(&Ev, 0));
  CHECK_EQ(p_cuEventQuery(Ev), CUDA_SUCCESS); // never recorded
  OK(p_cuMemcpyHtoDAsync_v2(Dp, Pin, 4, E.S));
  OK(p_cuEventRecord(Ev, E.S));
  CHECK_EQ(p_cuEventQuery(Ev), CUDA_ERROR_NOT_READY);
  OK(p_cuStreamWaitEvent(S2, Ev, 0));
  OK(p_cuMemcpyDtoHAsync_v2(Pin, Dp, 4, S2));
  CHECK_EQ(p_cuStreamQuery(S2), CUDA_ERROR_NOT_READY);
  OK(p_cuStreamSynchronize(S2));
  CHECK_EQ(p_cuEventQuery(Ev), CUDA_SUCCESS);
  OK(p_cuEventSynchronize(Ev));
  OK(p_cuStreamDestroy_v2(S2));
  CHECK_EQ(p_cuStreamQuery(S2), CUDA_ERROR_INVALID_HANDLE);
  OK(p_cuMemFree_v2(Dp));
  OK(p_cuMemFreeHost(Pin));

  // Launch validation and ~0 dyn_ptr (no KLE).
  OK(launch(E, reinterpret_cast<void *>(~uintptr_t(0)), 3));
  void *Args[] = {nullptr, nullptr};
  CHECK_EQ(p_cuLaunchKernel(E.Kern, 1, 1, 1, 2048, 1, 1, 0, E.S, Args, nullptr),
           CUDA_ERROR_INVALID_VALUE);
  // Extra-buffer launch with a wrong size is rejected like the driver does.
  struct { void *P; int X; int Pad; } Buf = {nullptr, 1, 0};
  size_t BufSize = sizeof(Buf); // 16: tail padding, kernel wants 12
  void *Cfg[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &Buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                 &BufSize, CU_LAUNCH_PARAM_END};
  CHECK_EQ(p_cuLaunchKernel(E.Kern, 1, 1, 1, 1, 1, 1, 0, E.S, nullptr, Cfg),
           CUDA_ERROR_INVALID_VALUE);
  BufSize = 12;
  OK(p_cuLaunchKernel(E.Kern, 1, 1, 1, 1, 1, 1, 0, E.S, nullptr, Cfg));
  OK(p_cuStreamSynchronize(E.S));

  // Fault injection: the run script sets KLE_STANDIN_FAIL=cuMemAllocHost:2:2
  // (the first cuMemAllocHost above was call #1).
  if (getenv("KLE_STANDIN_FAIL")) {
    void *P = nullptr;
    CHECK_EQ(p_cuMemAllocHost_v2(&P, 16), 2 /*OUT_OF_MEMORY*/);
    OK(p_cuMemAllocHost_v2(&P, 16));
    OK(p_cuMemFreeHost(P));
  }
  teardown(E);
  if (Failures)
    fprintf(stderr, "selftest: api: %d failure(s)\n", Failures);
  else
    fprintf(stderr, "selftest: api: all checks passed\n");
  return Failures ? 1 : 0;
}

int main(int Argc, char **Argv) {
  if (Argc < 2) {
    fprintf(stderr, "usage: %s overwrite|free|correct|staged-race|staged-ok|api"
                    "|red-no-kle|red-buffer|counters-dirty|counters-inkle|red-ok"
                    "|no-copy|other-stream|hb-copy-back|hb-kernel-read|hb-ok"
                    " [cubin]\n", Argv[0]);
    return 2;
  }
  std::string C = Argv[1];
  const char *CubinPath = Argc > 2 ? Argv[2] : KLE_STANDIN_SELFTEST_CUBIN;
  if (!*CubinPath) {
    fprintf(stderr, "selftest: no cubin; skipping\n");
    return 77;
  }
  setenv("KLE_STANDIN_DELAY_US", "200000:200000", /*overwrite=*/0);
  if (C == "staged-race" || C == "staged-ok")
    setenv("KLE_STANDIN_EXPECT", "staged", 0);
  if (C == "no-copy" || C == "other-stream")
    setenv("KLE_STANDIN_EXPECT", "copy", 0);
  std::vector<char> Cubin = readCubin(CubinPath);
  load();
  if (C == "overwrite" || C == "free" || C == "correct")
    return caseZeroCopy(Cubin, C);
  if (C == "staged-race")
    return caseStaged(Cubin, true);
  if (C == "staged-ok")
    return caseStaged(Cubin, false);
  if (C == "api")
    return caseApi(Cubin);
  if (C == "red-no-kle" || C == "red-buffer" || C == "counters-dirty" ||
      C == "counters-inkle" || C == "red-ok")
    return caseReduction(Cubin, C);
  if (C == "no-copy" || C == "other-stream")
    return caseArrival(Cubin, C);
  if (C == "hb-copy-back" || C == "hb-kernel-read" || C == "hb-ok")
    return caseHappensBefore(Cubin, C);
  fprintf(stderr, "selftest: unknown case %s\n", C.c_str());
  return 2;
}
