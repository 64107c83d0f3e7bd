//===- happens_before_cuda.cpp - The CUDA front's happens-before hooks ----===//
//
// TEST ONLY.  See happens_before_cuda.h.
//
//===----------------------------------------------------------------------===//

#include "happens_before_cuda.h"
#include "cuda_front.h"
#include "../core/happens_before.h"

namespace hb = standin::hb;

namespace cuda_standin {

struct HbAccess {
  std::string What;
  std::vector<hb::Range> Rs;
};

struct HbLaunch {
  hb::Op O;
  uint64_t Order = 0;
  std::vector<hb::Range> Rs; ///< recorded at enqueue
  hb::Who W;
};

namespace {

struct HbState {
  std::mutex M;
  std::unordered_map<const Stream *, uint32_t> Timelines;
  std::unordered_map<const Event *, hb::Clock> Events;
  uint32_t Host = ~0u;
};

HbState &hs() {
  static auto *S = new HbState(); // never destroyed
  return *S;
}

} // namespace

void hbForkLocks(std::vector<std::mutex *> &Locks) { Locks.push_back(&hs().M); }

namespace {

uint32_t timelineOf(const Stream &S) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  auto It = H.Timelines.find(&S);
  if (It != H.Timelines.end())
    return It->second;
  uint32_t T = hb::newTimeline("stream " + std::to_string(S.Id));
  H.Timelines.emplace(&S, T);
  return T;
}

uint32_t hostTimeline() {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  if (H.Host == ~0u)
    H.Host = hb::newTimeline("host, synchronous");
  return H.Host;
}

bool isDevice(const Alloc &A) {
  return A.K == MemKind::Device || A.K == MemKind::Module;
}

void copyRanges(std::vector<hb::Range> &Rs, const AllocP &DA, uintptr_t Dst,
                const AllocP &SA, uintptr_t Src, size_t N) {
  if (DA && isDevice(*DA))
    Rs.push_back(hb::Range{DA->Addr, Dst, Dst + N, hb::Write});
  if (SA && isDevice(*SA))
    Rs.push_back(hb::Range{SA->Addr, Src, Src + N, hb::Read});
}

bool isDeviceBlock(const standin::Block &B) {
  return B.Kind == int(MemKind::Device) || B.Kind == int(MemKind::Module);
}

} // namespace

void hbDescribeCopy(Op &O, const char *What, const AllocP &DA, uintptr_t Dst,
                    const AllocP &SA, uintptr_t Src, size_t N) {
  auto A = std::make_shared<HbAccess>();
  A->What = std::string(What) + " of " + std::to_string(N) + " bytes";
  copyRanges(A->Rs, DA, Dst, SA, Src, N);
  if (!A->Rs.empty())
    O.Hb = std::move(A);
}

void hbAtEnqueueLocked(Stream &S, Op &O) {
  hb::Op HO = hb::enqueue(timelineOf(S));
  if (O.Hb) {
    hb::access(HO, hb::Who{0, false, O.Hb->What}, O.Hb->Rs);
    return;
  }
  LaunchRec *LR = O.Launch;
  if (!LR)
    return;
  auto L = std::make_shared<HbLaunch>();
  L->O = HO;
  L->W = hb::Who{LR->Index, true,
                 "launch #" + std::to_string(LR->Index) + " '" + LR->F->Name +
                     "'"};
  // Its argument bytes (dyn_ptr: the KLE's bytes); what its KLE names is
  // added at kernel start, when the KLE holds what the kernel reads.
  hb::kernelRanges(LR->Params.data(), LR->Params.size(), LR->HasKle,
                   cfg().Kle.KleSize, nullptr, 0, isDeviceBlock, L->Rs);
  L->Order = hb::access(HO, L->W, L->Rs);
  LR->Hb = std::move(L);
}

void hbSyncCopy(const char *What, const AllocP &DA, uintptr_t Dst,
                const AllocP &SA, uintptr_t Src, size_t N) {
  std::vector<hb::Range> Rs;
  copyRanges(Rs, DA, Dst, SA, Src, N);
  if (Rs.empty())
    return;
  uint32_t T = hostTimeline();
  hb::Op O = hb::enqueue(T);
  hb::access(O, hb::Who{0, false,
                        std::string(What) + " of " + std::to_string(N) +
                            " bytes"},
             Rs);
  hb::hostObserve(T, O.Seq); // complete when the call returns
}

void hbAtKernelStart(LaunchRec &LR) {
  if (!LR.Hb || !LR.HasKle || !cfg().Kle.Llvm22Layout ||
      LR.Expected.size() < 16)
    return;
  const Func &F = *LR.F;
  std::vector<hb::Range> Rs = LR.Hb->Rs;
  size_t Before = Rs.size();
  hb::kernelRanges(nullptr, 0, false, 0, LR.Expected.data(),
                   size_t(std::max(F.ReductionDataSize, 0)) *
                       size_t(std::max(F.ReductionBufferLength, 0)),
                   isDeviceBlock, Rs);
  if (Rs.size() > Before)
    hb::access(LR.Hb->O, LR.Hb->W,
               std::vector<hb::Range>(Rs.begin() + Before, Rs.end()),
               LR.Hb->Order);
}

uint64_t hbTail(Stream &S) {
  std::lock_guard<std::mutex> L(S.M);
  return S.Enqueued;
}

void hbObserved(Stream &S, uint64_t Seq) {
  hb::hostObserve(timelineOf(S), Seq);
}

void hbObservedLocked(Stream &S, uint64_t Seq) { hbObserved(S, Seq); }

void hbEventRecordLocked(Event &E, Stream &S) {
  hb::Clock C = hb::current(timelineOf(S));
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  H.Events[&E] = std::move(C);
}

static bool eventClock(Event &E, hb::Clock &C) {
  HbState &H = hs();
  std::lock_guard<std::mutex> L(H.M);
  auto It = H.Events.find(&E);
  if (It == H.Events.end())
    return false;
  C = It->second;
  return true;
}

void hbEventObserved(Event &E) {
  hb::Clock C;
  if (eventClock(E, C))
    hb::hostObserve(C);
}

void hbStreamWaitEvent(Stream &S, Event &E) {
  hb::Clock C;
  if (eventClock(E, C))
    hb::acquire(timelineOf(S), C);
}

void hbAtReleaseLocked(Alloc &A) { hb::forget(A.Addr); }

} // namespace cuda_standin
