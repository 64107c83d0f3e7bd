//===- cuda_memory.cpp - Memory of the CUDA stand-in ----------------------===//
//
// TEST ONLY.  Allocations (device, pinned host, managed, module globals),
// frees, synchronous and async copies, memsets and the unsupported virtual
// memory calls of the CUDA stand-in, over the core's memory table.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"
#include "../core/kle_contract.h"

namespace cuda_standin {

using standin::contract::Check;
using standin::contract::reportOp;

const char *kindName(MemKind K) {
  switch (K) {
  case MemKind::Device: return "device";
  case MemKind::Pinned: return "pinned-host";
  case MemKind::Managed: return "managed";
  case MemKind::Module: return "module-global";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Memory: the core's table (standin::mem()).  Device memory lives in its
// PROT_NONE range (device pointers are not dereferenceable on the host) with
// a separate backing store; pinned/managed memory is host memory.  Device
// addresses are 512-byte granules with a granule of gap.  Small device
// allocations are poisoned with 0xA5 (real device memory is uninitialised);
// host and large (>= 1 MiB) device allocations read 0.  Addresses are never
// reused, so stale pointers are always recognised.
//===----------------------------------------------------------------------===//

size_t liveDeviceBytes() {
  size_t LN[standin::MaxKinds], LB[standin::MaxKinds], PN[standin::MaxKinds],
      PB[standin::MaxKinds];
  standin::mem().counts(LN, LB, PN, PB);
  return LB[int(MemKind::Device)] + LB[int(MemKind::Module)];
}

// Caller holds g().Mtx.
CUresult newAllocLocked(MemKind K, size_t Size, Ctx *Owner, AllocP &Out) {
  if (Size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  bool Dev = K == MemKind::Device || K == MemKind::Module;
  if (Dev) {
    size_t Used = liveDeviceBytes();
    if (Size > kTotalMem || Used + Size > kTotalMem)
      return ERR_OUT_OF_MEMORY;
  }
  auto A = std::make_shared<Alloc>();
  A->K = K;
  A->Owner = Owner;
  int Poison = Dev && Size < (size_t(1) << 20) ? 0xA5 : -1;
  if (!standin::mem().allocate(int(K), Size, Dev, Poison, /*Counted=*/true, A,
                               /*DevGranule=*/512, /*ReturnOnDrop=*/true))
    return ERR_OUT_OF_MEMORY;
  Out = A;
  return CUDA_SUCCESS;
}

// Caller holds g().Mtx.
AllocP resolveLocked(uintptr_t P, size_t N) {
  return asAlloc(standin::mem().resolve(P, N));
}

AllocP resolve(uintptr_t P, size_t N) {
  std::lock_guard<std::mutex> L(g().Mtx);
  return resolveLocked(P, N);
}

bool inDeviceRange(uintptr_t P) { return standin::mem().inDeviceRange(P); }

// Caller holds g().Mtx.
void releaseLocked(const AllocP &A, const char *By) {
  A->FreedBy = By;
  standin::mem().release(A);
  kleAtReleaseLocked(*A, By);
  hbAtReleaseLocked(*A);
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

// The kind of a host-side pointer: pinned/managed if tracked, pageable otherwise.
// Device pointers on the host side are an error.
enum class HostSide { Pageable, Tracked, DevicePtr };

static HostSide classifyHost(uintptr_t P, size_t N, AllocP &A) {
  A = resolve(P, N);
  if (A)
    return A->K == MemKind::Device || A->K == MemKind::Module ? HostSide::DevicePtr
                                                        : HostSide::Tracked;
  if (inDeviceRange(P))
    return HostSide::DevicePtr;
  return HostSide::Pageable;
}

static bool classifyPageable(uintptr_t P, size_t N) {
  AllocP A;
  return classifyHost(P, N, A) == HostSide::Pageable;
}

// Enqueue (or run synchronously when S == nullptr) a copy of N bytes.
// Dst/Src are device-visible addresses or host pointers.
static CUresult doCopy(const char *What, uintptr_t Dst, bool DstIsHostArg,
                uintptr_t Src, bool SrcIsHostArg, size_t N, Stream *S) {
  if (N == 0)
    return CUDA_SUCCESS;
  AllocP DA, SA;
  bool DstPageable = false, SrcPageable = false;
  if (DstIsHostArg) {
    HostSide HS = classifyHost(Dst, N, DA);
    if (HS == HostSide::DevicePtr)
      return CUDA_ERROR_INVALID_VALUE;
    DstPageable = HS == HostSide::Pageable;
  } else {
    DA = resolve(Dst, N);
    if (!DA)
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (SrcIsHostArg) {
    HostSide HS = classifyHost(Src, N, SA);
    if (HS == HostSide::DevicePtr)
      return CUDA_ERROR_INVALID_VALUE;
    SrcPageable = HS == HostSide::Pageable;
  } else {
    SA = resolve(Src, N);
    if (!SA)
      return CUDA_ERROR_INVALID_VALUE;
  }

  // Pageable source: the driver stages it before returning.
  std::shared_ptr<std::vector<uint8_t>> Staged;
  if (SrcPageable) {
    Staged = std::make_shared<std::vector<uint8_t>>(N);
    memcpy(Staged->data(), reinterpret_cast<const void *>(Src), N);
  }
  // Pinned source of a small async H2D copy: the contract remembers the
  // bytes at enqueue time (a staging slot recycled before the DMA ran).
  KleSourceSnapshot AtEnqueue = kleWatchCopySource(S, SA, DA, Src, N);
  if (DA) {
    std::lock_guard<std::mutex> L(g().Mtx);
    kleAtWriteLocked(*DA, Dst, N, S, SA ? SA->K : MemKind::Pinned,
                     SrcPageable);
  }

  auto Body = [=](Op &Self) {
    if ((DA && DA->Freed) || (SA && SA->Freed)) {
      reportOp(Check::B, "%s of %zu bytes %#llx -> %#llx executed after %s memory "
                  "was released (%s)",
                  What, N, (unsigned long long)Src, (unsigned long long)Dst,
                  DA && DA->Freed ? "destination" : "source",
                  DA && DA->Freed ? DA->FreedBy.c_str() : SA->FreedBy.c_str());
      return;
    }
    const uint8_t *From = Staged ? Staged->data()
                          : SA   ? SA->host(Src)
                                 : reinterpret_cast<const uint8_t *>(Src);
    uint8_t *To = DA ? DA->host(Dst) : reinterpret_cast<uint8_t *>(Dst);
    bool SrcChanged = kleCopySourceChanged(AtEnqueue, From, N);
    memmove(To, From, N);
    if (SrcIsHostArg && !DstIsHostArg) standin::plantedCopyHold(); // COPY_US
    if (S && DA)
      patchQueuedLaunches(S, Self, *DA, Dst, N, SrcChanged, Src);
  };
  if (!S) {
    hbSyncCopy(What, DA, Dst, SA, Src, N);
    Op O;
    Body(O);
    return CUDA_SUCCESS;
  }
  auto O = std::make_shared<Op>();
  O->What = What;
  O->Run = Body;
  hbDescribeCopy(*O, What, DA, Dst, SA, Src, N);
  uint64_t Seq = enqueue(S, O);
  if (DstIsHostArg && !SrcIsHostArg)
    countCopyBack(DstPageable);
  // D2H into pageable memory returns only once the copy completed (so once
  // everything before it on the stream did): a wait that sleeps.
  if (DstPageable) {
    sleepingWait(S->C, {{S, Seq}}, W_COPY_BACK);
    hbObserved(*S, Seq);
  }
  return CUDA_SUCCESS;
}

static CUresult doMemset(uintptr_t Dst, size_t Pitch, unsigned Val, size_t ElemSize,
                  size_t Width, size_t Height, CUstream H) {
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  if (Width == 0 || Height == 0)
    return CUDA_SUCCESS;
  if (Height > 1 && Pitch < Width * ElemSize)
    return CUDA_ERROR_INVALID_VALUE;
  size_t Span = (Height - 1) * Pitch + Width * ElemSize;
  AllocP DA = resolve(Dst, Span);
  if (!DA || Dst % ElemSize)
    return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    kleAtWriteLocked(*DA, Dst, Span, S, MemKind::Device, false);
  }
  auto O = std::make_shared<Op>();
  O->What = "memset";
  O->Run = [=](Op &Self) {
    if (DA->Freed) {
      reportOp(Check::B, "cuMemset* on %#llx executed after the memory was released (%s)",
                  (unsigned long long)Dst, DA->FreedBy.c_str());
      return;
    }
    for (size_t Row = 0; Row < Height; ++Row) {
      uint8_t *P = DA->host(Dst + Row * Pitch);
      for (size_t I = 0; I < Width; ++I)
        memcpy(P + I * ElemSize, &Val, ElemSize);
    }
    patchQueuedLaunches(S, Self, *DA, Dst, Span, false, 0);
  };
  hbDescribeCopy(*O, "cuMemset", DA, Dst, nullptr, 0, Span);
  enqueue(S, O);
  return CUDA_SUCCESS;
}

} // namespace cuda_standin

using namespace cuda_standin;

//===----------------------------------------------------------------------===//
// Exported driver API
//===----------------------------------------------------------------------===//

static CUresult allocCommon(MemKind K, size_t Size, uintptr_t &Out) {
  NEED_CTX();
  AllocP A;
  std::lock_guard<std::mutex> L(g().Mtx);
  if (CUresult Err = newAllocLocked(K, Size, CurrentCtx, A))
    return Err;
  Out = A->Addr;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *P, size_t Size) { // -> cuMemAlloc_v2
  ENTRY("cuMemAlloc_v2");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Device, Size, A))
    return Err;
  *P = A;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost(void **P, size_t Size) { // -> _v2
  ENTRY("cuMemAllocHost_v2");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Pinned, Size, A))
    return Err;
  *P = reinterpret_cast<void *>(A);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *P, size_t Size, unsigned Flags) {
  ENTRY("cuMemAllocManaged");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  if (Flags != CU_MEM_ATTACH_GLOBAL && Flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Managed, Size, A))
    return Err;
  *P = A;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *P, size_t Size, CUstream H) {
  ENTRY("cuMemAllocAsync");
  NEED_CTX();
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult Err;
  if (!streamArg(H, Err))
    return Err;
  uintptr_t A;
  if (CUresult E2 = allocCommon(MemKind::Device, Size, A))
    return E2;
  *P = A;
  return CUDA_SUCCESS;
}

static CUresult freeCommon(uintptr_t P, bool Host, const char *By) {
  NEED_CTX();
  if (!P)
    return CUDA_SUCCESS; // freeing NULL is a no-op
  std::lock_guard<std::mutex> L(g().Mtx);
  AllocP A = asAlloc(standin::mem().liveByStart(P));
  if (!A) {
    if (standin::mem().wasFreed(P))
      say("%s(%#llx): double free -> CUDA_ERROR_INVALID_VALUE", By,
          (unsigned long long)P);
    else
      say("%s(%#llx): not the start of a live allocation -> "
          "CUDA_ERROR_INVALID_VALUE", By, (unsigned long long)P);
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool IsHost = A->K == MemKind::Pinned;
  if (A->K == MemKind::Module || IsHost != Host) {
    say("%s(%#llx): wrong kind (%s) -> CUDA_ERROR_INVALID_VALUE", By,
        (unsigned long long)P, kindName(A->K));
    return CUDA_ERROR_INVALID_VALUE;
  }
  releaseLocked(A, By);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(CUdeviceptr P) { // -> cuMemFree_v2
  ENTRY("cuMemFree_v2");
  return freeCommon(P, false, "cuMemFree");
}

EXPORT CUresult cuMemFreeHost(void *P) {
  ENTRY("cuMemFreeHost");
  return freeCommon(reinterpret_cast<uintptr_t>(P), true, "cuMemFreeHost");
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr P, CUstream H) {
  ENTRY("cuMemFreeAsync");
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    AllocP A = asAlloc(standin::mem().liveByStart(P));
    if (!A || A->K == MemKind::Pinned || A->K == MemKind::Module)
      return CUDA_ERROR_INVALID_VALUE;
  }
  Ctx *C = CurrentCtx;
  auto O = std::make_shared<Op>();
  O->What = "cuMemFreeAsync";
  O->Run = [P, C](Op &) {
    Ctx *Saved = CurrentCtx;
    CurrentCtx = C;
    freeCommon(P, false, "cuMemFreeAsync");
    CurrentCtx = Saved;
  };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo(size_t *Free, size_t *Total) { // -> _v2
  ENTRY("cuMemGetInfo_v2");
  NEED_CTX();
  if (!Free || !Total)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  *Total = kTotalMem;
  *Free = kTotalMem - liveDeviceBytes();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *D, void *P,
                                             unsigned Flags) {
  ENTRY("cuMemHostGetDevicePointer_v2");
  NEED_CTX();
  if (!D || Flags)
    return CUDA_ERROR_INVALID_VALUE;
  AllocP A = resolve(reinterpret_cast<uintptr_t>(P), 1);
  if (!A || A->K != MemKind::Pinned)
    return CUDA_ERROR_INVALID_VALUE;
  *D = reinterpret_cast<CUdeviceptr>(P); // unified addressing
  return CUDA_SUCCESS;
}

// Synchronous copies: ordered after the context's default stream.
static CUresult syncCopy(const char *What, uintptr_t Dst, bool DH, uintptr_t Src,
                         bool SH, size_t N) {
  NEED_CTX();
  Stream *S = CurrentCtx->Default;
  uint64_t Tail = hbTail(*S);
  sleepingWait(CurrentCtx, {{S, Tail}}, W_SYNC_COPY);
  hbObserved(*S, Tail);
  if (DH && !SH)
    countCopyBack(classifyPageable(Dst, N));
  return doCopy(What, Dst, DH, Src, SH, N, nullptr);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr D, const void *S, size_t N) {
  ENTRY("cuMemcpyHtoD_v2");
  return syncCopy("cuMemcpyHtoD", D, false, reinterpret_cast<uintptr_t>(S), true, N);
}
EXPORT CUresult cuMemcpyDtoH_v2(void *D, CUdeviceptr S, size_t N) {
  ENTRY("cuMemcpyDtoH_v2");
  return syncCopy("cuMemcpyDtoH", reinterpret_cast<uintptr_t>(D), true, S, false, N);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr D, CUdeviceptr S, size_t N) {
  ENTRY("cuMemcpyDtoD_v2");
  return syncCopy("cuMemcpyDtoD", D, false, S, false, N);
}

static CUresult asyncCopy(const char *What, uintptr_t Dst, bool DH,
                          uintptr_t Src, bool SH, size_t N, CUstream H) {
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  return doCopy(What, Dst, DH, Src, SH, N, S);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr D, const void *S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyHtoDAsync_v2");
  return asyncCopy("cuMemcpyHtoDAsync", D, false, reinterpret_cast<uintptr_t>(S),
                   true, N, H);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *D, CUdeviceptr S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyDtoHAsync_v2");
  return asyncCopy("cuMemcpyDtoHAsync", reinterpret_cast<uintptr_t>(D), true, S,
                   false, N, H);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr D, CUdeviceptr S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyDtoDAsync_v2");
  return asyncCopy("cuMemcpyDtoDAsync", D, false, S, false, N, H);
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr D, CUcontext DC, CUdeviceptr S,
                                  CUcontext SC, size_t N, CUstream H) {
  ENTRY("cuMemcpyPeerAsync");
  if (!isHandle(DC, H_CTX) || !isHandle(SC, H_CTX))
    return ERR_INVALID_CONTEXT;
  return asyncCopy("cuMemcpyPeerAsync", D, false, S, false, N, H);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD8Async");
  return doMemset(D, 0, V & 0xff, 1, N, 1, S);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD16Async");
  return doMemset(D, 0, V & 0xffff, 2, N, 1, S);
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD32Async");
  return doMemset(D, 0, V, 4, N, 1, S);
}
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                  size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D8Async");
  return doMemset(D, P, V & 0xff, 1, W, Hh, S);
}
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                   size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D16Async");
  return doMemset(D, P, V & 0xffff, 2, W, Hh, S);
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                   size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D32Async");
  return doMemset(D, P, V, 4, W, Hh, S);
}

// Virtual memory management: not modelled (device attribute 102 reports 0).
EXPORT CUresult cuMemUnmap(CUdeviceptr, size_t) {
  ENTRY("cuMemUnmap");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle) {
  ENTRY("cuMemRelease");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemAddressFree(CUdeviceptr, size_t) {
  ENTRY("cuMemAddressFree");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemAddressReserve(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                    unsigned long long) {
  ENTRY("cuMemAddressReserve");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemMap(CUdeviceptr, size_t, size_t,
                         CUmemGenericAllocationHandle, unsigned long long) {
  ENTRY("cuMemMap");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t,
                            const CUmemAllocationProp *, unsigned long long) {
  ENTRY("cuMemCreate");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc *,
                               size_t) {
  ENTRY("cuMemSetAccess");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemGetAllocationGranularity(size_t *, const CUmemAllocationProp *,
                                              CUmemAllocationGranularity_flags) {
  ENTRY("cuMemGetAllocationGranularity");
  return ERR_NOT_SUPPORTED;
}

//===----------------------------------------------------------------------===//
// Aliases: the plain spellings of the entry points above (see
// cuda_context.cpp).
//===----------------------------------------------------------------------===//

#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocHost

EXPORT CUresult cuMemGetInfo(size_t *F, size_t *T) { return cuMemGetInfo_v2(F, T); }
EXPORT CUresult cuMemAlloc(CUdeviceptr *P, size_t S) { return cuMemAlloc_v2(P, S); }
EXPORT CUresult cuMemFree(CUdeviceptr P) { return cuMemFree_v2(P); }
EXPORT CUresult cuMemAllocHost(void **P, size_t S) { return cuMemAllocHost_v2(P, S); }
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr D, const void *S, size_t N) {
  return cuMemcpyHtoD_v2(D, S, N);
}
EXPORT CUresult cuMemcpyDtoH(void *D, CUdeviceptr S, size_t N) {
  return cuMemcpyDtoH_v2(D, S, N);
}
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr D, CUdeviceptr S, size_t N) {
  return cuMemcpyDtoD_v2(D, S, N);
}
EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr D, const void *S, size_t N,
                                  CUstream H) {
  return cuMemcpyHtoDAsync_v2(D, S, N, H);
}
EXPORT CUresult cuMemcpyDtoHAsync(void *D, CUdeviceptr S, size_t N, CUstream H) {
  return cuMemcpyDtoHAsync_v2(D, S, N, H);
}
EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr D, CUdeviceptr S, size_t N,
                                  CUstream H) {
  return cuMemcpyDtoDAsync_v2(D, S, N, H);
}
EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *D, void *P, unsigned F) {
  return cuMemHostGetDevicePointer_v2(D, P, F);
}
