//===- kle_contract_cuda.cpp - The CUDA stand-in's KLE checks -------------===//
//
// TEST ONLY.  The KLE / dyn_ptr contract checks of the CUDA front (see
// kle_contract_cuda.h and README.md, "Checks per kernel launch"): the launch
// snapshot and its updates by same-stream writes, placement per transport,
// lifetime at free and at execution, the reduction buffer and the counters.
//
//===----------------------------------------------------------------------===//

#include "kle_contract_cuda.h"
#include "cuda_front.h"

namespace cuda_standin {

KleConfig kleConfigFromEnv(const std::string &Expect) {
  KleConfig C;
  if (Expect == "zerocopy") C.Mode = Expect::ZeroCopy;
  else if (Expect == "copy") C.Mode = Expect::Copy;
  else if (Expect == "staged") C.Mode = Expect::Staged;
  else if (Expect == "resident") C.Mode = Expect::Resident;
  else C.Mode = Expect::Any;
  if (const char *E = standin::env("KLE_SIZE"))
    C.KleSize = std::max<size_t>(1, strtoull(E, nullptr, 0));
  if (const char *E = standin::env("KLE_LAYOUT"))
    C.Llvm22Layout = std::string(E) == "llvm22";
  return C;
}

//===----------------------------------------------------------------------===//
// Writes and copies (A1, A2, C)
//===----------------------------------------------------------------------===//

void kleAtWriteLocked(Alloc &A, uintptr_t Lo, size_t N, Stream *S,
                      MemKind SrcKind, bool SrcPageable) {
  WriteRec W{Lo, Lo + N, S, ++g().WriteOrder, SrcKind, SrcPageable};
  A.Writes.push_back(W);
  if (N == kle::KLESize)
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
      (DA->K == MemKind::Device) && N <= 4096) {
    AtEnqueue = std::make_shared<std::vector<uint8_t>>(N);
    memcpy(AtEnqueue->data(), SA->host(Src), N);
  }
  return AtEnqueue;
}

bool kleCopySourceChanged(const KleSourceSnapshot &AtEnqueue,
                          const uint8_t *From, size_t N) {
  return AtEnqueue && memcmp(AtEnqueue->data(), From, N) != 0;
}

void kleAfterQueuedWrite(LaunchRec &LR, Alloc &Dst, uintptr_t Lo, size_t N,
                         bool SrcChanged, uintptr_t SrcAddr) {
  uintptr_t KLo = LR.Dyn, KHi = LR.Dyn + LR.Expected.size();
  uintptr_t WLo = std::max(KLo, Lo), WHi = std::min(KHi, Lo + N);
  if (WLo >= WHi)
    return;
  memcpy(LR.Expected.data() + (WLo - KLo), Dst.host(WLo), WHi - WLo);
  if (SrcChanged)
    violation(LR.Index,
              "kernel '%s': the pinned staging source %#llx of the copy that "
              "fills its KLE (%#llx) was modified after cuMemcpyHtoDAsync "
              "was enqueued and before the copy executed",
              LR.F->Name.c_str(), (unsigned long long)SrcAddr,
              (unsigned long long)LR.Dyn);
}

//===----------------------------------------------------------------------===//
// At launch (E, A1 snapshot, C)
//===----------------------------------------------------------------------===//

void kleAtLaunch(const LaunchRec &LR) {
  const Func *F = LR.F;
  bool NeedsKle = F->HasKernelEnv && F->ReductionDataSize > 0 &&
                  F->ReductionBufferLength > 0;
  if (NeedsKle && !LR.HasKle)
    violation(LR.Index,
              "kernel '%s' does cross-team reductions (%dx%d bytes) but was "
              "launched without a KLE (dyn_ptr %#llx)",
              F->Name.c_str(), F->ReductionDataSize, F->ReductionBufferLength,
              (unsigned long long)LR.Dyn);
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
      Expect Mode = cfg().Kle.Mode;
      if (Mode == Expect::ZeroCopy && A->K != MemKind::Pinned)
        violation(LR.Index,
                  "kernel '%s': KLE_STANDIN_EXPECT=zerocopy but dyn_ptr %#llx "
                  "is %s memory, not pinned host memory",
                  KN, (unsigned long long)LR.Dyn, kindName(A->K));
      if (Mode == Expect::Resident) {
        // The KLE lives in device memory, written by an earlier copy (on
        // this stream, or by an earlier launch of the same slot); its
        // upstream layout and zero counters are checked at kernel start.
        const bool Written =
            A->KleWrites.count(LR.Dyn) ||
            std::any_of(A->Writes.begin(), A->Writes.end(),
                        [&](const WriteRec &W) {
                          return W.Lo <= LR.Dyn && W.Hi >= LR.Dyn + KleN;
                        });
        if (A->K != MemKind::Device)
          violation(LR.Index,
                    "kernel '%s': KLE_STANDIN_EXPECT=resident but dyn_ptr "
                    "%#llx is %s memory, not device memory",
                    KN, (unsigned long long)LR.Dyn, kindName(A->K));
        else if (!Written)
          violation(LR.Index,
                    "kernel '%s': resident KLE %#llx was never written by a "
                    "copy before the launch",
                    KN, (unsigned long long)LR.Dyn);
      }
      if ((Mode == Expect::Copy || Mode == Expect::Staged)) {
        if (A->K != MemKind::Device) {
          violation(LR.Index,
                    "kernel '%s': KLE_STANDIN_EXPECT=%s but dyn_ptr %#llx is "
                    "%s memory, not device memory",
                    KN, Mode == Expect::Copy ? "copy" : "staged",
                    (unsigned long long)LR.Dyn, kindName(A->K));
        } else {
          const WriteRec *Last = nullptr;
          for (auto &W : A->Writes)
            if (W.Lo <= LR.Dyn && W.Hi >= LR.Dyn + KleN &&
                (!Last || W.Order > Last->Order))
              Last = &W;
          if (!Last)
            violation(LR.Index,
                      "kernel '%s': device KLE %#llx was not filled by a "
                      "copy/memset before the launch",
                      KN, (unsigned long long)LR.Dyn);
          else if (Last->S != LR.S)
            violation(LR.Index,
                      "kernel '%s': device KLE %#llx was last filled on %s "
                      "%llu, not on the launch stream %llu (no ordering "
                      "guarantee)",
                      KN, (unsigned long long)LR.Dyn,
                      Last->S ? "stream" : "a synchronous copy, stream",
                      (unsigned long long)(Last->S ? Last->S->Id : 0),
                      (unsigned long long)LR.S->Id);
          else if (Mode == Expect::Staged &&
                   (Last->SrcPageable || Last->SrcKind != MemKind::Pinned))
            violation(LR.Index,
                      "kernel '%s': KLE_STANDIN_EXPECT=staged but the KLE "
                      "copy's source was %s memory, not a pinned staging slot",
                      KN, Last->SrcPageable ? "pageable host"
                                            : kindName(Last->SrcKind));
        }
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
    if (LR.KleAlloc && LR.KleAlloc->Freed)
      violation(LR.Index,
                "kernel '%s' (kernel %s): dyn_ptr %#llx points to %s memory "
                "that was released (%s) before the kernel completed",
                KN, Phase, (unsigned long long)LR.Dyn,
                kindName(LR.KleAlloc->K), LR.KleAlloc->FreedBy.c_str());
    else
      violation(LR.Index,
                "kernel '%s' (kernel %s): dyn_ptr %#llx is not device-visible "
                "memory (not a live cuMemAlloc/cuMemAllocHost/cuMemAllocManaged "
                "allocation of >= %zu bytes; pageable host memory is not "
                "accessible from the device)",
                KN, Phase, (unsigned long long)LR.Dyn, N);
    return;
  }
  const uint8_t *Cur = Now->host(LR.Dyn);
  if (!LR.ReportedBytes && memcmp(Cur, LR.Expected.data(), N) != 0) {
    LR.ReportedBytes = true;
    violation(LR.Index,
              "kernel '%s' (kernel %s): KLE bytes at dyn_ptr %#llx (%s) "
              "changed after the launch: expected %s, device reads %s",
              KN, Phase, (unsigned long long)LR.Dyn, kindName(Now->K),
              hex(LR.Expected.data(), N).c_str(), hex(Cur, N).c_str());
  }
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
    uintptr_t Buf, Word0;
    memcpy(&Buf, LR.Expected.data() + kle::KLEReductionBufferOffset, 8);
    memcpy(&Word0, LR.Expected.data() + kle::KLECountersOffset, 8);
    bool DeviceCounters = Buf & kle::KLEDeviceCountersTag;
    Buf &= ~uintptr_t(kle::KLEDeviceCountersTag);
    size_t Need = size_t(F->ReductionDataSize) * F->ReductionBufferLength;
    AllocP RA, CA;
    MemKind CK = MemKind::Device;
    uint64_t CountersNow = ~0ull;
    {
      std::lock_guard<std::mutex> L(g().Mtx);
      RA = resolveLocked(Buf, Need);
      if (RA) {
        LR.RedAlloc = RA;
        RA->Launches.push_back(&LR);
      }
      if (DeviceCounters) {
        CA = resolveLocked(Word0, kle::KLECounterBytes);
        if (CA) {
          CK = CA->K;
          memcpy(&CountersNow, CA->host(Word0), sizeof(CountersNow));
        }
      }
    }
    if (!RA)
      violation(LR.Index,
                "kernel '%s': KLE.ReductionBuffer %#llx is not a live "
                "device-visible allocation of >= %zu bytes",
                F->Name.c_str(), (unsigned long long)Buf, Need);
    if (cfg().Kle.Mode == Expect::Resident && (DeviceCounters || Word0 != 0))
      violation(LR.Index,
                "kernel '%s': KLE_STANDIN_EXPECT=resident but the KLE is not "
                "upstream's layout with zero counters (word0 %#llx, %s)",
                F->Name.c_str(), (unsigned long long)Word0,
                DeviceCounters ? "tagged" : "untagged");
    if (DeviceCounters) {
      // The reduction's device atomics go to the counters: they must be in
      // device memory (never host memory) and zero when the kernel starts.
      if (!CA)
        violation(LR.Index,
                  "kernel '%s': KLE counters %#llx are not a live "
                  "allocation of >= %u bytes",
                  F->Name.c_str(), (unsigned long long)Word0,
                  kle::KLECounterBytes);
      else if (CK != MemKind::Device)
        violation(LR.Index,
                  "kernel '%s': KLE counters %#llx are %s memory; device "
                  "atomics would reach it (must be device memory)",
                  F->Name.c_str(), (unsigned long long)Word0, kindName(CK));
      else if (CountersNow != 0)
        violation(LR.Index,
                  "kernel '%s': KLE counters %#llx read %#llx at kernel "
                  "start (must be zero)",
                  F->Name.c_str(), (unsigned long long)Word0,
                  (unsigned long long)CountersNow);
    } else if (Word0 != 0) {
      violation(LR.Index,
                "kernel '%s': in-KLE reduction counters read %#llx at "
                "kernel start (must be zero)",
                F->Name.c_str(), (unsigned long long)Word0);
    }
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
    violation(LR->Index,
              "kernel '%s': %s memory %#llx (dyn_ptr %#llx) released by %s "
              "while the launch was still pending on stream %llu "
              "(queued or running)",
              LR->F->Name.c_str(), kindName(A.K), (unsigned long long)A.Addr,
              (unsigned long long)LR->Dyn, By,
              (unsigned long long)LR->S->Id);
  }
}

} // namespace cuda_standin
