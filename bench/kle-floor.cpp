//===-- kle-floor.cpp - The raw-driver floor of a target region -----------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// See kle-floor.h. The driver is reached through dlsym (no CUDA header);
// KLE_FLOOR_CUBIN (bench/CMakeLists.txt) is the embedded cubin.
//
//===----------------------------------------------------------------------===//

#include "kle-floor.h"

#include <dlfcn.h>

#include <algorithm>
#include <type_traits>

#if defined(KLE_FLOOR_CUBIN) && !defined(__NVPTX__) && !defined(__AMDGPU__)
__asm__(".pushsection .rodata.kle_floor_cubin,\"a\",@progbits\n"
        ".balign 16\n"
        ".globl kle_floor_cubin\n"
        ".hidden kle_floor_cubin\n"
        "kle_floor_cubin:\n"
        ".incbin \"" KLE_FLOOR_CUBIN "\"\n"
        ".byte 0\n"
        ".popsection\n");
extern "C" const unsigned char kle_floor_cubin[];
#define KLE_FLOOR_IMAGE kle_floor_cubin
#endif

namespace kle {

using CUresultTy = int;
using CUdeviceptrTy = unsigned long long;

// The driver entry points the floor calls: field, symbol, parameter types.
#define KLE_FLOOR_API(X)                                                       \
  X(Init, cuInit, unsigned)                                                    \
  X(DeviceGet, cuDeviceGet, int *, int)                                        \
  X(CtxCreate, cuCtxCreate_v2, void **, unsigned, int)                         \
  X(CtxDestroy, cuCtxDestroy_v2, void *)                                       \
  X(CtxSetCurrent, cuCtxSetCurrent, void *)                                    \
  X(ModuleLoadData, cuModuleLoadData, void **, const void *)                   \
  X(ModuleUnload, cuModuleUnload, void *)                                      \
  X(ModuleGetFunction, cuModuleGetFunction, void **, void *, const char *)     \
  X(StreamCreate, cuStreamCreate, void **, unsigned)                           \
  X(StreamDestroy, cuStreamDestroy_v2, void *)                                 \
  X(StreamSynchronize, cuStreamSynchronize, void *)                            \
  X(MemAlloc, cuMemAlloc_v2, CUdeviceptrTy *, size_t)                          \
  X(MemFree, cuMemFree_v2, CUdeviceptrTy)                                      \
  X(MemAllocHost, cuMemAllocHost_v2, void **, size_t)                          \
  X(MemFreeHost, cuMemFreeHost, void *)                                        \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, CUdeviceptrTy, const void *,        \
    size_t, void *)                                                            \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, void *, CUdeviceptrTy, size_t,      \
    void *)                                                                    \
  X(LaunchKernel, cuLaunchKernel, void *, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, unsigned, void *, void **, void **)          \
  X(GetErrorName, cuGetErrorName, CUresultTy, const char **)

struct FloorTy::ApiTy {
#define KLE_FLOOR_FIELD(Field, Symbol, ...) CUresultTy (*Field)(__VA_ARGS__);
  KLE_FLOOR_API(KLE_FLOOR_FIELD)
#undef KLE_FLOOR_FIELD
};

/// The driver's entry points, looked up once (in the handle the CUDA plugin
/// opened, else loaded anew); nullptr and \p Err if any is missing.
static const FloorTy::ApiTy *driverApi(std::string &Err) {
  static FloorTy::ApiTy Api;
  static const std::string Missing = [] {
    void *H = nullptr;
    for (int Mode : {RTLD_LAZY | RTLD_NOLOAD, RTLD_LAZY})
      for (const char *Name : {"libcuda.so", "libcuda.so.1"})
        H = H ? H : dlopen(Name, Mode);
    if (!H)
      return std::string("no CUDA driver library (libcuda.so, libcuda.so.1) "
                         "could be loaded");
    std::string Miss;
    auto Get = [&](auto &Fn, const char *Name) {
      Fn = reinterpret_cast<std::remove_reference_t<decltype(Fn)>>(
          dlsym(H, Name));
      if (!Fn)
        Miss += (Miss.empty() ? "" : ", ") + std::string(Name);
    };
#define KLE_FLOOR_GET(Field, Symbol, ...) Get(Api.Field, #Symbol);
    KLE_FLOOR_API(KLE_FLOOR_GET)
#undef KLE_FLOOR_GET
    return Miss.empty() ? Miss : "the CUDA driver lacks " + Miss;
  }();
  Err = Missing;
  return Missing.empty() ? &Api : nullptr;
}

bool FloorTy::check(int Res, const char *What, std::string &Err) {
  if (!Res)
    return true;
  const char *Name = nullptr;
  if (Api->GetErrorName(Res, &Name) || !Name)
    Name = "unknown error";
  Err = std::string(What) + " failed: " + Name + " (" +
        std::to_string(Res) + ")";
  return false;
}

std::unique_ptr<FloorTy> FloorTy::open(int Ordinal, int LoopTrip,
                                       std::string &Err, int Lanes) {
#ifndef KLE_FLOOR_IMAGE
  (void)Ordinal, (void)LoopTrip, (void)Lanes;
  Err = "this program was built without the floor's kernel (bench/ found no "
        "CUDA toolkit nvcc to build kle-floor.cu for sm_90)";
  return nullptr;
#else
  const ApiTy *Api = driverApi(Err);
  if (!Api)
    return nullptr;
  std::unique_ptr<FloorTy> F(new FloorTy());
  F->Api = Api;
  F->LoopTrip = LoopTrip;
  F->Streams.assign(Lanes < 1 ? 1 : Lanes > MaxLanes ? MaxLanes : Lanes,
                    nullptr);
  int Dev = 0;
  if (!F->check(Api->Init(0), "cuInit", Err) ||
      !F->check(Api->DeviceGet(&Dev, Ordinal), "cuDeviceGet", Err) ||
      // Flags 0: CU_CTX_SCHED_AUTO, the driver's default scheduling.
      !F->check(Api->CtxCreate(&F->Ctx, 0, Dev), "cuCtxCreate", Err) ||
      !F->check(Api->ModuleLoadData(&F->Module, KLE_FLOOR_IMAGE),
                "cuModuleLoadData (the embedded sm_90 floor kernel)", Err) ||
      !F->check(Api->ModuleGetFunction(&F->Fn, F->Module, "kle_floor_kernel"),
                "cuModuleGetFunction(kle_floor_kernel)", Err) ||
      !F->check(Api->MemAlloc(&F->DevBuf, MaxInFlight * sizeof(long)),
                "cuMemAlloc", Err) ||
      !F->check(Api->MemAllocHost(reinterpret_cast<void **>(&F->HostBuf),
                                  MaxInFlight * sizeof(long)),
                "cuMemAllocHost", Err))
    return nullptr; // the destructor frees what was made
  for (void *&S : F->Streams) // CU_STREAM_NON_BLOCKING, as the plugin's
    if (!F->check(Api->StreamCreate(&S, 1), "cuStreamCreate", Err))
      return nullptr;
  std::fill_n(F->HostBuf, MaxInFlight, 0);
  return F;
#endif
}

bool FloorTy::enqueue(void *Stream, int Slot, int Blocks, std::string &Err) {
  CUdeviceptrTy Dst = DevBuf + Slot * sizeof(long);
  int N = LoopTrip;
  void *Params[] = {&N, &Dst};
  return check(Api->MemcpyHtoDAsync(Dst, &HostBuf[Slot], sizeof(long), Stream),
               "cuMemcpyHtoDAsync", Err) &&
         check(Api->LaunchKernel(Fn, Blocks, 1, 1, BlockThreads, 1, 1, 0,
                                 Stream, Params, nullptr),
               "cuLaunchKernel", Err) &&
         check(Api->MemcpyDtoHAsync(&HostBuf[Slot], Dst, sizeof(long), Stream),
               "cuMemcpyDtoHAsync", Err);
}

bool FloorTy::region(int Blocks, std::string &Err, int Lane) {
  return check(Api->CtxSetCurrent(Ctx), "cuCtxSetCurrent", Err) &&
         enqueue(Streams[Lane], Lane, Blocks, Err) &&
         check(Api->StreamSynchronize(Streams[Lane]), "cuStreamSynchronize",
               Err);
}

bool FloorTy::batch(int N, int Blocks, std::string &Err) {
  if (!check(Api->CtxSetCurrent(Ctx), "cuCtxSetCurrent", Err))
    return false;
  for (int K = 0; K < N; ++K)
    if (!enqueue(Streams[0], K % MaxInFlight, Blocks, Err) ||
        (K % MaxInFlight == MaxInFlight - 1 && K + 1 < N &&
         !check(Api->StreamSynchronize(Streams[0]), "cuStreamSynchronize",
                Err)))
      return false;
  return check(Api->StreamSynchronize(Streams[0]), "cuStreamSynchronize", Err);
}

FloorTy::~FloorTy() {
  if (!Ctx)
    return;
  Api->CtxSetCurrent(Ctx);
  for (void *S : Streams)
    if (S)
      Api->StreamSynchronize(S);
  if (HostBuf)
    Api->MemFreeHost(HostBuf);
  if (DevBuf)
    Api->MemFree(DevBuf);
  for (void *S : Streams)
    if (S)
      Api->StreamDestroy(S);
  if (Module)
    Api->ModuleUnload(Module);
  Api->CtxDestroy(Ctx);
}

} // namespace kle
