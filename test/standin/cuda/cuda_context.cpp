//===- cuda_context.cpp - Init, devices and contexts of the CUDA stand-in -===//
//
// TEST ONLY.  cuInit, the device queries (an H100 SXM's attributes), error
// strings, primary and created contexts (destruction drains their streams
// and prints their report) and peer access of the CUDA stand-in.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"

namespace cuda_standin {

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

Ctx *newCtx(int Dev, bool Primary) {
  auto *C = new Ctx();
  C->Dev = Dev;
  C->Primary = Primary;
  C->Default = newStream(C, true);
  if (!C->Default) { // no thread for its default stream
    delete C;
    return nullptr;
  }
  addHandle(C, H_CTX);
  return C;
}

void destroyCtx(Ctx *C, const char *Why) {
  // Drain all work of the context (KLE checks of pending kernels still run).
  std::vector<Stream *> Ss;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    Ss = C->Streams;
  }
  size_t Pending = 0;
  for (Stream *S : Ss) {
    std::lock_guard<std::mutex> L(S->M);
    Pending += S->Q.size();
  }
  if (Pending)
    say("%s: draining %zu pending stream operation(s)", Why, Pending);
  for (Stream *S : Ss)
    drain(S);
  char At[96];
  snprintf(At, sizeof(At), "%s(dev%d)", Why, C->Dev);
  liveReport(At, C);
  // A stream the program (or the plugin) created and never destroyed: the
  // driver frees it with its context, but nothing released it.
  size_t Undestroyed = 0;
  for (Stream *S : Ss) {
    std::lock_guard<std::mutex> L(S->M);
    Undestroyed += !S->IsDefault && !S->Destroyed;
  }
  if (Undestroyed)
    say("streams never destroyed: %zu at=%s", Undestroyed, At);
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    C->Alive = false;
    g().Handles.erase(C);
    for (Stream *S : Ss)
      g().Handles.erase(S);
    std::vector<AllocP> Owned;
    for (auto &Blk : standin::mem().live())
      if (asAlloc(Blk)->Owner == C)
        Owned.push_back(asAlloc(Blk));
    for (auto &A : Owned)
      releaseLocked(A, "context destruction");
  }
  if (CurrentCtx == C)
    CurrentCtx = nullptr;
  if (g().Exiting && !anyCtxAlive())
    finalReport(At);
  else
    statsReport();
}

} // namespace cuda_standin

using namespace cuda_standin;

//===----------------------------------------------------------------------===//
// Exported driver API
//===----------------------------------------------------------------------===//

EXPORT CUresult cuInit(unsigned Flags) {
  ENTRY("cuInit");
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  if (!g().Initialized) {
    g().PrimaryCtx.assign(cfg().NumDevices, nullptr);
    g().DevFlags.assign(cfg().NumDevices, 0);
    g().Initialized = true;
    if (core().Verbose)
      fprintf(stderr, "kle-standin: cuInit devices=%d delay=%llu:%llu us expect=%d\n",
              cfg().NumDevices, (unsigned long long)core().DelayMin,
              (unsigned long long)core().DelayMax, (int)core().Expect);
  }
  if (cfg().NumDevices == 0)
    return CUDA_ERROR_NO_DEVICE;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *V) {
  ENTRY("cuDriverGetVersion");
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  *V = 12080;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *N) {
  ENTRY("cuDeviceGetCount");
  NEED_INIT();
  if (!N)
    return CUDA_ERROR_INVALID_VALUE;
  *N = cfg().NumDevices;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *D, int Ordinal) {
  ENTRY("cuDeviceGet");
  NEED_INIT();
  if (!D)
    return CUDA_ERROR_INVALID_VALUE;
  if (Ordinal < 0 || Ordinal >= cfg().NumDevices)
    return ERR_INVALID_DEVICE;
  *D = Ordinal;
  return CUDA_SUCCESS;
}

static bool validDev(CUdevice D) { return D >= 0 && D < cfg().NumDevices; }

EXPORT CUresult cuDeviceGetName(char *Name, int Len, CUdevice D) {
  ENTRY("cuDeviceGetName");
  NEED_INIT();
  if (!Name || Len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  snprintf(Name, Len, "KLE CPU stand-in (sm_%d) #%d", cfg().SM, D);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *U, CUdevice D) {
  ENTRY("cuDeviceGetUuid");
  NEED_INIT();
  if (!U)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  memcpy(U->bytes, "KLE-STANDIN-0000", 16);
  U->bytes[15] = char('0' + D % 10);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *U, CUdevice D) {
  return cuDeviceGetUuid(U, D);
}

EXPORT CUresult cuDeviceTotalMem(size_t *B, CUdevice D) { // -> _v2 via header
  ENTRY("cuDeviceTotalMem_v2");
  NEED_INIT();
  if (!B)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  *B = kTotalMem;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *V, CUdevice_attribute A, CUdevice D) {
  ENTRY("cuDeviceGetAttribute");
  NEED_INIT();
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  int I = static_cast<int>(A);
  if (I <= 0 || I >= 200)
    return CUDA_ERROR_INVALID_VALUE;
  static const std::unordered_map<int, int> T = {
      {1, 1024},       {2, 1024},      {3, 1024},     {4, 64},
      {5, 2147483647}, {6, 65535},     {7, 65535},    {8, 49152},
      {9, 65536},      {10, 32},       {11, 2147483647}, {12, 65536},
      {13, 1980000},   {14, 512},      {15, 1},       {16, 132},
      {17, 0},         {18, 0},        {19, 1},       {20, 0},
      {30, 512},       {31, 1},        {32, 1},       {33, 0x19},
      {34, 0},         {35, 0},        {36, 2619000}, {37, 5120},
      {38, 52428800},  {39, 2048},     {40, 5},       {41, 1},
      {50, 0},         {51, 32},       {75, 9},       {76, 0},
      {78, 1},         {79, 1},        {80, 1},       {81, 233472},
      {82, 65536},     {83, 1},        {84, 0},       {85, 0},
      {86, 0},         {87, 2},        {88, 0},       {89, 1},
      {90, 1},         {91, 1},        {92, 1},       {93, 1},
      {94, 1},         {95, 1},        {96, 0},       {97, 232448},
      {98, 0},         {99, 1},        {100, 0},      {101, 0},
      // Virtual memory management is not modelled: report unsupported so
      // the plugin does not use cuMemCreate/cuMemMap.
      {102, 0},        {106, 32},      {107, 0},      {108, 0},
      {109, 134213632}, {111, 1024},   {115, 1},      {116, 0}};
  auto It = T.find(I);
  *V = It == T.end() ? 0 : It->second;
  if (I == 75 || I == 76) // COMPUTE_CAPABILITY_MAJOR, _MINOR
    *V = I == 75 ? cfg().SM / 10 : cfg().SM % 10;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult E, const char **S) {
  ENTRY("cuGetErrorString");
  if (!S)
    return CUDA_ERROR_INVALID_VALUE;
  static const std::unordered_map<int, const char *> T = {
      {0, "no error"},
      {1, "invalid argument"},
      {2, "out of memory"},
      {3, "initialization error"},
      {4, "driver shutting down"},
      {100, "no CUDA-capable device is detected"},
      {101, "invalid device ordinal"},
      {200, "device kernel image is invalid"},
      {201, "invalid device context"},
      {209, "no kernel image is available for execution on the device"},
      {218, "a PTX JIT compilation failed"},
      {400, "invalid resource handle"},
      {500, "named symbol not found"},
      {600, "device not ready"},
      {700, "an illegal memory access was encountered"},
      {701, "too many resources requested for launch"},
      {704, "peer access is already enabled"},
      {709, "context is destroyed"},
      {719, "unspecified launch failure"},
      {801, "operation not supported"},
      {999, "unknown error"}};
  auto It = T.find(static_cast<int>(E));
  if (It == T.end()) {
    *S = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *S = It->second;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult E, const char **S) {
  ENTRY("cuGetErrorName");
  if (!S)
    return CUDA_ERROR_INVALID_VALUE;
  static char Buf[64];
  snprintf(Buf, sizeof(Buf), "CUDA_ERROR_%d", (int)E);
  *S = E == CUDA_SUCCESS ? "CUDA_SUCCESS" : Buf;
  return CUDA_SUCCESS;
}

//===------------------------------ contexts ------------------------------===//

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *C, CUdevice D) {
  ENTRY("cuDevicePrimaryCtxRetain");
  NEED_INIT();
  if (!C)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X;
  {
    std::unique_lock<std::mutex> L(g().Mtx);
    X = g().PrimaryCtx[D];
    if (X && X->Alive) {
      X->Ref++;
      *C = reinterpret_cast<CUcontext>(X);
      return CUDA_SUCCESS;
    }
  }
  X = newCtx(D, true);
  if (!X)
    return ERR_OUT_OF_MEMORY;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    X->Flags = g().DevFlags[D];
    X->Ref = 1;
    g().PrimaryCtx[D] = X;
  }
  *C = reinterpret_cast<CUcontext>(X);
  return CUDA_SUCCESS;
}

static CUresult primaryRelease(CUdevice D, bool Reset) {
  NEED_INIT();
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    X = g().PrimaryCtx[D];
    if (!X || !X->Alive || X->Ref <= 0)
      return Reset ? CUDA_SUCCESS : ERR_INVALID_CONTEXT;
    if (Reset)
      X->Ref = 0;
    else if (--X->Ref > 0)
      return CUDA_SUCCESS;
  }
  destroyCtx(X, Reset ? "cuDevicePrimaryCtxReset" : "cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice D) { // -> _v2
  ENTRY("cuDevicePrimaryCtxRelease_v2");
  return primaryRelease(D, false);
}
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice D) {
  ENTRY("cuDevicePrimaryCtxReset_v2");
  return primaryRelease(D, true);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice D, unsigned *Flags,
                                           int *Active) {
  ENTRY("cuDevicePrimaryCtxGetState");
  NEED_INIT();
  if (!Flags || !Active)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  std::lock_guard<std::mutex> L(g().Mtx);
  Ctx *X = g().PrimaryCtx[D];
  *Active = X && X->Alive && X->Ref > 0;
  *Flags = g().DevFlags[D];
  return CUDA_SUCCESS;
}

// One scheduling mode at most: auto (0), spin, yield or blocking sync; the
// driver refuses two at once.
static bool validSched(unsigned Flags) {
  unsigned Sched = Flags & CU_CTX_SCHED_MASK; // auto 0, spin 1, yield 2
  return Sched <= 2 || Sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice D, unsigned Flags) { // _v2
  ENTRY("cuDevicePrimaryCtxSetFlags_v2");
  NEED_INIT();
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  if ((Flags & ~0x1Fu) || !validSched(Flags))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  g().DevFlags[D] = Flags;
  if (Ctx *X = g().PrimaryCtx[D])
    X->Flags = Flags;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *C, unsigned Flags, CUdevice D) {
  ENTRY("cuCtxCreate_v2");
  NEED_INIT();
  if (!C || !validSched(Flags))
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X = newCtx(D, false);
  if (!X)
    return ERR_OUT_OF_MEMORY;
  X->Ref = 1;
  X->Flags = Flags;
  CurrentCtx = X;
  *C = reinterpret_cast<CUcontext>(X);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext C) {
  ENTRY("cuCtxDestroy_v2");
  NEED_INIT();
  Ctx *X = reinterpret_cast<Ctx *>(C);
  if (!isHandle(X, H_CTX))
    return ERR_INVALID_CONTEXT;
  if (X->Primary)
    return CUDA_ERROR_INVALID_VALUE; // primary contexts: use Release/Reset
  destroyCtx(X, "cuCtxDestroy");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext C) {
  ENTRY("cuCtxSetCurrent");
  NEED_INIT();
  if (!C) {
    CurrentCtx = nullptr;
    return CUDA_SUCCESS;
  }
  Ctx *X = reinterpret_cast<Ctx *>(C);
  if (!isHandle(X, H_CTX))
    return ERR_INVALID_CONTEXT;
  CurrentCtx = X;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *C) {
  ENTRY("cuCtxGetCurrent");
  NEED_INIT();
  if (!C)
    return CUDA_ERROR_INVALID_VALUE;
  *C = reinterpret_cast<CUcontext>(CurrentCtx);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *D) {
  ENTRY("cuCtxGetDevice");
  NEED_CTX();
  if (!D)
    return CUDA_ERROR_INVALID_VALUE;
  *D = CurrentCtx->Dev;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize() {
  ENTRY("cuCtxSynchronize");
  NEED_CTX();
  std::vector<Stream *> Ss;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    Ss = CurrentCtx->Streams;
  }
  std::vector<std::pair<Stream *, uint64_t>> Ops;
  for (Stream *S : Ss)
    Ops.emplace_back(S, hbTail(*S));
  sleepingWait(CurrentCtx, Ops, W_CTX_SYNC);
  for (auto &[S, Tail] : Ops)
    hbObserved(*S, Tail);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetFlags(unsigned *Flags) {
  ENTRY("cuCtxGetFlags");
  NEED_CTX();
  if (!Flags)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  *Flags = CurrentCtx->Flags;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetLimit(CUlimit Lim, size_t V) {
  ENTRY("cuCtxSetLimit");
  NEED_CTX();
  int I = static_cast<int>(Lim);
  if (I < 0 || I > 6)
    return R(215); // CUDA_ERROR_UNSUPPORTED_LIMIT
  CurrentCtx->Limits[I] = V;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetLimit(size_t *V, CUlimit Lim) {
  ENTRY("cuCtxGetLimit");
  NEED_CTX();
  int I = static_cast<int>(Lim);
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  if (I < 0 || I > 6)
    return R(215);
  *V = CurrentCtx->Limits[I];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *Can, CUdevice A, CUdevice B) {
  ENTRY("cuDeviceCanAccessPeer");
  NEED_INIT();
  if (!Can)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(A) || !validDev(B))
    return ERR_INVALID_DEVICE;
  *Can = A != B;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext Peer, unsigned Flags) {
  ENTRY("cuCtxEnablePeerAccess");
  NEED_CTX();
  Ctx *P = reinterpret_cast<Ctx *>(Peer);
  if (!isHandle(P, H_CTX))
    return ERR_INVALID_CONTEXT;
  if (Flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (P->Dev == CurrentCtx->Dev)
    return ERR_INVALID_DEVICE;
  if (!CurrentCtx->PeerEnabled.insert(P->Dev).second)
    return ERR_PEER_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Aliases: names the plugin (or the toolkit cuda.h) may resolve.  The plugin
// prefers the _v2 names for some entries and uses the header-renamed names
// for others; export both spellings.
//===----------------------------------------------------------------------===//

#undef cuDeviceTotalMem
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags

EXPORT CUresult cuDeviceTotalMem(size_t *B, CUdevice D) {
  return cuDeviceTotalMem_v2(B, D);
}
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice D) {
  return cuDevicePrimaryCtxRelease_v2(D);
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice D, unsigned F) {
  return cuDevicePrimaryCtxSetFlags_v2(D, F);
}
EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice D) {
  return cuDevicePrimaryCtxReset_v2(D);
}
EXPORT CUresult cuCtxDestroy(CUcontext C) { return cuCtxDestroy_v2(C); }
EXPORT CUresult cuCtxCreate(CUcontext *C, unsigned F, CUdevice D) {
  return cuCtxCreate_v2(C, F, D);
}
