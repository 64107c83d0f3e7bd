//===- hsa_memory.cpp - HSA stand-in: memory pools, memory, async copies ---===//
//
// TEST ONLY.  The memory pools (three host pools on the CPU agent, device
// memory and GROUP on the GPU), pool allocate and free, allow_access,
// lock and unlock, fill, pointer info, hsa_memory_copy, and
// hsa_amd_memory_async_copy with the DMA engine thread that runs the copies
// (in any order once their dependencies are 0).
//
//===----------------------------------------------------------------------===//

#include "happens_before_hsa.h"
#include "kle_contract_hsa.h"

#include <algorithm>
#include <cstring>

using namespace hsafront;

//===----------------------------------------------------------------------===//
// DMA engine (copies start in any order once their dependencies are 0)
//===----------------------------------------------------------------------===//

namespace hsafront {

static void runCopy(Copy &C) {
  kleAtCopyRun(C);
  hbAtCopyRun(C);
  uint8_t *D = C.DstB ? C.DstB->bytes(C.Dst) : reinterpret_cast<uint8_t *>(C.Dst);
  const uint8_t *S = C.SrcB ? C.SrcB->bytes(C.Src) : reinterpret_cast<const uint8_t *>(C.Src);
  memmove(D, S, C.N);
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    kleAtCopyDone(C);
  }
  hbAtCopyDone(C);
  sigSub(C.Done, 1);
}

void startHeldCopyLocked(Signal *S) {
  if (!S || !S->HoldsCopy.exchange(false))
    return;
  for (auto &C : g().Copies)
    if (C->Held && C->Done == S) {
      C->Held = false;
      C->ReadyNs = nowNs() + randomDelayUs() * 1000;
    }
}

void startHeldCopy(Signal *S) {
  if (!S || !S->HoldsCopy.load())
    return;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    startHeldCopyLocked(S);
  }
  g().Wake.notify();
}

void dmaWorker() {
  while (true) {
    std::shared_ptr<Copy> Pick;
    uint64_t NextReady = ~0ull;
    uint64_t Seen = g().Wake.epoch();
    std::unique_lock<std::mutex> Run(g().CopyRunMtx);
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      uint64_t Now = nowNs();
      // Random order among the ready ones.
      std::vector<std::list<std::shared_ptr<Copy>>::iterator> Ready;
      for (auto It = g().Copies.begin(); It != g().Copies.end(); ++It) {
        auto &C = **It;
        for (Signal *S : C.Deps) // a copy that waits for one observes it
          startHeldCopyLocked(S);
        bool DepsOk = broken("ignore-copy-deps") ||
                      std::all_of(C.Deps.begin(), C.Deps.end(),
                                  [](Signal *S) { return S->V.load() == 0; });
        if (!DepsOk)
          continue;
        if (C.ReadyNs > Now) {
          NextReady = std::min(NextReady, C.ReadyNs);
          continue;
        }
        Ready.push_back(It);
      }
      if (!Ready.empty()) {
        auto It = Ready[randomBelow(Ready.size())];
        Pick = *It;
        g().Copies.erase(It);
      }
    }
    if (Pick) {
      if (broken("scribble-staging") && Pick->SrcB && Pick->SrcB->Kind == K_FINE && Pick->N == 16)
        Pick->SrcB->bytes(Pick->Src)[15] ^= 0x40;
      runCopy(*Pick);
      continue;
    }
    Run.unlock();
    // Until the next copy is due, a signal changes or a copy is queued.
    uint64_t Now = nowNs();
    uint64_t Wait = NextReady == ~0ull ? 5000000 : (NextReady > Now ? NextReady - Now : 0);
    g().Wake.waitChange(Seen, std::min<uint64_t>(Wait, 5000000));
  }
}

} // namespace hsafront

//===----------------------------------------------------------------------===//
// Exports: memory pools
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t A, hsa_status_t (*Cb)(hsa_amd_memory_pool_t, void *), void *D) {
  ENTRY("hsa_amd_agent_iterate_memory_pools");
  NEED_INIT();
  if (!validAgent(A))
    return ST_INVALID_AGENT;
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  static const uint64_t CpuPools[] = {POOL_HOST_FINE, POOL_HOST_KERNARG, POOL_HOST_COARSE};
  static const uint64_t GpuPools[] = {POOL_DEV, POOL_GROUP};
  const uint64_t *P = A.handle == CPU_AGENT ? CpuPools : GpuPools;
  size_t N = A.handle == CPU_AGENT ? 3 : 2;
  for (size_t I = 0; I < N; ++I) {
    hsa_status_t S = Cb(hsa_amd_memory_pool_t{P[I]}, D);
    if (S != HSA_STATUS_SUCCESS)
      return S;
  }
  return HSA_STATUS_SUCCESS;
}

static bool validPool(uint64_t P) {
  return P == POOL_HOST_FINE || P == POOL_HOST_KERNARG || P == POOL_HOST_COARSE ||
         P == POOL_DEV || P == POOL_GROUP;
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t P,
                                                 hsa_amd_memory_pool_info_t Attr, void *V) {
  ENTRY("hsa_amd_memory_pool_get_info");
  NEED_INIT();
  if (!validPool(P.handle) || !V)
    return ST_INVALID_ARGUMENT;
  bool Group = P.handle == POOL_GROUP;
  switch (Attr) {
  case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
    *static_cast<hsa_amd_segment_t *>(V) = Group ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL;
    break;
  case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: {
    uint32_t F = 0;
    if (P.handle == POOL_HOST_FINE) F = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
    if (P.handle == POOL_HOST_KERNARG)
      F = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT;
    if (P.handle == POOL_HOST_COARSE || P.handle == POOL_DEV)
      F = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
    *static_cast<uint32_t *>(V) = F;
    break;
  }
  case HSA_AMD_MEMORY_POOL_INFO_SIZE:
    *static_cast<size_t *>(V) = Group ? GROUP_SIZE : P.handle == POOL_DEV ? DEV_POOL_SIZE : size_t(128) << 30;
    break;
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: *static_cast<bool *>(V) = !Group; break;
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
  case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: *static_cast<size_t *>(V) = 4096; break;
  case HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL: *static_cast<bool *>(V) = false; break;
  default: return ST_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agent_memory_pool_get_info(hsa_agent_t A, hsa_amd_memory_pool_t P,
                                                       hsa_amd_agent_memory_pool_info_t Attr,
                                                       void *V) {
  ENTRY("hsa_amd_agent_memory_pool_get_info");
  NEED_INIT();
  if (!validAgent(A))
    return ST_INVALID_AGENT;
  if (!validPool(P.handle) || !V || Attr != HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS)
    return ST_INVALID_ARGUMENT;
  bool HostPool = P.handle == POOL_HOST_FINE || P.handle == POOL_HOST_KERNARG ||
                  P.handle == POOL_HOST_COARSE;
  int Access;
  if (A.handle == GPU_AGENT)
    Access = HostPool ? ACCESS_DISALLOWED_BY_DEFAULT : ACCESS_ALLOWED_BY_DEFAULT;
  else
    Access = HostPool ? ACCESS_ALLOWED_BY_DEFAULT : HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;
  *static_cast<int *>(V) = Access;
  return HSA_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Exports: memory
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t P, size_t Size,
                                                 uint32_t Flags, void **Ptr) {
  ENTRY("hsa_amd_memory_pool_allocate");
  NEED_INIT();
  if (!validPool(P.handle) || !Ptr || Size == 0)
    return ST_INVALID_ARGUMENT;
  if (P.handle == POOL_GROUP)
    return ST_INVALID_ALLOCATION;
  if (Size > DEV_POOL_SIZE)
    return ST_OUT_OF_RESOURCES;
  int K = P.handle == POOL_DEV ? K_DEVICE
          : P.handle == POOL_HOST_FINE ? K_FINE
          : P.handle == POOL_HOST_KERNARG ? K_KERNARG : K_HOST_COARSE;
  // Per-pool pseudo entries, so that a fault can target one pool:
  // KLE_STANDIN_FAIL=hsa_amd_memory_pool_allocate@fine:1+:... .
  static EntryStat *PerPool[K_COUNT] = {
      registerEntry("hsa_amd_memory_pool_allocate@device"),
      registerEntry("hsa_amd_memory_pool_allocate@fine"),
      registerEntry("hsa_amd_memory_pool_allocate@kernarg"),
      registerEntry("hsa_amd_memory_pool_allocate@host-coarse"), nullptr, nullptr};
  if (int Inj = enter(*PerPool[K]))
    return hsa_status_t(Inj);
  BlockP B = mem().allocate(K, Size, K == K_DEVICE, 0xCD);
  if (!B)
    return ST_OUT_OF_RESOURCES;
  B->AllowedAgents = K == K_DEVICE ? AGENT_BIT_GPU : AGENT_BIT_CPU;
  *Ptr = reinterpret_cast<void *>(B->Addr);
  return HSA_STATUS_SUCCESS;
}


EXPORT hsa_status_t hsa_amd_memory_pool_free(void *Ptr) {
  ENTRY("hsa_amd_memory_pool_free");
  NEED_INIT();
  BlockP B = mem().byStart(reinterpret_cast<uintptr_t>(Ptr));
  if (!B || B->Kind == K_LOCKED || B->Kind == K_CODE) {
    say("hsa_amd_memory_pool_free(%p): not the base of a pool allocation", Ptr);
    return ST_INVALID_ARGUMENT;
  }
  if (B->Freed) {
    say("hsa_amd_memory_pool_free(%p): double free", Ptr);
    return ST_INVALID_ARGUMENT;
  }
  kleAtFree(B, "hsa_amd_memory_pool_free");
  hbAtFree(*B);
  mem().release(B);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t N, const hsa_agent_t *Agents,
                                                const uint32_t *Flags, const void *Ptr) {
  ENTRY("hsa_amd_agents_allow_access");
  NEED_INIT();
  if (!N || !Agents)
    return ST_INVALID_ARGUMENT;
  BlockP B = mem().byStart(reinterpret_cast<uintptr_t>(Ptr));
  if (!B || B->Freed)
    return ST_INVALID_ARGUMENT;
  uint64_t Bits = 0;
  for (uint32_t I = 0; I < N; ++I) {
    if (!validAgent(Agents[I]))
      return ST_INVALID_AGENT;
    Bits |= Agents[I].handle == GPU_AGENT ? AGENT_BIT_GPU : AGENT_BIT_CPU;
  }
  std::lock_guard<std::mutex> G(g().Mtx);
  B->AllowedAgents |= Bits;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_lock(void *Host, size_t Size, hsa_agent_t *Agents,
                                        int NumAgents, void **AgentPtr) {
  ENTRY("hsa_amd_memory_lock");
  NEED_INIT();
  if (!Host || !Size || !AgentPtr)
    return ST_INVALID_ARGUMENT;
  uintptr_t P = reinterpret_cast<uintptr_t>(Host);
  if (BlockP B = mem().resolve(P, 1)) {
    if (B->Kind != K_LOCKED) { // pool memory is already pinned
      *AgentPtr = Host;
      return HSA_STATUS_SUCCESS;
    }
  }
  BlockP B = mem().registerHost(K_LOCKED, P, Size);
  B->AllowedAgents = AGENT_BIT_CPU | AGENT_BIT_GPU;
  *AgentPtr = Host;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_unlock(void *Host) {
  ENTRY("hsa_amd_memory_unlock");
  NEED_INIT();
  BlockP B = mem().byStart(reinterpret_cast<uintptr_t>(Host));
  if (!B || B->Freed)
    return HSA_STATUS_SUCCESS; // ROCr: unlocking unlocked memory is not an error
  if (B->Kind != K_LOCKED)
    return HSA_STATUS_SUCCESS;
  kleAtFree(B, "hsa_amd_memory_unlock");
  mem().release(B);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_fill(void *Ptr, uint32_t Value, size_t Count) {
  ENTRY("hsa_amd_memory_fill");
  NEED_INIT();
  uintptr_t P = reinterpret_cast<uintptr_t>(Ptr);
  if (P % 4)
    return ST_INVALID_ARGUMENT;
  BlockP B = blockFor(P, Count * 4);
  if (!B)
    return ST_INVALID_ARGUMENT;
  hbHostAccess("hsa_amd_memory_fill", B, P, nullptr, 0, Count * 4);
  uint8_t *D = B->bytes(P);
  for (size_t I = 0; I < Count; ++I)
    memcpy(D + 4 * I, &Value, 4);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_pointer_info(const void *Ptr, hsa_amd_pointer_info_t *Info,
                                         void *(*Alloc)(size_t), uint32_t *NumAgents,
                                         hsa_agent_t **Accessible) {
  ENTRY("hsa_amd_pointer_info");
  NEED_INIT();
  if (!Info || Info->size < offsetof(hsa_amd_pointer_info_t, sizeInBytes) + sizeof(size_t))
    return ST_INVALID_ARGUMENT;
  BlockP B = mem().resolve(reinterpret_cast<uintptr_t>(Ptr), 1);
  uint32_t Sz = Info->size;
  memset(Info, 0, sizeof(*Info));
  Info->size = Sz;
  std::vector<hsa_agent_t> Agents;
  if (!B || B->Kind == K_CODE) {
    Info->type = HSA_EXT_POINTER_TYPE_UNKNOWN;
  } else {
    Info->type = B->Kind == K_LOCKED ? HSA_EXT_POINTER_TYPE_LOCKED : HSA_EXT_POINTER_TYPE_HSA;
    Info->agentBaseAddress = reinterpret_cast<void *>(B->Addr);
    Info->hostBaseAddress = B->Kind == K_DEVICE ? nullptr : reinterpret_cast<void *>(B->Addr);
    Info->sizeInBytes = B->Size;
    if (B->AllowedAgents & AGENT_BIT_CPU)
      Agents.push_back({CPU_AGENT});
    if (B->AllowedAgents & AGENT_BIT_GPU)
      Agents.push_back({GPU_AGENT});
  }
  if (NumAgents)
    *NumAgents = uint32_t(Agents.size());
  if (Accessible) {
    *Accessible = nullptr;
    if (!Agents.empty()) {
      if (!Alloc)
        return ST_INVALID_ARGUMENT;
      *Accessible = static_cast<hsa_agent_t *>(Alloc(Agents.size() * sizeof(hsa_agent_t)));
      if (!*Accessible)
        return ST_OUT_OF_RESOURCES;
      memcpy(*Accessible, Agents.data(), Agents.size() * sizeof(hsa_agent_t));
    }
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_memory_copy(void *Dst, const void *Src, size_t N) {
  ENTRY("hsa_memory_copy");
  NEED_INIT();
  BlockP D = blockFor(reinterpret_cast<uintptr_t>(Dst), N);
  BlockP S = blockFor(reinterpret_cast<uintptr_t>(Src), N);
  uintptr_t DP = reinterpret_cast<uintptr_t>(Dst), SP = reinterpret_cast<uintptr_t>(Src);
  if ((!D && mem().inDeviceRange(DP)) || (!S && mem().inDeviceRange(SP)))
    return ST_INVALID_ARGUMENT;
  hbHostAccess("hsa_memory_copy", D, DP, S, SP, N);
  memmove(D ? D->bytes(DP) : static_cast<uint8_t *>(Dst),
          S ? S->bytes(SP) : static_cast<const uint8_t *>(Src), N);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_async_copy(void *Dst, hsa_agent_t DstAgent, const void *Src,
                                              hsa_agent_t SrcAgent, size_t Size,
                                              uint32_t NumDeps, const hsa_signal_t *Deps,
                                              hsa_signal_t Completion) {
  ENTRY("hsa_amd_memory_async_copy");
  NEED_INIT();
  if (!validAgent(DstAgent) || !validAgent(SrcAgent))
    return ST_INVALID_AGENT;
  if (!Dst || !Src || (NumDeps && !Deps))
    return ST_INVALID_ARGUMENT;
  auto C = std::make_shared<Copy>();
  C->Dst = reinterpret_cast<uintptr_t>(Dst);
  C->Src = reinterpret_cast<uintptr_t>(Src);
  C->N = Size;
  C->DstB = blockFor(C->Dst, Size);
  C->SrcB = blockFor(C->Src, Size);
  if (!C->DstB || !C->SrcB) {
    opViolation("hsa_amd_memory_async_copy(%p <- %p, %zu): %s is not pool, locked or code-object "
                "memory (pageable memory cannot be a DMA endpoint)", Dst, Src, Size,
                !C->DstB ? "the destination" : "the source");
    return ST_INVALID_ARGUMENT;
  }
  C->Done = sigOf(Completion);
  if (!C->Done)
    return ST_INVALID_SIGNAL;
  for (uint32_t I = 0; I < NumDeps; ++I) {
    Signal *S = sigOf(Deps[I]);
    if (!S)
      return ST_INVALID_SIGNAL;
    C->Deps.push_back(S);
  }
  kleAtCopyEnqueue(*C);
  hbAtCopyEnqueue(*C);
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    for (Signal *S : C->Deps)
      startHeldCopyLocked(S);
    C->Held = g().CopyStartObserved;
    C->ReadyNs = C->Held ? ~0ull : nowNs() + randomDelayUs() * 1000;
    if (C->Held)
      C->Done->HoldsCopy.store(true);
    C->Op = g().NextOp++;
    kleTrackCopy(*C);
    g().Copies.push_back(C);
  }
  g().Wake.notify();
  return HSA_STATUS_SUCCESS;
}
