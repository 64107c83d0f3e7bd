//===- happens_before_hsa.cpp - The HSA front's happens-before hooks ------===//
//
// TEST ONLY.  See happens_before_hsa.h.
//
//===----------------------------------------------------------------------===//

#include "happens_before_hsa.h"
#include "kle_contract_hsa.h"
#include "../core/happens_before.h"

#include <cstring>

namespace hb = standin::hb;

namespace hsafront {

namespace {

struct Lane {
  uint32_t T;
  uint64_t Last = 0; ///< its last copy's position
};

struct HbState {
  std::mutex M;
  std::unordered_map<const Queue *, uint32_t> Queues;
  std::unordered_map<const Signal *, hb::Clock> Signals;
  std::unordered_map<const Copy *, hb::Clock> Running;
  /// The host's clock when a dispatch or copy was enqueued, until it starts.
  std::unordered_map<const void *, hb::Clock> HostAt;
  std::vector<Lane> Lanes;
  uint32_t Host = ~0u;
};

HbState &hs() {
  static auto *S = new HbState(); // never destroyed
  return *S;
}

} // namespace

void hbForkLocks(std::vector<std::mutex *> &Locks) { Locks.push_back(&hs().M); }

namespace {

uint32_t timelineOf(const Queue &Q) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  auto It = H.Queues.find(&Q);
  if (It != H.Queues.end())
    return It->second;
  uint32_t T = hb::newTimeline("queue " + std::to_string(Q.Id),
                               /*Observable=*/false);
  H.Queues.emplace(&Q, T);
  return T;
}

hb::Clock signalClock(const Signal *S) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  auto It = H.Signals.find(S);
  return It == H.Signals.end() ? hb::Clock() : It->second;
}

void release(const Signal *S, const hb::Clock &C, bool Replace) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  hb::Clock &X = H.Signals[S];
  if (Replace)
    X = C;
  else
    X.join(C);
}

bool isDeviceBlock(const Block &B) { return B.Kind == K_DEVICE; }

void copyRanges(std::vector<hb::Range> &Rs, const BlockP &DB, uintptr_t Dst,
                const BlockP &SB, uintptr_t Src, size_t N) {
  if (DB && DB->Kind == K_DEVICE)
    Rs.push_back(hb::Range{DB->Addr, Dst, Dst + N, hb::Write});
  if (SB && SB->Kind == K_DEVICE)
    Rs.push_back(hb::Range{SB->Addr, Src, Src + N, hb::Read});
}

void saveHost(const void *K) {
  hb::Clock C = hb::host();
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  H.HostAt[K] = std::move(C);
}

hb::Clock takeHost(const void *K) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  auto It = H.HostAt.find(K);
  if (It == H.HostAt.end())
    return hb::Clock();
  hb::Clock C = std::move(It->second);
  H.HostAt.erase(It);
  return C;
}

} // namespace

void hbAtDoorbell(const Launch &L) { saveHost(&L); }

void hbAtCopyEnqueue(const Copy &C) { saveHost(&C); }

void hbAtBarrier(const Queue &Q, const std::vector<Signal *> &Deps,
                 Signal *Done) {
  uint32_t T = timelineOf(Q);
  hb::Clock C;
  for (Signal *S : Deps)
    C.join(signalClock(S));
  hb::acquire(T, C);
  if (Done)
    release(Done, hb::current(T), false);
}

void hbAtDispatchStart(const Queue &Q, const Launch &L) {
  hb::Clock HostAt = takeHost(&L);
  hb::Op O = hb::enqueue(timelineOf(Q), &HostAt);
  // Its kernarg bytes (dyn_ptr: the KLE's bytes) and what its KLE names (the
  // launch's snapshot: taken at the doorbell for a host KLE, at start for a
  // device one).
  std::vector<hb::Range> Rs;
  size_t Red = L.K ? size_t(std::max(L.K->RedDataSize, 0)) *
                         size_t(std::max(L.K->RedBufLen, 0))
                   : 0;
  hb::kernelRanges(L.Kernarg.data(), L.Kernarg.size(), L.HasKle, 16,
                   L.HasKle ? L.Kle : nullptr, Red, isDeviceBlock, Rs);
  std::string What = "launch #" + std::to_string(L.N) + " '" +
                     (L.K ? L.K->Name : std::string("?")) + "'";
  hb::access(O, hb::Who{L.N, true, What}, Rs);
}

void hbAtDispatchDone(const Queue &Q, Signal *Done) {
  if (Done)
    release(Done, hb::current(timelineOf(Q)), false);
}

void hbAtCopyRun(Copy &C) {
  hb::Clock Before = takeHost(&C);
  for (Signal *S : C.Deps)
    Before.join(signalClock(S));
  uint32_t T;
  size_t Idx;
  {
    // The first lane whose last copy is ordered before this one (copies run
    // on the one DMA thread: nothing else picks a lane meanwhile).
    HbState &H = hs();
    std::lock_guard<std::mutex> L(H.M);
    for (Idx = 0; Idx < H.Lanes.size(); ++Idx)
      if (Before.covers(H.Lanes[Idx].T, H.Lanes[Idx].Last))
        break;
    if (Idx == H.Lanes.size())
      H.Lanes.push_back(Lane{hb::newTimeline(
          "copy engine lane " + std::to_string(Idx + 1), false)});
    T = H.Lanes[Idx].T;
  }
  hb::acquire(T, Before);
  hb::Op O = hb::enqueue(T, &Before);
  {
    HbState &H = hs();
    std::lock_guard<std::mutex> L(H.M);
    H.Lanes[Idx].Last = O.Seq;
  }
  std::vector<hb::Range> Rs;
  copyRanges(Rs, C.DstB, C.Dst, C.SrcB, C.Src, C.N);
  if (!Rs.empty())
    hb::access(O, hb::Who{0, false,
                          "copy op #" + std::to_string(C.Op) + " of " +
                              std::to_string(C.N) + " bytes"},
               Rs);
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  H.Running[&C] = O.C;
}

void hbAtCopyDone(const Copy &C) {
  hb::Clock X;
  {
    HbState &H = hs();
    std::lock_guard<std::mutex> L(H.M);
    auto It = H.Running.find(&C);
    if (It == H.Running.end())
      return;
    X = std::move(It->second);
    H.Running.erase(It);
  }
  if (C.Done)
    release(C.Done, X, false);
}

void hbHostAccess(const char *What, const BlockP &DB, uintptr_t Dst,
                  const BlockP &SB, uintptr_t Src, size_t N) {
  std::vector<hb::Range> Rs;
  copyRanges(Rs, DB, Dst, SB, Src, N);
  if (Rs.empty())
    return;
  uint32_t T;
  {
    HbState &H = hs();
    std::lock_guard<std::mutex> L(H.M);
    if (H.Host == ~0u)
      H.Host = hb::newTimeline("host, synchronous");
    T = H.Host;
  }
  hb::Op O = hb::enqueue(T);
  hb::access(O, hb::Who{0, false,
                        std::string(What) + " of " + std::to_string(N) +
                            " bytes"},
             Rs);
  hb::hostObserve(T, O.Seq);
}

void hbHostRelease(Signal &S, bool Replace) { release(&S, hb::host(), Replace); }

void hbHostAcquire(Signal &S) { hb::hostObserve(signalClock(&S)); }

void hbAtFree(const Block &B) { hb::forget(B.Addr); }

} // namespace hsafront
