//===- cuda_launch.cpp - Kernel launches of the CUDA stand-in -------------===//
//
// TEST ONLY.  cuLaunchKernel of the CUDA stand-in: argument checks, the
// launch record (parameter bytes copied at the call, dyn_ptr), and the
// kernel operation its stream's worker runs, with the KLE contract's checks
// at launch, at enqueue, at kernel start and at kernel end.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"

using namespace cuda_standin;

// Runs a launch on its stream's worker: the kernel "runs" KERNEL_US between
// the contract's start and end checks.
static void executeKernel(LaunchRec &LR) {
  Func *F = LR.F;
  if (core().Verbose)
    say("exec launch #%llu '%s' on stream %llu dyn_ptr=%#llx",
        (unsigned long long)LR.Index, F->Name.c_str(),
        (unsigned long long)LR.S->Id, (unsigned long long)LR.Dyn);
  kleAtKernelStart(LR);
  hbAtKernelStart(LR);
  standin::sleepUs(core().KernelUs);
  kleAtKernelEnd(LR);
}

//===------------------------------- launches -----------------------------===//

EXPORT CUresult cuLaunchKernel(CUfunction H, unsigned GX, unsigned GY,
                               unsigned GZ, unsigned BX, unsigned BY,
                               unsigned BZ, unsigned Smem, CUstream HS,
                               void **Params, void **Extra) {
  ENTRY("cuLaunchKernel");
  NEED_INIT();
  // A CUfunction carries its module's context: the launch runs there, and
  // the calling thread needs no current context. Seen on an H200 (driver
  // 580.159.04): upstream's CUDA plugin launches from hidden-helper threads
  // that never called cuCtxSetCurrent (test/gpu/nowait_depend_chain.c), and
  // the driver accepted it. Only the special streams (null, legacy,
  // per-thread) are resolved through the current context.
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!isHandle(F->M->C, H_CTX) || !F->M->C->Alive)
    return ERR_INVALID_CONTEXT;
  CUresult Err;
  Stream *S = streamArg(HS, Err);
  if (!S)
    return Err;
  if (S->C != F->M->C)
    return ERR_INVALID_CONTEXT; // a stream of another context
  if (!GX || !GY || !GZ || !BX || !BY || !BZ || GY > 65535 || GZ > 65535 ||
      BX > 1024 || BY > 1024 || BZ > 64)
    return CUDA_ERROR_INVALID_VALUE;
  if (uint64_t(BX) * BY * BZ > uint64_t(F->MaxThreads))
    return R(701); // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
  if (Smem > 49152 && int(Smem) > F->MaxDynShared)
    return CUDA_ERROR_INVALID_VALUE;

  // Record the parameter bytes now, as the driver does.
  std::vector<uint8_t> Bytes(F->ParamBytes, 0);
  if (Params && Extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (Params) {
    for (size_t I = 0; I < F->Params.size(); ++I)
      if (Params[I])
        memcpy(Bytes.data() + F->Params[I].Offset, Params[I], F->Params[I].Size);
      else
        return CUDA_ERROR_INVALID_VALUE;
  } else if (Extra) {
    void *Buf = nullptr;
    size_t *Len = nullptr;
    for (size_t I = 0; Extra[I] != CU_LAUNCH_PARAM_END; I += 2) {
      if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        Buf = Extra[I + 1];
      else if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        Len = static_cast<size_t *>(Extra[I + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!Buf || !Len || *Len != F->ParamBytes) {
      say("cuLaunchKernel('%s'): argument buffer size %zu != kernel parameter "
          "size %u -> CUDA_ERROR_INVALID_VALUE",
          F->Name.c_str(), Len ? *Len : 0, F->ParamBytes);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(Bytes.data(), Buf, F->ParamBytes);
  } else if (!F->Params.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }

  auto LR = new LaunchRec(); // owned by the op; freed after execution
  LR->Index = standin::nextLaunch();
  LR->F = F;
  LR->S = S;
  LR->Params = std::move(Bytes);
  if (!F->Params.empty() && F->Params[0].Size == 8 &&
      F->Params[0].Offset == 0) {
    memcpy(&LR->Dyn, LR->Params.data(), 8);
    LR->HasKle = LR->Dyn != 0 && LR->Dyn != ~uintptr_t(0);
    if (LR->HasKle)
      LR->Dyn = standin::contract::kleAddress(LR->Dyn, LR->HostFlag);
  }
  const char *KN = F->Name.c_str();
  kleAtLaunch(*LR);
  if (core().Verbose)
    say("cuLaunchKernel #%llu '%s' grid=%u,%u,%u block=%u,%u,%u stream=%llu "
        "dyn_ptr=%#llx",
        (unsigned long long)LR->Index, KN, GX, GY, GZ, BX, BY, BZ,
        (unsigned long long)S->Id, (unsigned long long)LR->Dyn);

  auto O = std::make_shared<Op>();
  O->What = "kernel";
  O->Launch = LR;
  O->Run = [LR](Op &) {
    executeKernel(*LR);
    LR->KleAlloc.reset();
    LR->RedAlloc.reset();
    // LaunchRec memory is kept (small) so late diagnostics never dangle.
  };
  // Snapshot and enqueue atomically w.r.t. the stream: a copy that executes
  // concurrently either is visible in the snapshot or patches this launch
  // (patchQueuedLaunches runs under S->M after the copy's data movement).
  {
    std::lock_guard<std::mutex> SL(S->M);
    kleAtEnqueue(*LR); // A1 snapshot, B, C
    O->Seq = ++S->Enqueued;
    hbAtEnqueueLocked(*S, *O);
    S->Q.push_back(O);
  }
  S->Wake.notify();
  return CUDA_SUCCESS;
}

