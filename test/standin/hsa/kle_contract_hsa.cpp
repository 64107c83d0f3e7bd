//===- kle_contract_hsa.cpp - The KLE contract on the HSA front -----------===//
//
// TEST ONLY.  See kle_contract_hsa.h.
//
//===----------------------------------------------------------------------===//

#include "kle_contract_hsa.h"

#include <algorithm>
#include <cstring>

using namespace hsafront;

namespace {

/// Guarded by g().Mtx; never destroyed (exit handlers may still report).
struct ContractState {
  std::map<uintptr_t, uint64_t> InflightKle, InflightCnt, InflightKernarg;
  std::unordered_set<uint64_t> PendingOps; ///< copies not yet done
};
ContractState &cs() {
  static ContractState *S = new ContractState();
  return *S;
}

//===----------------------------------------------------------------------===//
// Checks at dispatch (see README: K, A1, A2, B, C, D, E, X, packet sanity)
//===----------------------------------------------------------------------===//

bool isNone(uintptr_t P) { return P == 0 || P == ~uintptr_t(0); }

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
  const std::string &Expect = cfg().Expect;
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
  // E: a kernel with a cross-team reduction needs a KLE.
  if (NeedsKle && isNone(L->Dyn))
    violation(L->N, "E: kernel %s has a cross-team reduction but dyn_ptr is %#lx",
              L->K->Name.c_str(), (unsigned long)L->Dyn);
  if (!L->K->HasEnv || isNone(L->Dyn))
    return L;
  L->HasKle = true;
  L->KleB = mem().resolve(L->Dyn, 16);
  if (!L->KleB || L->KleB->Kind == K_CODE || L->KleB->Kind == K_LOCKED ||
      L->KleB->Kind == K_KERNARG) {
    violation(L->N, "B: dyn_ptr %#lx is not in a live device or fine-grained allocation (%s)",
              (unsigned long)L->Dyn, L->KleB ? kindName(L->KleB->Kind) : "none");
    L->KleB = nullptr;
    return L;
  }
  L->HostKle = L->KleB->Kind != K_DEVICE;
  if (!(L->KleB->AllowedAgents & AGENT_BIT_GPU))
    violation(L->N, "B: dyn_ptr %#lx lies in a %s allocation the GPU was not granted",
              (unsigned long)L->Dyn, kindName(L->KleB->Kind));
  if (L->HostKle) {
    if (Expect == "copy" || Expect == "staged" || Expect == "resident")
      violation(L->N, "C: expected a device KLE (%s) but dyn_ptr %#lx is %s host memory",
                Expect.c_str(), (unsigned long)L->Dyn, kindName(L->KleB->Kind));
    if (L->KleB->Kind != K_FINE)
      violation(L->N, "C: zerocopy KLE %#lx must be in the host fine-grained pool, not %s",
                (unsigned long)L->Dyn, kindName(L->KleB->Kind));
    if (L->Dyn % 128)
      violation(L->N, "C: zerocopy KLE %#lx is not 128-byte aligned", (unsigned long)L->Dyn);
    memcpy(L->Kle, L->KleB->bytes(L->Dyn), 16);
    uint64_t W0, W1;
    memcpy(&W0, L->Kle, 8);
    memcpy(&W1, L->Kle + 8, 8);
    if (W1 & 1) {
      L->Cnt = W0;
      L->CntB = mem().resolve(W0, 8);
      if (!L->CntB || L->CntB->Kind != K_DEVICE) {
        violation(L->N, "C: counters %#lx of the zerocopy KLE are not 8 bytes of live device memory",
                  (unsigned long)W0);
        L->CntB = nullptr;
      } else {
        if (auto It = cs().InflightCnt.find(W0); It != cs().InflightCnt.end())
          violation(L->N, "X: counter block %#lx is used by in-flight launch #%llu",
                    (unsigned long)W0, (unsigned long long)It->second);
        cs().InflightCnt[W0] = L->N;
        addPending(L->CntB, L->N);
      }
    } else if (Expect == "zerocopy") {
      violation(L->N, "C: zerocopy KLE %#lx lacks the device-counters tag", (unsigned long)L->Dyn);
    }
  } else {
    if (Expect == "zerocopy")
      violation(L->N, "C: expected a host fine-grained KLE (zerocopy) but dyn_ptr %#lx is device memory",
                (unsigned long)L->Dyn);
    L->KleCopyOp = L->KleB->lastWriteOp(L->Dyn, 16);
    if (!L->KleCopyOp)
      violation(L->N, "C: no async copy into the device KLE %#lx was enqueued before the dispatch",
                (unsigned long)L->Dyn);
  }
  if (auto It = cs().InflightKle.find(L->Dyn); It != cs().InflightKle.end())
    violation(L->N, "X: KLE %#lx is used by in-flight launch #%llu", (unsigned long)L->Dyn,
              (unsigned long long)It->second);
  cs().InflightKle[L->Dyn] = L->N;
  addPending(L->KleB, L->N);
  return L;
}

void checkReductionBuffer(Launch &L) {
  uint64_t W1;
  memcpy(&W1, L.Kle + 8, 8);
  uintptr_t RB = uintptr_t(W1 & ~uint64_t(1));
  size_t Need = size_t(L.K->RedDataSize) * size_t(L.K->RedBufLen);
  if (!Need)
    return;
  BlockP B = mem().resolve(RB, Need);
  if (!B || B->Kind != K_DEVICE) {
    violation(L.N, "D: reduction buffer %#lx is not %zu bytes of live device memory",
              (unsigned long)RB, Need);
    return;
  }
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
  if (L.K->Exe->Destroyed)
    violation(L.N, "B: %s: the executable of kernel %s was destroyed", Phase, L.K->Name.c_str());
  uintptr_t KA = reinterpret_cast<uintptr_t>(L.P.kernarg_address);
  if (L.KernargB->Freed)
    violation(L.N, "B: %s: kernarg buffer %#lx was freed", Phase, (unsigned long)KA);
  else if (memcmp(L.KernargB->bytes(KA), L.Kernarg.data(), L.Kernarg.size()))
    violation(L.N, "K: %s: kernarg bytes at %#lx changed since the doorbell", Phase,
              (unsigned long)KA);
  if (!L.HasKle || !L.KleB)
    return;
  if (L.KleB->Freed) {
    violation(L.N, "B: %s: KLE %#lx was freed", Phase, (unsigned long)L.Dyn);
    return;
  }
  const uint8_t *Now = L.KleB->bytes(L.Dyn);
  if (!L.HostKle && Start) {
    // The bytes a device KLE holds must have arrived by a copy that
    // completed before the dispatch started.
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      if (L.KleCopyOp && cs().PendingOps.count(L.KleCopyOp))
        violation(L.N, "C: the copy (op #%llu) that delivers the device KLE %#lx had not "
                  "completed when the dispatch started", (unsigned long long)L.KleCopyOp,
                  (unsigned long)L.Dyn);
    }
    memcpy(L.Kle, Now, 16);
  } else if (memcmp(Now, L.Kle, 16)) {
    violation(L.N, "A1: %s: KLE bytes at %#lx changed: expected %s, found %s", Phase,
              (unsigned long)L.Dyn, hex(L.Kle, 16).c_str(), hex(Now, 16).c_str());
  }
  if (Start) {
    checkReductionBuffer(L);
    if (L.CntB) {
      if (L.CntB->Freed)
        violation(L.N, "B: start: counter block %#lx was freed", (unsigned long)L.Cnt);
      else {
        uint64_t C;
        memcpy(&C, L.CntB->bytes(L.Cnt), 8);
        if (C)
          violation(L.N, "C: the zerocopy counters at %#lx are %#llx, not zero, at kernel start",
                    (unsigned long)L.Cnt, (unsigned long long)C);
      }
    }
  } else if (L.RedB && L.RedB->Freed) {
    violation(L.N, "B: end: reduction buffer %#lx was freed while the kernel ran",
              (unsigned long)L.RedB->Addr);
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
    Drop(cs().InflightKle, L.Dyn);
  if (L.Cnt)
    Drop(cs().InflightCnt, L.Cnt);
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
    if (Id >> 63)
      opViolation("B: %s of %s memory %#lx while copy op #%llu still uses it", By,
                  kindName(B->Kind), (unsigned long)B->Addr, (unsigned long long)(Id & ~(1ull << 63)));
    else
      violation(Id, "B: %s of %s memory %#lx while this launch is pending", By,
                kindName(B->Kind), (unsigned long)B->Addr);
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
        violation(KV.second->N, "B: hsa_executable_destroy while this dispatch of %s is pending",
                  KV.second->K->Name.c_str());
  }
}

void kleAtQueueDestroy(const Queue &Q) {
  for (auto &KV : Q.Launches)
    for (auto *M : {&cs().InflightKle, &cs().InflightCnt, &cs().InflightKernarg})
      for (auto It = M->begin(); It != M->end();)
        It = It->second == KV.second->N ? M->erase(It) : std::next(It);
}

void kleAtCopyEnqueue(Copy &C) {
  if (C.SrcB->Kind == K_FINE && C.N <= 4096) {
    DeviceReadScope Racy; // the host may be filling it (check A2)
    C.SrcSnap.assign(C.SrcB->bytes(C.Src), C.SrcB->bytes(C.Src) + C.N);
  }
  C.Epoch0 = g().HostEpoch.load();
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
  return memcmp(C.SrcB->bytes(C.Src), C.SrcSnap.data(), C.SrcSnap.size()) != 0;
}

void kleAtCopyRun(const Copy &C) {
  if (!C.SrcSnap.empty() && C.SrcB && !C.SrcB->Freed && sourceChanged(C)) {
    bool HostDep = false;
    for (auto *D : C.Deps)
      HostDep |= D->HostEpoch > C.Epoch0;
    if (!HostDep)
      opViolation("A2: copy op #%llu: source %#lx (fine-grained) changed between the enqueue "
                  "and the DMA, and no dependency was signalled by host code since: a staging "
                  "slot recycled early", (unsigned long long)C.Op, (unsigned long)C.Src);
  }
  if (C.DstB && C.DstB->Freed)
    opViolation("B: copy op #%llu writes freed %s memory at %#lx", (unsigned long long)C.Op,
                kindName(C.DstB->Kind), (unsigned long)C.Dst);
  if (C.SrcB && C.SrcB->Freed)
    opViolation("B: copy op #%llu reads freed %s memory at %#lx", (unsigned long long)C.Op,
                kindName(C.SrcB->Kind), (unsigned long)C.Src);
}

void kleAtCopyDone(const Copy &C) {
  cs().PendingOps.erase(C.Op);
  dropPending(C.DstB, C.Op | (1ull << 63));
  dropPending(C.SrcB, C.Op | (1ull << 63));
}

} // namespace hsafront
