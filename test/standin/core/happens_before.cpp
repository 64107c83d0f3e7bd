//===- happens_before.cpp - Happens-before check over device memory -------===//
//
// TEST ONLY.  See happens_before.h.
//
//===----------------------------------------------------------------------===//

#include "happens_before.h"
#include "core.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace standin {
namespace hb {

void Clock::set(uint32_t T, uint64_t N) {
  if (T >= V.size())
    V.resize(T + 1, 0);
  V[T] = N;
}

void Clock::join(const Clock &O) {
  if (O.V.size() > V.size())
    V.resize(O.V.size(), 0);
  for (size_t I = 0; I < O.V.size(); ++I)
    if (O.V[I] > V[I])
      V[I] = O.V[I];
}

namespace {

struct Timeline {
  std::string Name;
  Clock C;      ///< its last operation's clock, joined with what it acquired
  uint64_t N = 0; ///< operations enqueued
  /// Clocks of operations the host has not observed yet: Hist[I] is that of
  /// operation Observed + 1 + I.
  std::deque<Clock> Hist;
  uint64_t Observed = 0;
  bool Observable = true; ///< keeps Hist (hostObserve(T, Seq) is used)
};

/// One recorded access.
struct Rec {
  uint32_t T;
  uint64_t Seq, Order;
  uintptr_t Lo, Hi;
  Mode M;
  bool Kernel;
  std::shared_ptr<const Who> W;
};

struct State {
  std::mutex M;
  std::deque<Timeline> Tl;
  Clock Host;
  std::unordered_map<uintptr_t, std::vector<Rec>> ByAlloc;
  uint64_t NextOrder = 1;
  uint64_t Violations = 0;
};

State &st() {
  static auto *S = new State(); // never destroyed: used during exit
  return *S;
}

} // namespace

void forkLocks(std::vector<std::mutex *> &Locks) { Locks.push_back(&st().M); }

namespace {

const char *verb(Mode M) {
  return M == Read ? "reads" : M == Write ? "writes" : "uses";
}

} // namespace

uint32_t newTimeline(const std::string &Name, bool Observable) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  S.Tl.emplace_back();
  S.Tl.back().Name = Name;
  S.Tl.back().Observable = Observable;
  return uint32_t(S.Tl.size() - 1);
}

Op enqueue(uint32_t T, const Clock *HostAt) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  Timeline &X = S.Tl[T];
  X.C.join(HostAt ? *HostAt : S.Host);
  X.C.set(T, ++X.N);
  if (X.Observable)
    X.Hist.push_back(X.C);
  return Op{T, X.N, X.C};
}

Clock current(uint32_t T) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  Clock C = S.Tl[T].C;
  C.join(S.Host);
  return C;
}

void acquire(uint32_t T, const Clock &C) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  S.Tl[T].C.join(C);
}

void hostObserve(uint32_t T, uint64_t Seq) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  Timeline &X = S.Tl[T];
  if (Seq > X.N)
    Seq = X.N;
  if (Seq <= X.Observed || !X.Observable)
    return;
  // Clocks grow along a timeline: operation Seq's covers the earlier ones.
  S.Host.join(X.Hist[Seq - X.Observed - 1]);
  X.Hist.erase(X.Hist.begin(), X.Hist.begin() + (Seq - X.Observed));
  X.Observed = Seq;
}

void hostObserve(const Clock &C) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  S.Host.join(C);
}

Clock host() {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  return S.Host;
}

uint64_t access(const Op &O, const Who &W, const std::vector<Range> &Rs,
                uint64_t Order) {
  State &S = st();
  auto WP = std::make_shared<const Who>(W);
  std::string Report;
  {
    std::lock_guard<std::mutex> L(S.M);
    if (!Order)
      Order = S.NextOrder++;
    for (const Range &R : Rs) {
      std::vector<Rec> &V = S.ByAlloc[R.Base];
      const Rec *Bad = nullptr;
      for (const Rec &Y : V) {
        if (Y.Order >= Order || Y.Hi <= R.Lo || R.Hi <= Y.Lo)
          continue;
        if (!((Y.M | R.M) & Write) || (Y.Kernel && W.Kernel))
          continue; // two reads; two kernels are the program's business
        if (O.C.covers(Y.T, Y.Seq))
          continue;
        Bad = &Y;
        break;
      }
      if (Bad && Report.empty()) {
        char Buf[1024];
        snprintf(Buf, sizeof(Buf),
                 "H happens-before: %s (%s) %s [%#llx, +%llu) of device "
                 "allocation %#llx and is not ordered after %s (%s), which "
                 "%s [%#llx, +%llu): no stream or queue order, event, "
                 "dependency or host synchronization between them",
                 W.What.c_str(), S.Tl[O.T].Name.c_str(), verb(R.M),
                 (unsigned long long)R.Lo, (unsigned long long)(R.Hi - R.Lo),
                 (unsigned long long)R.Base, Bad->W->What.c_str(),
                 S.Tl[Bad->T].Name.c_str(), verb(Bad->M),
                 (unsigned long long)Bad->Lo,
                 (unsigned long long)(Bad->Hi - Bad->Lo));
        Report = Buf;
      }
      // Forget the accesses this one dominates: ordered before it, inside
      // its bytes, no stronger mode (a kernel dominates only kernels, since a
      // later kernel need not be ordered after an earlier one).  A later
      // access unordered with one of them is unordered with this one too and
      // conflicts with it.  (Not what the host observed: an operation enqueued
      // before that observation may still start later.)
      for (size_t I = 0; I < V.size();) {
        const Rec &Y = V[I];
        bool Dominated = Y.Order < Order && O.C.covers(Y.T, Y.Seq) &&
                         R.Lo <= Y.Lo && Y.Hi <= R.Hi &&
                         (R.M | Y.M) == R.M && (!W.Kernel || Y.Kernel);
        if (Dominated) {
          V[I] = V.back();
          V.pop_back();
        } else {
          ++I;
        }
      }
      V.push_back(Rec{O.T, O.Seq, Order, R.Lo, R.Hi, R.M, W.Kernel, WP});
    }
    if (!Report.empty())
      ++S.Violations;
  }
  if (!Report.empty()) {
    if (W.Kernel)
      violation(W.Launch, "%s", Report.c_str());
    else
      opViolation("%s", Report.c_str());
  }
  return Order;
}

namespace {
// [P, P+N) of the device block P points into (N == 0: the whole block, and
// only when P is the block's start).
void addRange(uintptr_t P, size_t N, bool (*IsDevice)(const Block &),
              std::vector<Range> &Rs) {
  if (!P || P == ~uintptr_t(0))
    return;
  BlockP B = mem().resolve(P, 1);
  if (!B || !IsDevice(*B) || (!N && P != B->Addr))
    return;
  uintptr_t Lo = N ? P : B->Addr;
  uintptr_t Hi = N ? std::min<uintptr_t>(P + N, B->Addr + B->Size)
                   : B->Addr + B->Size;
  for (const Range &R : Rs)
    if (R.Base == B->Addr && R.Lo <= Lo && Hi <= R.Hi)
      return;
  Rs.push_back(Range{B->Addr, Lo, Hi, ReadWrite});
}
} // namespace

void kernelRanges(const uint8_t *Args, size_t N, bool HasKle, size_t KleSize,
                  const uint8_t *Kle, size_t RedBytes,
                  bool (*IsDevice)(const Block &), std::vector<Range> &Rs) {
  static const bool AllArgs = [] {
    const char *E = env("HB_ARGS");
    return E && !strcmp(E, "1");
  }();
  for (size_t Off = 0; Off + 8 <= N; Off += 8) {
    if (!AllArgs && !(Off == 0 && HasKle))
      continue;
    uint64_t V;
    memcpy(&V, Args + Off, 8);
    addRange(uintptr_t(V), Off == 0 && HasKle ? KleSize : 0, IsDevice, Rs);
  }
  if (Kle) {
    uint64_t W0, W1;
    memcpy(&W0, Kle, 8);
    memcpy(&W1, Kle + 8, 8);
    if (W1 & 1)
      addRange(uintptr_t(W0), 8, IsDevice, Rs);
    addRange(uintptr_t(W1 & ~uint64_t(1)), RedBytes, IsDevice, Rs);
  }
}

void forget(uintptr_t Base) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  S.ByAlloc.erase(Base);
}

uint64_t violations() {
  State &S = st();
  std::lock_guard<std::mutex> L(S.M);
  return S.Violations;
}

} // namespace hb
} // namespace standin
