//===- kle_contract_cuda.cpp - The CUDA stand-in's KLE checks -------------===//
//
// TEST ONLY.  The CUDA front's adapter to the KLE contract (../core/
// kle_contract.h; table in ../README.md): it translates cuLaunchKernel, the
// stream's execution of launches and writes, and the frees into the
// contract's checks, and keeps CUDA's ordering rule (a device KLE must be
// filled on the launch stream, or under resident by any earlier write).
//
//===----------------------------------------------------------------------===//

#include "kle_contract_cuda.h"
#include "cuda_front.h"
#include "../core/kle_contract.h"

using namespace standin::contract;
using standin::Transport;

namespace cuda_standin {

static std::string hexAddr(uintptr_t P) {
  char B[24];
  snprintf(B, sizeof(B), "%#llx", (unsigned long long)P);
  return B;
}

static Place placeOf(MemKind K) {
  switch (K) {
  case MemKind::Device: return Place::Device;
  case MemKind::Pinned: return Place::HostPinned;
  default: return Place::Other;
  }
}

KleConfig kleConfigFromEnv() {
  KleConfig C;
  uint64_t N;
  if (standin::envNumber("KLE_SIZE", 1, 4096, N, "1..4096 bytes"))
    C.KleSize = N;
  if (const char *E = standin::frontEnv("KLE_LAYOUT")) {
    if (std::string(E) == "llvm22" || std::string(E) == "none")
      C.Llvm22Layout = std::string(E) == "llvm22";
    else
      fprintf(stderr, "%s: ignoring %sKLE_LAYOUT=%s (want llvm22 or none)\n",
              standin::tag(), standin::envPrefix(), E);
  }
  return C;
}

//===----------------------------------------------------------------------===//
// Writes and copies (A1, A2, C)
//===----------------------------------------------------------------------===//

void kleAtWriteLocked(Alloc &A, uintptr_t Lo, size_t N, Stream *S,
                      MemKind SrcKind, bool SrcPageable) {
  WriteRec W{Lo, Lo + N, S, ++g().WriteOrder, SrcKind, SrcPageable};
  A.Writes.push_back(W);
  if (N == KLESize)
    A.KleWrites.insert(Lo);
  if (A.Writes.size() > 16)
    A.Writes.pop_front();
}

KleSourceSnapshot kleWatchCopySource(Stream *S, const AllocP &SA,
                                     const AllocP &DA, uintptr_t Src,
                                     size_t N) {
  // Pinned source of a small async H2D copy: remember the bytes at enqueue
  // time to detect a staging slot recycled before the DMA ran.
  KleSourceSnapshot AtEnqueue;
  if (S && SA && SA->K == MemKind::Pinned && DA &&
      (DA->K == MemKind::Device) && N <= WatchMax)
    AtEnqueue = std::make_shared<SourceWatch>(
        watchSource(static_cast<const uint8_t *>(SA->host(Src)), N));
  return AtEnqueue;
}

bool kleCopySourceChanged(const KleSourceSnapshot &AtEnqueue,
                          const uint8_t *From, size_t N) {
  return AtEnqueue && sourceChanged(*AtEnqueue, From);
}

void kleAfterQueuedWrite(LaunchRec &LR, Alloc &Dst, uintptr_t Lo, size_t N,
                         bool SrcChanged, uintptr_t SrcAddr) {
  uintptr_t KLo = LR.Dyn, KHi = LR.Dyn + LR.Expected.size();
  uintptr_t WLo = std::max(KLo, Lo), WHi = std::min(KHi, Lo + N);
  if (WLo >= WHi)
    return;
  memcpy(LR.Expected.data() + (WLo - KLo), Dst.host(WLo), WHi - WLo);
  if (SrcChanged)
    report(LR.Index, Check::A2,
           "kernel '%s': the pinned staging source %#llx of the copy that "
           "fills its KLE (%#llx) was modified after cuMemcpyHtoDAsync was "
           "enqueued and before the copy executed",
              LR.F->Name.c_str(), (unsigned long long)SrcAddr,
              (unsigned long long)LR.Dyn);
}

//===----------------------------------------------------------------------===//
// At launch (E, A1 snapshot, C)
//===----------------------------------------------------------------------===//

void kleAtLaunch(const LaunchRec &LR) {
  const Func *F = LR.F;
  checkPresent(LR.Index, F->Name.c_str(),
               F->HasKernelEnv &&
                   needsKle(F->ReductionDataSize, F->ReductionBufferLength),
               LR.HasKle, LR.Dyn);
}

// cuLaunchKernel's snapshot of device memory at dyn_ptr: deliberately not
// seen by ThreadSanitizer (a volatile byte loop, so no memcpy interceptor).
__attribute__((no_sanitize("thread"))) static void
snapshotDeviceBytes(void *Dst, const void *Src, size_t N) {
  auto *D = static_cast<volatile unsigned char *>(Dst);
  auto *S = static_cast<const volatile unsigned char *>(Src);
  for (size_t I = 0; I < N; ++I)
    D[I] = S[I];
}

void kleAtEnqueue(LaunchRec &LR) {
  const char *KN = LR.F->Name.c_str();
  size_t KleN = cfg().Kle.KleSize;
  if (LR.HasKle) {
    LR.Expected.assign(KleN, 0);
    std::lock_guard<std::mutex> L(g().Mtx);
    AllocP A = resolveLocked(LR.Dyn, KleN);
    if (A) {
      LR.KleAlloc = A;
      A->Launches.push_back(&LR);
      // Launch snapshot. Device memory may be being written right now by
      // an earlier copy queued on this stream (stream order is the device's
      // and patchQueuedLaunches accounts for it), so that read is kept out
      // of ThreadSanitizer's view; pinned host memory (the zero-copy slot)
      // is read instrumented, so a host write racing with a launch reports.
      if (A->K == MemKind::Pinned)
        memcpy(LR.Expected.data(), A->host(LR.Dyn), KleN);
      else
        snapshotDeviceBytes(LR.Expected.data(), A->host(LR.Dyn), KleN);
      Transport Mode = expected();
      bool Placed = checkPlacement(LR.Index, KN, LR.Dyn, placeOf(A->K),
                                   kindName(A->K));
      checkHostFlag(LR.Index, KN, LR.Dyn, LR.HostFlag, placeOf(A->K),
                    kindName(A->K));
      if (Placed && Mode == Transport::Resident) {
        // The KLE lives in device memory, written by an earlier copy (on
        // any stream, or by an earlier launch of the same slot); its
        // upstream layout and zero counters are checked at kernel start.
        const bool Written =
            A->KleWrites.count(LR.Dyn) ||
            std::any_of(A->Writes.begin(), A->Writes.end(),
                        [&](const WriteRec &W) {
                          return W.Lo <= LR.Dyn && W.Hi >= LR.Dyn + KleN;
                        });
        checkArrivalEnqueued(LR.Index, KN, LR.Dyn, Written,
                             "before the launch");
      }
      if (Placed && (Mode == Transport::Copy || Mode == Transport::Staged)) {
        // CUDA's ordering rule: the last write covering the KLE is queued
        // on the launch stream, so it completes before the kernel starts.
        const WriteRec *Last = nullptr;
        for (auto &W : A->Writes)
          if (W.Lo <= LR.Dyn && W.Hi >= LR.Dyn + KleN &&
              (!Last || W.Order > Last->Order))
            Last = &W;
        if (!Last)
          checkArrivalEnqueued(LR.Index, KN, LR.Dyn, false,
                               "(copy or memset) before the launch");
        else if (Last->S != LR.S)
          report(LR.Index, Check::W,
                 "kernel '%s': device KLE %#llx was last filled on %s %llu, "
                 "not on the launch stream %llu (no ordering guarantee)",
                 KN, (unsigned long long)LR.Dyn,
                 Last->S ? "stream" : "a synchronous copy, stream",
                 (unsigned long long)(Last->S ? Last->S->Id : 0),
                 (unsigned long long)LR.S->Id);
        else
          checkStagedSource(LR.Index, KN,
                            Last->SrcPageable ? Place::None
                                              : placeOf(Last->SrcKind),
                            Last->SrcPageable ? "pageable host"
                                              : kindName(Last->SrcKind));
      }
    }
    // If not resolvable, kleAtKernelStart reports it (device would fault).
  }
}

//===----------------------------------------------------------------------===//
// At execution (A1, B, D, counters)
//===----------------------------------------------------------------------===//

static void unregisterPending(LaunchRec &LR) {
  std::lock_guard<std::mutex> L(g().Mtx);
  LR.Completed = true;
  for (AllocP *AP : {&LR.KleAlloc, &LR.RedAlloc}) {
    if (!*AP)
      continue;
    auto &V = (*AP)->Launches;
    V.erase(std::remove(V.begin(), V.end(), &LR), V.end());
  }
}

// Check that the KLE bytes are live and unchanged; Phase is "start"/"end".
static void checkKle(LaunchRec &LR, const char *Phase) {
  const char *KN = LR.F->Name.c_str();
  size_t N = LR.Expected.size();
  AllocP Now = resolve(LR.Dyn, N);
  if (!Now || Now != LR.KleAlloc) {
    if (LR.ReportedFree)
      return;
    LR.ReportedFree = true;
    if (LR.KleAlloc && LR.KleAlloc->Freed) {
      std::string What = std::string("kernel '") + KN + "': KLE at dyn_ptr " +
                         hexAddr(LR.Dyn) + " (" + kindName(LR.KleAlloc->K) +
                         " memory, by " + LR.KleAlloc->FreedBy + ")";
      reportFreedAt(LR.Index, Phase, What.c_str());
    } else {
      char Why[160];
      snprintf(Why, sizeof(Why),
               "at kernel %s: not a live cuMemAlloc/cuMemAllocHost/"
               "cuMemAllocManaged allocation of >= %zu bytes; pageable host "
               "memory is not accessible from the device",
               Phase, N);
      checkPlacement(LR.Index, KN, LR.Dyn, Place::None, Why);
    }
    return;
  }
  const uint8_t *Cur = Now->host(LR.Dyn);
  if (!LR.ReportedBytes)
    LR.ReportedBytes = !checkUnchanged(LR.Index, KN, Phase, LR.Dyn,
                                       kindName(Now->K), LR.Expected.data(),
                                       Cur, N);
}

void kleAtKernelStart(LaunchRec &LR) {
  Func *F = LR.F;
  if (!LR.HasKle)
    return;
  checkKle(LR, "start");
  // LLVM 22 layout: { u32 ReductionCnt; u32 ReductionIterCnt; void *Buf; },
  // decoded as the fork's DeviceRTL does (Shared/KLEAbi.h): bit 0 of Buf
  // set means the first 8 bytes point to the counters in device memory.
  if (cfg().Kle.Llvm22Layout && F->ReductionDataSize > 0 &&
      F->ReductionBufferLength > 0 && LR.Expected.size() >= 16 &&
      !LR.ReportedFree) {
    KleWords W = decode(LR.Expected.data());
    size_t Need = size_t(F->ReductionDataSize) * F->ReductionBufferLength;
    AllocP RA, CA;
    uint64_t CountersNow = ~0ull;
    {
      std::lock_guard<std::mutex> L(g().Mtx);
      RA = resolveLocked(W.ReductionBuffer, Need);
      if (RA) {
        LR.RedAlloc = RA;
        RA->Launches.push_back(&LR);
      }
      if (W.DeviceCounters) {
        CA = resolveLocked(W.Word0, KLECounterBytes);
        if (CA)
          memcpy(&CountersNow, CA->host(W.Word0), sizeof(CountersNow));
      }
    }
    checkReductionBuffer(LR.Index, F->Name.c_str(), W.ReductionBuffer, Need,
                         RA != nullptr);
    checkResidentLayout(LR.Index, F->Name.c_str(), W);
    // The reduction's device atomics go to the counters: they must be in
    // device memory (never host memory) and zero when the kernel starts.
    checkCounters(LR.Index, F->Name.c_str(), W,
                  CA ? placeOf(CA->K) : Place::None,
                  CA ? kindName(CA->K) : "none", CountersNow);
  }
}

void kleAtKernelEnd(LaunchRec &LR) {
  if (LR.HasKle && !LR.ReportedFree)
    checkKle(LR, "end");
  unregisterPending(LR);
}

//===----------------------------------------------------------------------===//
// At free (B)
//===----------------------------------------------------------------------===//

void kleAtReleaseLocked(Alloc &A, const char *By) {
  for (LaunchRec *LR : A.Launches) {
    if (LR->Completed || LR->ReportedFree)
      continue;
    LR->ReportedFree = true;
    std::string What = std::string("kernel '") + LR->F->Name + "': " +
                       kindName(A.K) + " memory " + hexAddr(A.Addr) +
                       " (dyn_ptr " + hexAddr(LR->Dyn) + ")";
    std::string Where = " on stream " + std::to_string(LR->S->Id) +
                        " (queued or running)";
    reportFreedWhilePending(LR->Index, What.c_str(), By, Where.c_str());
  }
}

} // namespace cuda_standin
