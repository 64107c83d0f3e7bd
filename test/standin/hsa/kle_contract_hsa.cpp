//===- kle_contract_hsa.cpp - The KLE contract on the HSA front -----------===//
//
// TEST ONLY.  See kle_contract_hsa.h.  The HSA front's adapter to the KLE
// contract (../core/kle_contract.h): it keeps the front's own rules (packet
// sanity, kernarg K, barrier-AND ordering through the copy's op number) and
// translates doorbell, start, end, copies and frees into the contract's
// checks.
//
//===----------------------------------------------------------------------===//

#include "kle_contract_hsa.h"
#include "../core/kle_contract.h"

#include <algorithm>
#include <cstring>

using namespace hsafront;
using namespace standin::contract;
using standin::Transport;

namespace {

/// Guarded by g().Mtx; never destroyed (exit handlers may still report).
struct ContractState {
  InFlight Kles, Counters;                        ///< check X
  std::map<uintptr_t, uint64_t> InflightKernarg; ///< check K
  std::unordered_set<uint64_t> PendingOps; ///< copies not yet done
};
ContractState &cs() {
  static ContractState *S = new ContractState();
  return *S;
}

//===----------------------------------------------------------------------===//
// Checks at dispatch (README: the contract's, plus packet sanity and K)
//===----------------------------------------------------------------------===//

bool isNone(uintptr_t P) { return P == 0 || P == ~uintptr_t(0); }

Place placeOf(int Kind) {
  switch (Kind) {
  case K_DEVICE: return Place::Device;
  case K_FINE: return Place::HostPinned;
  case K_HOST_COARSE: return Place::Other;
  case K_KERNARG: return Place::Kernarg;
  default: return Place::None;
  }
}

std::string addr(uintptr_t P) {
  char B[24];
  snprintf(B, sizeof(B), "%#lx", (unsigned long)P);
  return B;
}

void addPending(const BlockP &B, uint64_t Id) {
  if (B)
    B->Pending.insert(Id);
}
void dropPending(const BlockP &B, uint64_t Id) {
  if (!B)
    return;
  auto It = B->Pending.find(Id);
  if (It != B->Pending.end())
    B->Pending.erase(It);
}

std::shared_ptr<Launch> recordLaunch(Queue &Q, uint64_t Index,
                                     const hsa_kernel_dispatch_packet_t &P) {
  auto L = std::make_shared<Launch>();
  L->N = nextLaunch();
  L->Index = Index;
  L->P = P;
  if (broken("bad-packet"))
    L->P.group_segment_size = GROUP_SIZE + 1;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    auto It = g().Kernels.find(L->P.kernel_object);
    if (It != g().Kernels.end() && !It->second->Exe->Destroyed)
      L->K = It->second;
    auto S = g().Signals.find(L->P.completion_signal.handle);
    if (L->P.completion_signal.handle == 0 || S == g().Signals.end() || S->second->Destroyed)
      violation(L->N, "packet: completion signal %#llx is not a live signal",
                (unsigned long long)L->P.completion_signal.handle);
  }
  // Packet sanity.
  if (!L->K) {
    violation(L->N, "packet: kernel_object %#llx is not a kernel of a live executable",
              (unsigned long long)L->P.kernel_object);
    return L;
  }
  uint32_t Wg = uint32_t(L->P.workgroup_size_x) * L->P.workgroup_size_y * L->P.workgroup_size_z;
  unsigned Dims = L->P.setup & 3;
  if (L->P.group_segment_size > GROUP_SIZE)
    violation(L->N, "packet: group_segment_size %u exceeds the %u-byte GROUP pool",
              L->P.group_segment_size, GROUP_SIZE);
  if (Wg == 0 || Wg > MAX_WG)
    violation(L->N, "packet: work-group size %u outside 1..%u", Wg, MAX_WG);
  if (Dims < 1 || Dims > 3 || !L->P.grid_size_x || !L->P.grid_size_y || !L->P.grid_size_z)
    violation(L->N, "packet: bad dimensions (setup %u, grid %ux%ux%u)", Dims,
              L->P.grid_size_x, L->P.grid_size_y, L->P.grid_size_z);
  // K: kernarg buffer.
  uintptr_t KA = reinterpret_cast<uintptr_t>(L->P.kernarg_address);
  size_t KS = L->K->KernargSize;
  L->KernargB = mem().resolve(KA, std::max<size_t>(KS, 1));
  if (!L->KernargB || L->KernargB->Kind != K_KERNARG ||
      !(L->KernargB->AllowedAgents & AGENT_BIT_GPU)) {
    violation(L->N, "kernarg: %#lx (+%zu bytes) is not in a live KERNARG_INIT pool allocation "
              "granted to the GPU (%s)", (unsigned long)KA, KS,
              L->KernargB ? kindName(L->KernargB->Kind) : "no live allocation");
    L->KernargB = nullptr;
    return L;
  }
  L->Kernarg.assign(L->KernargB->bytes(KA), L->KernargB->bytes(KA) + KS);
  if (L->K->HasEnv && KS >= 8)
    memcpy(&L->Dyn, L->Kernarg.data(), 8);
  bool NeedsKle = L->K->RedDataSize && L->K->RedBufLen;
  std::lock_guard<std::mutex> G(g().Mtx);
  if (auto It = cs().InflightKernarg.find(KA); It != cs().InflightKernarg.end())
    violation(L->N, "kernarg: buffer %#lx is shared with in-flight launch #%llu",
              (unsigned long)KA, (unsigned long long)It->second);
  cs().InflightKernarg[KA] = L->N;
  addPending(L->KernargB, L->N);
  const char *KN = L->K->Name.c_str();
  checkPresent(L->N, KN, NeedsKle, !isNone(L->Dyn), L->Dyn);
  if (!L->K->HasEnv || isNone(L->Dyn))
    return L;
  L->HasKle = true;
  L->Dyn = kleAddress(L->Dyn, L->HostFlag);
  if (broken("flip-host-flag")) // negative control: the host's flag inverted
    L->HostFlag = !L->HostFlag;
  L->KleB = mem().resolve(L->Dyn, 16);
  if (!checkPlacement(L->N, KN, L->Dyn, L->KleB ? placeOf(L->KleB->Kind) : Place::None,
                      L->KleB ? kindName(L->KleB->Kind) : "none") &&
      (!L->KleB || placeOf(L->KleB->Kind) == Place::None ||
       placeOf(L->KleB->Kind) == Place::Kernarg)) {
    L->KleB = nullptr;
    return L;
  }
  L->HostKle = L->KleB->Kind != K_DEVICE;
  checkHostFlag(L->N, KN, L->Dyn, L->HostFlag, placeOf(L->KleB->Kind), kindName(L->KleB->Kind));
  if (!(L->KleB->AllowedAgents & AGENT_BIT_GPU))
    report(L->N, Check::C, "kernel '%s': dyn_ptr %#lx lies in a %s allocation the GPU was not granted",
           KN, (unsigned long)L->Dyn, kindName(L->KleB->Kind));
  if (L->HostKle) {
    // HSA's zerocopy slot: host fine-grained, 128-byte aligned, tagged.
    if (L->KleB->Kind != K_FINE && expected() != Transport::ZeroCopy)
      report(L->N, Check::C, "kernel '%s': host KLE %#lx must be in the host fine-grained pool, not %s",
             KN, (unsigned long)L->Dyn, kindName(L->KleB->Kind));
    memcpy(L->Kle, L->KleB->bytes(L->Dyn), 16);
    KleWords W = decode(L->Kle);
    checkZeroCopySlot(L->N, KN, L->Dyn, W);
    if (W.DeviceCounters) {
      L->Cnt = W.Word0;
      L->CntB = mem().resolve(W.Word0, 8);
      if (!L->CntB || L->CntB->Kind != K_DEVICE) {
        checkCounters(L->N, KN, W, L->CntB ? placeOf(L->CntB->Kind) : Place::None,
                      L->CntB ? kindName(L->CntB->Kind) : "none", 0);
        L->CntB = nullptr;
      } else {
        cs().Counters.claim(L->N, W.Word0, "counter block");
        addPending(L->CntB, L->N);
      }
    }
  } else {
    L->KleCopyOp = L->KleB->lastWriteOp(L->Dyn, 16);
    checkArrivalEnqueued(L->N, KN, L->Dyn, L->KleCopyOp != 0,
                         "(async copy) before the dispatch");
  }
  cs().Kles.claim(L->N, L->Dyn, "KLE");
  addPending(L->KleB, L->N);
  return L;
}

void checkReductionBuffer(Launch &L) {
  uintptr_t RB = decode(L.Kle).ReductionBuffer;
  size_t Need = size_t(L.K->RedDataSize) * size_t(L.K->RedBufLen);
  if (!Need)
    return;
  BlockP B = mem().resolve(RB, Need);
  bool Ok = B && B->Kind == K_DEVICE;
  standin::contract::checkReductionBuffer(L.N, L.K->Name.c_str(), RB, Need, Ok);
  if (!Ok)
    return;
  std::lock_guard<std::mutex> G(g().Mtx);
  if (!L.RedB) {
    L.RedB = B;
    addPending(B, L.N);
  }
}

/// "start": the dispatch begins executing.  "end": it completes.
void checkLaunch(Launch &L, const char *Phase) {
  bool Start = Phase[0] == 's';
  if (!L.K || !L.KernargB)
    return;
  const char *KN = L.K->Name.c_str();
  if (L.K->Exe->Destroyed)
    reportFreedAt(L.N, Phase, ("the executable of kernel '" + L.K->Name + "'").c_str());
  uintptr_t KA = reinterpret_cast<uintptr_t>(L.P.kernarg_address);
  if (L.KernargB->Freed)
    reportFreedAt(L.N, Phase, ("kernarg buffer " + addr(KA)).c_str());
  else if (memcmp(L.KernargB->bytes(KA), L.Kernarg.data(), L.Kernarg.size()))
    violation(L.N, "K: %s: kernarg bytes at %#lx changed since the doorbell", Phase,
              (unsigned long)KA);
  if (!L.HasKle || !L.KleB)
    return;
  if (L.KleB->Freed) {
    reportFreedAt(L.N, Phase, ("KLE " + addr(L.Dyn)).c_str());
    return;
  }
  const uint8_t *Now = L.KleB->bytes(L.Dyn);
  if (!L.HostKle && Start) {
    // The bytes a device KLE holds must have arrived by a copy that
    // completed before the dispatch started.
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      char Op[32];
      snprintf(Op, sizeof(Op), "op #%llu", (unsigned long long)L.KleCopyOp);
      checkArrivalCompleted(L.N, KN, L.Dyn, Op,
                            !(L.KleCopyOp && cs().PendingOps.count(L.KleCopyOp)));
    }
    memcpy(L.Kle, Now, 16);
  } else {
    checkUnchanged(L.N, KN, Phase, L.Dyn, kindName(L.KleB->Kind), L.Kle, Now, 16);
  }
  if (Start) {
    checkReductionBuffer(L);
    KleWords W = decode(L.Kle);
    if (L.K->RedDataSize && L.K->RedBufLen) {
      checkResidentLayout(L.N, KN, W);
      if (!W.DeviceCounters)
        checkCounters(L.N, KN, W, Place::None, "", 0); // in-KLE counters
    }
    if (L.CntB) {
      if (L.CntB->Freed)
        reportFreedAt(L.N, Phase, ("counter block " + addr(L.Cnt)).c_str());
      else {
        uint64_t C;
        memcpy(&C, L.CntB->bytes(L.Cnt), 8);
        checkCounters(L.N, KN, W, Place::Device, "device", C);
      }
    }
  } else if (L.RedB && L.RedB->Freed) {
    reportFreedAt(L.N, Phase, ("reduction buffer " + addr(L.RedB->Addr)).c_str());
  }
}

void releaseLaunch(Launch &L) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto Drop = [&](std::map<uintptr_t, uint64_t> &M, uintptr_t K) {
    auto It = M.find(K);
    if (It != M.end() && It->second == L.N)
      M.erase(It);
  };
  Drop(cs().InflightKernarg, reinterpret_cast<uintptr_t>(L.P.kernarg_address));
  if (L.HasKle)
    cs().Kles.release(L.N, L.Dyn);
  if (L.Cnt)
    cs().Counters.release(L.N, L.Cnt);
  dropPending(L.KernargB, L.N);
  dropPending(L.KleB, L.N);
  dropPending(L.CntB, L.N);
  dropPending(L.RedB, L.N);
}

} // namespace

namespace hsafront {

std::shared_ptr<Launch> kleAtDoorbell(Queue &Q, uint64_t Index,
                                      const hsa_kernel_dispatch_packet_t &P) {
  return recordLaunch(Q, Index, P);
}

void kleAtStart(Launch &L) { checkLaunch(L, "start"); }

void kleAtEnd(Launch &L) {
  checkLaunch(L, "end");
  releaseLaunch(L);
}

void kleAtFree(const BlockP &B, const char *By) {
  std::lock_guard<std::mutex> G(g().Mtx);
  for (uint64_t Id : B->Pending) {
    std::string What = std::string(kindName(B->Kind)) + " memory " + addr(B->Addr);
    if (Id >> 63)
      reportOpOnFreed(Id & ~(1ull << 63),
                      ("still uses " + What + " when " + By + " releases it").c_str());
    else
      reportFreedWhilePending(Id, What.c_str(), By, "");
  }
}

void kleAtExecutableDestroy(const Executable &X) {
  // Lock order: a queue's mutex before the table mutex (the doorbell holds
  // Q.M while recordLaunch takes g().Mtx), so the queues are listed under
  // g().Mtx and each is scanned after it is released. Queues are never
  // deleted before hsa_shut_down, so the pointers stay valid.
  std::vector<Queue *> Queues;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    for (auto *Q : g().Queues)
      if (!Q->Destroyed) // written under g().Mtx
        Queues.push_back(Q);
  }
  for (auto *Q : Queues) {
    std::lock_guard<std::mutex> L(Q->M);
    for (auto &KV : Q->Launches)
      if (KV.second->K && KV.second->K->Exe == &X)
        reportFreedWhilePending(KV.second->N,
                                ("the executable of kernel '" + KV.second->K->Name + "'").c_str(),
                                "hsa_executable_destroy", "");
  }
}

void kleAtQueueDestroy(const Queue &Q) {
  for (auto &KV : Q.Launches) {
    cs().Kles.forget(KV.second->N);
    cs().Counters.forget(KV.second->N);
    auto &M = cs().InflightKernarg;
    for (auto It = M.begin(); It != M.end();)
      It = It->second == KV.second->N ? M.erase(It) : std::next(It);
  }
}

void kleAtCopyEnqueue(Copy &C) {
  // The epoch before the snapshot: a host write racing with the snapshot is
  // followed by its signal, which then counts as signalled since (check A2).
  C.Epoch0 = g().HostEpoch.load();
  if (C.SrcB->Kind == K_FINE && C.N <= WatchMax) {
    DeviceReadScope Racy; // the host may be filling it (check A2)
    C.SrcSnap = watchSource(C.SrcB->bytes(C.Src), C.N);
  }
}

void kleTrackCopy(const Copy &C) {
  cs().PendingOps.insert(C.Op);
  C.DstB->Pending.insert(C.Op | (1ull << 63));
  C.SrcB->Pending.insert(C.Op | (1ull << 63));
  if (C.DstB->Kind == K_DEVICE)
    C.DstB->Writes[C.Dst] = {C.Dst + C.N, C.Op};
}

static bool sourceChanged(const Copy &C) {
  DeviceReadScope Racy; // A2 asks whether the host wrote it meanwhile
  return standin::contract::sourceChanged(C.SrcSnap, C.SrcB->bytes(C.Src));
}

void kleAtCopyRun(const Copy &C) {
  if (C.SrcSnap.watched() && C.SrcB && !C.SrcB->Freed && sourceChanged(C)) {
    bool HostDep = false;
    for (auto *D : C.Deps)
      HostDep |= D->HostEpoch > C.Epoch0;
    if (!HostDep)
      reportOp(Check::A2, "copy op #%llu: source %#lx (fine-grained) changed between the enqueue "
               "and the DMA, and no dependency was signalled by host code since: a staging "
               "slot recycled early", (unsigned long long)C.Op, (unsigned long)C.Src);
  }
  if (C.DstB && C.DstB->Freed)
    reportOpOnFreed(C.Op, (std::string("writes freed ") + kindName(C.DstB->Kind) +
                           " memory at " + addr(C.Dst)).c_str());
  if (C.SrcB && C.SrcB->Freed)
    reportOpOnFreed(C.Op, (std::string("reads freed ") + kindName(C.SrcB->Kind) +
                           " memory at " + addr(C.Src)).c_str());
}

void kleAtCopyDone(const Copy &C) {
  cs().PendingOps.erase(C.Op);
  dropPending(C.DstB, C.Op | (1ull << 63));
  dropPending(C.SrcB, C.Op | (1ull << 63));
}

} // namespace hsafront
