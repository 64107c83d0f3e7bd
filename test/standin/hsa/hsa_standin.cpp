//===- hsa_standin.cpp - CPU stand-in for libhsa-runtime64 (TEST ONLY) ----===//
//
// A fake libhsa-runtime64.so.1 so that LLVM 22.1.8's unmodified AMDGPU plugin
// (offload/plugins-nextgen/amdgpu, dlopen mode, dynamic_hsa/hsa.cpp) runs
// every transport's launch lifecycle on a machine without a GPU, and so that
// every kernel dispatch is checked against the KLE / dyn_ptr contract.  No
// kernel executes.  The driver-independent machinery (configuration, output,
// violations, fault injection, call counts, the memory table, the workers'
// delays, wake-up, stop and join) is the shared core in ../core.  See
// ../README.md for variables and checks.
//
// The ABI is the plugin's own trimmed hsa.h / hsa_ext_amd.h.  Values those
// headers lack come from ROCr's public headers (not checked on hardware).
//
// NEVER install this library.  The CMake project has no install() rule.
//
//===----------------------------------------------------------------------===//

#include "hsa.h"
#include "hsa_ext_amd.h"

#include "../core/core.h"
#include "../core/worker.h"

#include <elf.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#define EXPORT extern "C" __attribute__((visibility("default")))

using namespace standin;

// Values from ROCr's public headers that the plugin's trimmed headers lack.
static constexpr hsa_status_t ST_INVALID_ARGUMENT = hsa_status_t(0x1001);
static constexpr hsa_status_t ST_INVALID_ALLOCATION = hsa_status_t(0x1003);
static constexpr hsa_status_t ST_INVALID_AGENT = hsa_status_t(0x1004);
static constexpr hsa_status_t ST_INVALID_SIGNAL = hsa_status_t(0x1007);
static constexpr hsa_status_t ST_INVALID_QUEUE = hsa_status_t(0x1008);
static constexpr hsa_status_t ST_OUT_OF_RESOURCES = hsa_status_t(0x1009);
static constexpr hsa_status_t ST_INVALID_EXECUTABLE = hsa_status_t(0x1015);
static constexpr hsa_status_t ST_INVALID_CODE_OBJECT_READER = hsa_status_t(0x1019);
static constexpr uint16_t PACKET_TYPE_INVALID = 1;
static constexpr int ACCESS_ALLOWED_BY_DEFAULT = 1;
static constexpr int ACCESS_DISALLOWED_BY_DEFAULT = 2;

namespace {

//===----------------------------------------------------------------------===//
// Agents, pools, memory kinds
//===----------------------------------------------------------------------===//

constexpr uint64_t CPU_AGENT = 0x100, GPU_AGENT = 0x200;
constexpr uint64_t AGENT_BIT_CPU = 1, AGENT_BIT_GPU = 2;
enum Pool : uint64_t {
  POOL_HOST_FINE = 0x11,    ///< CPU: GLOBAL fine-grained (pinned, KLE slabs)
  POOL_HOST_KERNARG = 0x12, ///< CPU: GLOBAL fine-grained + KERNARG_INIT
  POOL_HOST_COARSE = 0x13,  ///< CPU: GLOBAL coarse-grained
  POOL_DEV = 0x21,          ///< GPU: GLOBAL coarse-grained (device memory)
  POOL_GROUP = 0x22,        ///< GPU: GROUP (LDS), not allocatable
};
/// Memory-table kinds (core counts per kind).
enum Kind { K_DEVICE = 0, K_FINE, K_KERNARG, K_HOST_COARSE, K_LOCKED, K_CODE, K_COUNT };
const char *kindName(int K) {
  static const char *N[] = {"device", "fine", "kernarg", "host-coarse", "locked", "code"};
  return K >= 0 && K < K_COUNT ? N[K] : "?";
}
constexpr size_t DEV_POOL_SIZE = size_t(64) << 30; // 64 GiB (MI210)
constexpr uint32_t GROUP_SIZE = 65536;
constexpr uint32_t MAX_WG = 1024;
constexpr const char *ISA_NAME = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";

//===----------------------------------------------------------------------===//
// Global state
//===----------------------------------------------------------------------===//

struct Signal {
  uint64_t Id = 0;
  std::atomic<int64_t> V{0};
  bool Destroyed = false;
  struct Queue *DoorbellOf = nullptr; ///< non-null: a queue's doorbell
  uint64_t HostEpoch = 0;             ///< last host-side store/subtract
};

struct Kernel;
struct Executable {
  uint64_t Id = 0;
  bool Frozen = false, Destroyed = false;
  BlockP Seg;
  std::vector<struct Symbol *> Syms;
};
struct Symbol {
  Executable *Exe = nullptr;
  std::string Name;
  bool IsKernel = false;
  uint64_t Addr = 0; ///< device address (the .kd for kernels)
  uint32_t Size = 0;
  Kernel *K = nullptr;
};
struct Kernel {
  std::string Name; ///< without ".kd"
  Executable *Exe = nullptr;
  uint32_t KernargSize = 0, GroupSize = 0, PrivateSize = 0;
  bool DynStack = false;
  bool HasEnv = false; ///< <name>_kernel_environment exists: takes dyn_ptr
  int32_t RedDataSize = 0, RedBufLen = 0;
};

struct Launch {
  uint64_t N = 0;
  uint64_t Index = 0; ///< packet index
  hsa_kernel_dispatch_packet_t P;
  Kernel *K = nullptr;
  BlockP KernargB;
  std::vector<uint8_t> Kernarg;
  uintptr_t Dyn = 0;
  bool HasKle = false, HostKle = false;
  BlockP KleB, CntB, RedB;
  uintptr_t Cnt = 0;
  uint8_t Kle[16] = {};
  uint64_t KleCopyOp = 0; ///< device KLE: the last copy into it enqueued before the doorbell
};

struct Queue {
  hsa_queue_t Q; // first: the plugin's hsa_queue_t* maps to this struct
  uint64_t Id = 0;
  uint8_t *Ring = nullptr;
  std::atomic<uint64_t> Write{0}, Read{0};
  std::atomic<uint64_t> Rung{0}; ///< packets [0, Rung) announced by a doorbell
  uint64_t Scanned = 0;
  Signal *Doorbell = nullptr;
  void (*Callback)(hsa_status_t, hsa_queue_t *, void *) = nullptr;
  void *Data = nullptr;
  std::mutex M;
  std::map<uint64_t, std::shared_ptr<Launch>> Launches;
  standin::Worker Work; ///< runs the packets in order (queueWorker)
  bool Destroyed = false;
};

struct Copy {
  uint64_t Op = 0;
  uintptr_t Dst = 0, Src = 0;
  size_t N = 0;
  BlockP DstB, SrcB; ///< null for pageable host memory (a violation)
  std::vector<Signal *> Deps;
  Signal *Done = nullptr;
  uint64_t ReadyNs = 0;
  std::vector<uint8_t> SrcSnap;
  uint64_t Epoch0 = 0;
};

struct Handler {
  Signal *S;
  hsa_signal_condition_t Cond;
  int64_t Value;
  hsa_amd_signal_handler Fn;
  void *Arg;
};

struct Global {
  std::mutex Mtx; // handles, launches' pending refs, in-flight maps, copies
  int InitCount = 0;
  bool EverInit = false;
  std::unordered_map<uint64_t, Signal *> Signals;
  std::atomic<uint64_t> NextSignal{1};
  size_t LiveSignals = 0, PeakSignals = 0;
  std::set<Queue *> Queues;
  uint64_t NextQueue = 1;
  std::set<Executable *> Exes;
  uint64_t NextExe = 1;
  std::set<uint64_t> Readers;
  std::unordered_map<uint64_t, Kernel *> Kernels; // kernel_object -> kernel
  std::unordered_set<Symbol *> Syms;
  std::map<uintptr_t, uint64_t> InflightKle, InflightCnt, InflightKernarg;
  std::list<std::shared_ptr<Copy>> Copies; // not yet executed
  std::unordered_set<uint64_t> PendingOps;
  uint64_t NextOp = 1;
  std::list<Handler> Handlers;
  size_t HandlersRunning = 0;
  hsa_amd_system_event_callback_t EventCb = nullptr;
  void *EventData = nullptr;
  // Every signal change notifies this (one channel, as a command processor
  // would poll every signal); waitUntil re-checks at least every 2 ms.
  standin::Waker Wake{2000000};
  std::atomic<uint64_t> HostEpoch{0};
  bool ThreadsStarted = false;
  uint64_t WatchdogS = 60;
};

Global &g() {
  static Global *G = new Global();
  return *G;
}

//===----------------------------------------------------------------------===//
// Status names, configuration
//===----------------------------------------------------------------------===//

struct StatusName {
  int V;
  const char *Name, *Text;
};
const StatusName StatusNames[] = {
    {0x0, "HSA_STATUS_SUCCESS", "success"},
    {0x1, "HSA_STATUS_INFO_BREAK", "iteration stopped by the callback"},
    {0x1000, "HSA_STATUS_ERROR", "generic error"},
    {0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", "invalid queue creation"},
    {0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION", "invalid allocation"},
    {0x1004, "HSA_STATUS_ERROR_INVALID_AGENT", "invalid agent"},
    {0x1007, "HSA_STATUS_ERROR_INVALID_SIGNAL", "invalid signal"},
    {0x1008, "HSA_STATUS_ERROR_INVALID_QUEUE", "invalid queue"},
    {0x1009, "HSA_STATUS_ERROR_OUT_OF_RESOURCES", "out of resources"},
    {0x100B, "HSA_STATUS_ERROR_NOT_INITIALIZED", "runtime not initialized"},
    {0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", "invalid code object"},
    {0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", "invalid symbol name"},
    {0x1015, "HSA_STATUS_ERROR_INVALID_EXECUTABLE", "invalid executable"},
    {0x1016, "HSA_STATUS_ERROR_EXCEPTION", "kernel exception"},
    {0x1019, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER", "invalid code object reader"},
};

bool parseStatus(const std::string &T, int &Out) {
  for (auto &S : StatusNames)
    if (T == S.Name) {
      Out = S.V;
      return true;
    }
  if (T.empty())
    return false;
  char *End = nullptr;
  long V = strtol(T.c_str(), &End, 0);
  if (*End || V < 0)
    return false;
  Out = int(V);
  return true;
}

void finalReport(const char *Where);
void installSegvNote();

const Config &conf() {
  static const Config *C = [] {
    const Config &R = init("kle-hsa-standin", "KLE_HSA_STANDIN_", parseStatus, nullptr);
    if (const char *E = env("WATCHDOG_S"))
      g().WatchdogS = std::max(1ull, strtoull(E, nullptr, 10));
    static const char *Known[] = {"ignore-barriers", "ignore-copy-deps", "early-completion",
                                  "scribble-kle", "dirty-counters", "scribble-staging",
                                  "bad-packet", "scribble-kernarg"};
    for (auto &B : R.Breaks)
      if (std::none_of(std::begin(Known), std::end(Known),
                       [&](const char *K) { return B == K; }))
        say("unknown KLE_HSA_STANDIN_BREAK item '%s' ignored", B.c_str());
    installExitHandlers(finalReport);
    installSegvNote();
    return &R;
  }();
  return *C;
}

//===----------------------------------------------------------------------===//
// Entry accounting
//===----------------------------------------------------------------------===//

#define ENTRY(NAME)                                                            \
  (void)conf();                                                                \
  static EntryStat *ES__ = registerEntry(NAME);                                \
  if (int Inj__ = enter(*ES__))                                                \
  return hsa_status_t(Inj__)

// Entry points returning no status: counted, never failed.
#define ENTRY_VOID(NAME)                                                       \
  (void)conf();                                                                \
  static EntryStat *ES__ = registerEntry(NAME);                                \
  (void)enter(*ES__)

#define NEED_INIT()                                                            \
  do {                                                                         \
    std::lock_guard<std::mutex> L__(g().Mtx);                                  \
    if (!g().InitCount)                                                        \
      return HSA_STATUS_ERROR_NOT_INITIALIZED;                                 \
  } while (0)

Signal *sigOf(hsa_signal_t H, bool AllowDestroyed = false) {
  std::lock_guard<std::mutex> L(g().Mtx);
  auto It = g().Signals.find(H.handle);
  if (It == g().Signals.end())
    return nullptr;
  if (It->second->Destroyed && !AllowDestroyed)
    return nullptr;
  return It->second;
}

void sigSub(Signal *S, int64_t V) {
  S->V.fetch_sub(V);
  g().Wake.notify();
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

/// At the doorbell (the cuLaunchKernel of HSA): record the launch, check what
/// the host published, snapshot kernargs and a host KLE, take references.
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
  if (auto It = g().InflightKernarg.find(KA); It != g().InflightKernarg.end())
    violation(L->N, "kernarg: buffer %#lx is shared with in-flight launch #%llu",
              (unsigned long)KA, (unsigned long long)It->second);
  g().InflightKernarg[KA] = L->N;
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
        if (auto It = g().InflightCnt.find(W0); It != g().InflightCnt.end())
          violation(L->N, "X: counter block %#lx is used by in-flight launch #%llu",
                    (unsigned long)W0, (unsigned long long)It->second);
        g().InflightCnt[W0] = L->N;
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
  if (auto It = g().InflightKle.find(L->Dyn); It != g().InflightKle.end())
    violation(L->N, "X: KLE %#lx is used by in-flight launch #%llu", (unsigned long)L->Dyn,
              (unsigned long long)It->second);
  g().InflightKle[L->Dyn] = L->N;
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
      if (L.KleCopyOp && g().PendingOps.count(L.KleCopyOp))
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
  Drop(g().InflightKernarg, reinterpret_cast<uintptr_t>(L.P.kernarg_address));
  if (L.HasKle)
    Drop(g().InflightKle, L.Dyn);
  if (L.Cnt)
    Drop(g().InflightCnt, L.Cnt);
  dropPending(L.KernargB, L.N);
  dropPending(L.KleB, L.N);
  dropPending(L.CntB, L.N);
  dropPending(L.RedB, L.N);
}

//===----------------------------------------------------------------------===//
// AQL packet processor: one in-order worker per queue
//===----------------------------------------------------------------------===//

uint16_t headerOf(Queue &Q, uint64_t Index) {
  auto *P = reinterpret_cast<uint16_t *>(Q.Ring + (Index & (Q.Q.size - 1)) * 64);
  return __atomic_load_n(P, __ATOMIC_ACQUIRE);
}

void doorbellHook(Queue &Q, int64_t Value) {
  std::lock_guard<std::mutex> L(Q.M);
  if (Value < 0)
    return;
  uint64_t Upto = uint64_t(Value) + 1;
  for (uint64_t I = Q.Scanned; I < Upto; ++I) {
    uint16_t H = headerOf(Q, I);
    if ((H & 0xff) != HSA_PACKET_TYPE_KERNEL_DISPATCH)
      continue;
    hsa_kernel_dispatch_packet_t P;
    memcpy(&P, Q.Ring + (I & (Q.Q.size - 1)) * 64, 64);
    auto Rec = recordLaunch(Q, I, P);
    if (cfg().Verbose)
      say("launch #%llu queue %llu packet %llu kernel %s dyn_ptr %#lx (%s)",
          (unsigned long long)Rec->N, (unsigned long long)Q.Id, (unsigned long long)I,
          Rec->K ? Rec->K->Name.c_str() : "?", (unsigned long)Rec->Dyn,
          !Rec->HasKle ? "no KLE" : Rec->HostKle ? "host" : "device");
    if (broken("scribble-kle") && Rec->HasKle && Rec->HostKle && Rec->KleB)
      Rec->KleB->bytes(Rec->Dyn)[15] ^= 0x80; // a host store into the slot after publish
    if (broken("scribble-kernarg") && Rec->KernargB)
      Rec->KernargB->bytes(reinterpret_cast<uintptr_t>(P.kernarg_address))[0] ^= 1;
    Q.Launches[I] = Rec;
  }
  Q.Scanned = std::max(Q.Scanned, Upto);
  Q.Rung.store(Q.Scanned);
  g().Wake.notify();
}

void watchdog(const char *What, const std::vector<Signal *> &Sigs) {
  std::string S;
  for (auto *X : Sigs) {
    char B[64];
    snprintf(B, sizeof(B), " signal %#llx=%lld", (unsigned long long)X->Id, (long long)X->V.load());
    S += B;
  }
  say("WATCHDOG: %s waited more than %llu s for%s; exiting with status 96", What,
      (unsigned long long)g().WatchdogS, S.c_str());
  fflush(nullptr);
  _exit(96);
}

void queueWorker(Queue *Q) {
  uint64_t Mask = Q->Q.size - 1;
  while (true) {
    uint64_t R = Q->Read.load();
    g().Wake.waitUntil([&] { return Q->Work.stopping() || Q->Rung.load() > R; });
    if (Q->Rung.load() <= R)
      return; // stopped with nothing announced
    uint8_t *Slot = Q->Ring + (R & Mask) * 64;
    uint16_t H = headerOf(*Q, R);
    uint16_t Type = H & 0xff;
    if (Type == HSA_PACKET_TYPE_BARRIER_AND) {
      hsa_barrier_and_packet_t P;
      memcpy(&P, Slot, 64);
      std::vector<Signal *> Deps;
      for (auto &D : P.dep_signal)
        if (D.handle) {
          Signal *S = sigOf(D, true);
          if (!S || S->Destroyed)
            opViolation("queue %llu packet %llu: barrier-AND depends on %s signal %#llx",
                        (unsigned long long)Q->Id, (unsigned long long)R,
                        S ? "a destroyed" : "an unknown", (unsigned long long)D.handle);
          else
            Deps.push_back(S);
        }
      if (!broken("ignore-barriers")) {
        bool Ok = g().Wake.waitUntil([&] {
          if (Q->Work.stopping())
            return true;
          for (auto *S : Deps)
            if (S->V.load() != 0)
              return false;
          return true;
        }, g().WatchdogS * 1000000000ull);
        if (!Ok)
          watchdog("a barrier-AND packet", Deps);
      }
      if (P.completion_signal.handle)
        if (Signal *S = sigOf(P.completion_signal))
          sigSub(S, 1);
    } else if (Type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      std::shared_ptr<Launch> L;
      {
        std::lock_guard<std::mutex> G(Q->M);
        auto It = Q->Launches.find(R);
        if (It != Q->Launches.end()) {
          L = It->second;
          Q->Launches.erase(It);
        }
      }
      if (!broken("ignore-barriers")) // a misbehaving CP is also a fast one
        randomDelay();
      Signal *Done = L ? sigOf(L->P.completion_signal) : nullptr;
      if (L) {
        if (broken("dirty-counters") && L->CntB && !L->CntB->Freed)
          L->CntB->bytes(L->Cnt)[0] = 1; // as if the last kernel left them set
        checkLaunch(*L, "start");
        if (broken("early-completion") && Done) {
          sigSub(Done, 1); // complete before the kernel "ran"
          Done = nullptr;
          sleepUs(cfg().KernelUs + 2000);
        } else {
          sleepUs(cfg().KernelUs);
        }
        checkLaunch(*L, "end");
        releaseLaunch(*L);
        if (cfg().Verbose)
          say("launch #%llu done", (unsigned long long)L->N);
      }
      if (Done)
        sigSub(Done, 1);
    } else {
      opViolation("queue %llu packet %llu: header type %u is neither dispatch nor barrier-AND",
                  (unsigned long long)Q->Id, (unsigned long long)R, Type);
    }
    __atomic_store_n(reinterpret_cast<uint16_t *>(Slot), uint16_t(PACKET_TYPE_INVALID),
                     __ATOMIC_RELEASE);
    Q->Read.store(R + 1);
    g().Wake.notify();
  }
}

//===----------------------------------------------------------------------===//
// DMA engine (copies start in any order once their dependencies are 0) and
// the async-handler thread
//===----------------------------------------------------------------------===//

static bool sourceChanged(const Copy &C) {
  DeviceReadScope Racy; // A2 asks whether the host wrote it meanwhile
  return memcmp(C.SrcB->bytes(C.Src), C.SrcSnap.data(), C.SrcSnap.size()) != 0;
}

void runCopy(Copy &C) {
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
  uint8_t *D = C.DstB ? C.DstB->bytes(C.Dst) : reinterpret_cast<uint8_t *>(C.Dst);
  const uint8_t *S = C.SrcB ? C.SrcB->bytes(C.Src) : reinterpret_cast<const uint8_t *>(C.Src);
  memmove(D, S, C.N);
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    g().PendingOps.erase(C.Op);
    dropPending(C.DstB, C.Op | (1ull << 63));
    dropPending(C.SrcB, C.Op | (1ull << 63));
  }
  sigSub(C.Done, 1);
}

void dmaWorker() {
  while (true) {
    std::shared_ptr<Copy> Pick;
    uint64_t NextReady = ~0ull;
    uint64_t Seen = g().Wake.epoch();
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      uint64_t Now = nowNs();
      // Random order among the ready ones.
      std::vector<std::list<std::shared_ptr<Copy>>::iterator> Ready;
      for (auto It = g().Copies.begin(); It != g().Copies.end(); ++It) {
        auto &C = **It;
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
    // Until the next copy is due, a signal changes or a copy is queued.
    uint64_t Now = nowNs();
    uint64_t Wait = NextReady == ~0ull ? 5000000 : (NextReady > Now ? NextReady - Now : 0);
    g().Wake.waitChange(Seen, std::min<uint64_t>(Wait, 5000000));
  }
}

bool condHolds(hsa_signal_condition_t C, int64_t V, int64_t X) {
  switch (int(C)) {
  case 0: return V == X;
  case 1: return V != X;
  case 2: return V < X;
  case 3: return V >= X;
  }
  return false;
}

// A SIGSEGV while the handler thread is inside a callback the plugin
// registered with hsa_amd_signal_async_handler is the plugin's, not the
// stand-in's (negative_controls.c: under ignore-barriers, or ignore-copy-deps
// with a two-step host-to-device copy pending, the plugin's
// AMDGPUStreamTy::asyncActionCallback finds its stream slot already
// released). Say so on stderr, then let the default action end the process
// (the faulting instruction runs again with SIG_DFL: status 139 as before).
std::atomic<long> HandlerTid{0};
std::atomic<bool> InPluginHandler{false};

void segvNote(int, siginfo_t *, void *) {
  static const char Plugin[] = "kle-hsa-standin: SIGSEGV in a callback the program registered "
                               "with hsa_amd_signal_async_handler (not in the stand-in)\n";
  static const char Other[] = "kle-hsa-standin: SIGSEGV outside the async handler callbacks\n";
  bool InCb = InPluginHandler.load() && syscall(SYS_gettid) == HandlerTid.load();
  ssize_t R = write(2, InCb ? Plugin : Other, InCb ? sizeof(Plugin) - 1 : sizeof(Other) - 1);
  (void)R;
}

void installSegvNote() {
  struct sigaction Old;
  if (sigaction(SIGSEGV, nullptr, &Old) || Old.sa_handler != SIG_DFL)
    return; // the program (or a sanitizer) has its own
  struct sigaction A;
  memset(&A, 0, sizeof(A));
  A.sa_sigaction = segvNote;
  A.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&A.sa_mask);
  sigaction(SIGSEGV, &A, nullptr);
}

void handlerWorker() {
  HandlerTid.store(syscall(SYS_gettid));
  while (true) {
    std::vector<Handler> Run;
    uint64_t Seen = g().Wake.epoch();
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      for (auto It = g().Handlers.begin(); It != g().Handlers.end();) {
        if (condHolds(It->Cond, It->S->V.load(), It->Value)) {
          Run.push_back(*It);
          It = g().Handlers.erase(It);
        } else {
          ++It;
        }
      }
      g().HandlersRunning += Run.size();
    }
    for (auto &H : Run) {
      // No stand-in lock is held: the handler calls back into the runtime.
      InPluginHandler.store(true);
      bool Again = H.Fn(H.S->V.load(), H.Arg);
      InPluginHandler.store(false);
      std::lock_guard<std::mutex> G(g().Mtx);
      g().HandlersRunning--;
      if (Again)
        g().Handlers.push_back(H);
    }
    if (!Run.empty())
      continue;
    g().Wake.waitChange(Seen, 5000000);
  }
}

void startThreads() {
  std::lock_guard<std::mutex> G(g().Mtx);
  if (g().ThreadsStarted)
    return;
  g().ThreadsStarted = true;
  std::thread(dmaWorker).detach();
  std::thread(handlerWorker).detach();
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

void liveReport(const char *At) {
  size_t LN[MaxKinds], LB[MaxKinds], PN[MaxKinds], PB[MaxKinds];
  mem().counts(LN, LB, PN, PB);
  size_t Sigs, Qs = 0, Exes = 0, Hs, Cps;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    Sigs = g().LiveSignals;
    for (auto *Q : g().Queues)
      Qs += !Q->Destroyed;
    for (auto *E : g().Exes)
      Exes += !E->Destroyed;
    Hs = g().Handlers.size() + g().HandlersRunning;
    Cps = g().Copies.size();
  }
  say("live device=%zu fine=%zu kernarg=%zu host-coarse=%zu locked=%zu signals=%zu queues=%zu "
      "executables=%zu handlers=%zu copies=%zu (bytes device=%zu fine=%zu kernarg=%zu) at=%s",
      LN[K_DEVICE], LN[K_FINE], LN[K_KERNARG], LN[K_HOST_COARSE], LN[K_LOCKED], Sigs, Qs, Exes,
      Hs, Cps, LB[K_DEVICE], LB[K_FINE], LB[K_KERNARG], At);
  size_t PeakSigs;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    PeakSigs = g().PeakSignals;
  }
  say("peak device=%zu fine=%zu kernarg=%zu host-coarse=%zu locked=%zu signals=%zu "
      "(bytes device=%zu fine=%zu kernarg=%zu)",
      PN[K_DEVICE], PN[K_FINE], PN[K_KERNARG], PN[K_HOST_COARSE], PN[K_LOCKED], PeakSigs,
      PB[K_DEVICE], PB[K_FINE], PB[K_KERNARG]);
}

void finalReport(const char *Where) {
  bool Init;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    Init = g().InitCount > 0;
  }
  if (Init)
    liveReport(Where);
}

//===----------------------------------------------------------------------===//
// Code objects
//===----------------------------------------------------------------------===//

struct Reader {
  const uint8_t *Data;
  size_t Size;
};

constexpr unsigned R_AMDGPU_RELATIVE64_ = 13;

hsa_status_t loadElf(Executable &X, const Reader &R) {
  auto Bad = [&](const char *Why) {
    say("code object rejected: %s", Why);
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  };
  if (R.Size < sizeof(Elf64_Ehdr))
    return Bad("shorter than an ELF header");
  Elf64_Ehdr Eh;
  memcpy(&Eh, R.Data, sizeof(Eh));
  if (memcmp(Eh.e_ident, ELFMAG, SELFMAG) || Eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      Eh.e_machine != 224 /*EM_AMDGPU*/ || Eh.e_type != ET_DYN)
    return Bad("not a 64-bit AMDGPU ET_DYN ELF");
  if ((Eh.e_flags & 0xff) != 0x3f)
    return Bad("not a gfx90a image (e_flags mach != 0x3f)");
  auto InFile = [&](uint64_t Off, uint64_t N) { return Off <= R.Size && N <= R.Size - Off; };
  if (!InFile(Eh.e_phoff, uint64_t(Eh.e_phnum) * sizeof(Elf64_Phdr)) ||
      !InFile(Eh.e_shoff, uint64_t(Eh.e_shnum) * sizeof(Elf64_Shdr)))
    return Bad("header tables outside the file");
  std::vector<Elf64_Phdr> Ph(Eh.e_phnum);
  memcpy(Ph.data(), R.Data + Eh.e_phoff, Ph.size() * sizeof(Elf64_Phdr));
  uint64_t Span = 0;
  for (auto &P : Ph)
    if (P.p_type == PT_LOAD) {
      if (P.p_filesz > P.p_memsz || !InFile(P.p_offset, P.p_filesz))
        return Bad("bad PT_LOAD");
      Span = std::max(Span, P.p_vaddr + P.p_memsz);
    }
  if (!Span || Span > (size_t(1) << 32))
    return Bad("no or oversized PT_LOAD segments");
  BlockP Seg = mem().allocate(K_CODE, Span, /*Device=*/true, 0);
  if (!Seg)
    return ST_OUT_OF_RESOURCES;
  Seg->AllowedAgents = AGENT_BIT_GPU;
  for (auto &P : Ph)
    if (P.p_type == PT_LOAD)
      memcpy(Seg->Backing + P.p_vaddr, R.Data + P.p_offset, P.p_filesz);
  std::vector<Elf64_Shdr> Sh(Eh.e_shnum);
  memcpy(Sh.data(), R.Data + Eh.e_shoff, Sh.size() * sizeof(Elf64_Shdr));
  // Relocations.
  for (auto &S : Sh) {
    if (S.sh_type != SHT_RELA || !InFile(S.sh_offset, S.sh_size))
      continue;
    for (uint64_t O = 0; O + sizeof(Elf64_Rela) <= S.sh_size; O += sizeof(Elf64_Rela)) {
      Elf64_Rela Ra;
      memcpy(&Ra, R.Data + S.sh_offset + O, sizeof(Ra));
      if (ELF64_R_TYPE(Ra.r_info) != R_AMDGPU_RELATIVE64_) {
        mem().release(Seg);
        return Bad("relocation other than R_AMDGPU_RELATIVE64");
      }
      if (Ra.r_offset + 8 > Span) {
        mem().release(Seg);
        return Bad("relocation outside the segments");
      }
      uint64_t V = Seg->Addr + Ra.r_addend;
      memcpy(Seg->Backing + Ra.r_offset, &V, 8);
    }
  }
  // Symbols (.dynsym).
  std::map<std::string, Symbol *> ByName;
  for (auto &S : Sh) {
    if (S.sh_type != SHT_DYNSYM || S.sh_link >= Sh.size())
      continue;
    const Elf64_Shdr &Str = Sh[S.sh_link];
    if (!InFile(S.sh_offset, S.sh_size) || !InFile(Str.sh_offset, Str.sh_size))
      continue;
    for (uint64_t O = sizeof(Elf64_Sym); O + sizeof(Elf64_Sym) <= S.sh_size; O += sizeof(Elf64_Sym)) {
      Elf64_Sym Sy;
      memcpy(&Sy, R.Data + S.sh_offset + O, sizeof(Sy));
      unsigned Bind = ELF64_ST_BIND(Sy.st_info), Type = ELF64_ST_TYPE(Sy.st_info);
      if (Sy.st_shndx == SHN_UNDEF || (Bind != STB_GLOBAL && Bind != STB_WEAK) ||
          Type != STT_OBJECT || Sy.st_name >= Str.sh_size)
        continue;
      const char *NameP = reinterpret_cast<const char *>(R.Data + Str.sh_offset + Sy.st_name);
      std::string Name(NameP, strnlen(NameP, Str.sh_size - Sy.st_name));
      if (Sy.st_value + Sy.st_size > Span)
        continue;
      auto *Y = new Symbol();
      Y->Exe = &X;
      Y->Name = Name;
      Y->Addr = Seg->Addr + Sy.st_value;
      Y->Size = uint32_t(Sy.st_size);
      if (Name.size() > 3 && Name.compare(Name.size() - 3, 3, ".kd") == 0 && Sy.st_size >= 64) {
        Y->IsKernel = true;
        auto *K = new Kernel();
        K->Name = Name.substr(0, Name.size() - 3);
        K->Exe = &X;
        const uint8_t *Kd = Seg->Backing + Sy.st_value;
        memcpy(&K->GroupSize, Kd + 0, 4);
        memcpy(&K->PrivateSize, Kd + 4, 4);
        memcpy(&K->KernargSize, Kd + 8, 4);
        uint16_t Props;
        memcpy(&Props, Kd + 56, 2);
        K->DynStack = (Props >> 11) & 1;
        Y->K = K;
      }
      ByName[Name] = Y;
    }
  }
  std::lock_guard<std::mutex> G(g().Mtx);
  for (auto &KV : ByName) {
    Symbol *Y = KV.second;
    if (Y->IsKernel) {
      auto Env = ByName.find(Y->K->Name + "_kernel_environment");
      if (Env != ByName.end() && Env->second->Size >= 28) {
        Y->K->HasEnv = true;
        const uint8_t *E = Seg->bytes(Env->second->Addr);
        memcpy(&Y->K->RedDataSize, E + 20, 4);
        memcpy(&Y->K->RedBufLen, E + 24, 4);
      }
      g().Kernels[Y->Addr] = Y->K;
      if (cfg().Verbose)
        say("kernel %s kernarg=%u group=%u private=%u env=%d reduction=%dx%d", Y->K->Name.c_str(),
            Y->K->KernargSize, Y->K->GroupSize, Y->K->PrivateSize, Y->K->HasEnv,
            Y->K->RedDataSize, Y->K->RedBufLen);
    }
    X.Syms.push_back(Y);
    g().Syms.insert(Y);
  }
  X.Seg = Seg;
  return HSA_STATUS_SUCCESS;
}

Executable *exeOf(hsa_executable_t H) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto *X = reinterpret_cast<Executable *>(H.handle);
  if (!g().Exes.count(X) || X->Destroyed)
    return nullptr;
  return X;
}

Symbol *symOf(hsa_executable_symbol_t H) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto *Y = reinterpret_cast<Symbol *>(H.handle);
  return g().Syms.count(Y) && !Y->Exe->Destroyed ? Y : nullptr;
}

bool validAgent(hsa_agent_t A) { return A.handle == CPU_AGENT || A.handle == GPU_AGENT; }

int gpuCount() {
  return standin::deviceCount(1, 1); // DEVICES: one GPU agent or none
}

/// Host view of [P, P+N): a live block (device bytes via the backing store),
/// or nullptr for memory the stand-in does not know (pageable).
BlockP blockFor(uintptr_t P, size_t N) { return mem().resolve(P, std::max<size_t>(N, 1)); }

} // namespace

//===----------------------------------------------------------------------===//
// Exports: init, agents, ISAs, pools
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_init() {
  ENTRY("hsa_init");
  startThreads();
  std::lock_guard<std::mutex> G(g().Mtx);
  g().InitCount++;
  g().EverInit = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  ENTRY("hsa_shut_down");
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    if (!g().InitCount)
      return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--g().InitCount)
      return HSA_STATUS_SUCCESS;
  }
  // Let queued copies and handlers finish before reporting.
  g().Wake.waitUntil([] {
    std::lock_guard<std::mutex> G(g().Mtx);
    return g().Copies.empty() && g().HandlersRunning == 0;
  }, 2000000000ull);
  liveReport("hsa_shut_down");
  statsReport(true);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t S, const char **Out) {
  ENTRY("hsa_status_string");
  if (!Out)
    return ST_INVALID_ARGUMENT;
  *Out = "unknown HSA status (kle-hsa-standin)";
  for (auto &N : StatusNames)
    if (N.V == int(S))
      *Out = N.Text;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t A, void *V) {
  ENTRY("hsa_system_get_info");
  NEED_INIT();
  if (!V)
    return ST_INVALID_ARGUMENT;
  if (A == HSA_SYSTEM_INFO_VERSION_MAJOR)
    *static_cast<uint16_t *>(V) = 1;
  else if (A == HSA_SYSTEM_INFO_VERSION_MINOR)
    *static_cast<uint16_t *>(V) = 1;
  else
    return ST_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*Cb)(hsa_agent_t, void *), void *D) {
  ENTRY("hsa_iterate_agents");
  NEED_INIT();
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  hsa_status_t S = Cb(hsa_agent_t{CPU_AGENT}, D);
  if (S != HSA_STATUS_SUCCESS)
    return S;
  if (gpuCount())
    return Cb(hsa_agent_t{GPU_AGENT}, D);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t A, hsa_agent_info_t Attr, void *V) {
  ENTRY("hsa_agent_get_info");
  NEED_INIT();
  if (!validAgent(A) || (A.handle == GPU_AGENT && !gpuCount()))
    return ST_INVALID_AGENT;
  if (!V)
    return ST_INVALID_ARGUMENT;
  bool Gpu = A.handle == GPU_AGENT;
  auto U32 = [&](uint32_t X) { *static_cast<uint32_t *>(V) = X; };
  auto Str = [&](const char *S, size_t Cap) {
    memset(V, 0, Cap);
    strncpy(static_cast<char *>(V), S, Cap - 1);
  };
  switch (int(Attr)) {
  case HSA_AGENT_INFO_NAME: Str(Gpu ? "gfx90a" : "kle-hsa-standin-cpu", 64); break;
  case HSA_AGENT_INFO_VENDOR_NAME: Str(Gpu ? "AMD" : "CPU", 64); break;
  case HSA_AMD_AGENT_INFO_PRODUCT_NAME: Str(Gpu ? "kle-hsa-standin MI210 (CPU stand-in)" : "CPU", 64); break;
  case HSA_AGENT_INFO_FEATURE: U32(Gpu ? HSA_AGENT_FEATURE_KERNEL_DISPATCH : 0); break;
  case HSA_AGENT_INFO_MACHINE_MODEL: U32(HSA_MACHINE_MODEL_LARGE); break;
  case HSA_AGENT_INFO_PROFILE: U32(HSA_PROFILE_BASE); break;
  case HSA_AGENT_INFO_DEVICE: U32(Gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU); break;
  case HSA_AGENT_INFO_NODE: U32(Gpu ? 1 : 0); break;
  case HSA_AMD_AGENT_INFO_UUID: Str(Gpu ? "GPU-5354414e44494e31" : "CPU-XX", 24); break;
  default:
    if (!Gpu)
      return ST_INVALID_ARGUMENT;
    switch (int(Attr)) {
    case HSA_AGENT_INFO_WAVEFRONT_SIZE: U32(64); break;
    case HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: *static_cast<uint64_t *>(V) = 100000000; break;
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t *D = static_cast<uint16_t *>(V);
      D[0] = D[1] = D[2] = MAX_WG;
      break;
    }
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: U32(MAX_WG); break;
    case HSA_AGENT_INFO_GRID_MAX_DIM:
      *static_cast<hsa_dim3_t *>(V) = hsa_dim3_t{UINT32_MAX, UINT32_MAX, UINT32_MAX};
      break;
    case HSA_AGENT_INFO_GRID_MAX_SIZE: U32(UINT32_MAX); break;
    case HSA_AGENT_INFO_FBARRIER_MAX_SIZE: U32(32); break;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: U32(104); break;
    case HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: U32(32); break;
    case HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: U32(4); break;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE: U32(131072); break;
    case HSA_AGENT_INFO_QUEUE_MIN_SIZE: U32(64); break;
    case HSA_AGENT_INFO_QUEUES_MAX: U32(128); break;
    case HSA_AGENT_INFO_CACHE_SIZE: {
      uint32_t *C = static_cast<uint32_t *>(V);
      C[0] = 16384, C[1] = 8 << 20, C[2] = 0, C[3] = 0;
      break;
    }
    case HSA_AMD_AGENT_INFO_CACHELINE_SIZE: U32(128); break;
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: U32(1700); break;
    case HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: U32(1600); break;
    case HSA_AMD_AGENT_INFO_CHIP_ID: U32(0x740f); break;
    case HSA_AGENT_INFO_FAST_F16_OPERATION: *static_cast<bool *>(V) = true; break;
    default: return ST_INVALID_ARGUMENT;
    }
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t A, hsa_status_t (*Cb)(hsa_isa_t, void *),
                                           void *D) {
  ENTRY("hsa_agent_iterate_isas");
  NEED_INIT();
  if (!validAgent(A))
    return ST_INVALID_AGENT;
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  if (A.handle != GPU_AGENT)
    return HSA_STATUS_SUCCESS;
  return Cb(hsa_isa_t{0x900a}, D);
}

EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t I, hsa_isa_info_t Attr, void *V) {
  ENTRY("hsa_isa_get_info_alt");
  NEED_INIT();
  if (I.handle != 0x900a || !V)
    return ST_INVALID_ARGUMENT;
  if (Attr == HSA_ISA_INFO_NAME_LENGTH)
    *static_cast<uint32_t *>(V) = uint32_t(strlen(ISA_NAME) + 1);
  else if (Attr == HSA_ISA_INFO_NAME)
    memcpy(V, ISA_NAME, strlen(ISA_NAME) + 1);
  else
    return ST_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

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
  // KLE_HSA_STANDIN_FAIL=hsa_amd_memory_pool_allocate@fine:1+:... .
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

static void reportPendingAtFree(const BlockP &B, const char *By) {
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
  reportPendingAtFree(B, "hsa_amd_memory_pool_free");
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
  reportPendingAtFree(B, "hsa_amd_memory_unlock");
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
  if (C->SrcB->Kind == K_FINE && Size <= 4096) {
    DeviceReadScope Racy; // the host may be filling it (check A2)
    C->SrcSnap.assign(C->SrcB->bytes(C->Src), C->SrcB->bytes(C->Src) + Size);
  }
  C->Epoch0 = g().HostEpoch.load();
  C->ReadyNs = nowNs() + randomDelayUs() * 1000;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    C->Op = g().NextOp++;
    g().PendingOps.insert(C->Op);
    C->DstB->Pending.insert(C->Op | (1ull << 63));
    C->SrcB->Pending.insert(C->Op | (1ull << 63));
    if (C->DstB->Kind == K_DEVICE)
      C->DstB->Writes[C->Dst] = {C->Dst + Size, C->Op};
    g().Copies.push_back(C);
  }
  g().Wake.notify();
  return HSA_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Exports: signals
//===----------------------------------------------------------------------===//

static hsa_status_t newSignal(int64_t Init, hsa_signal_t *Out) {
  if (!Out)
    return ST_INVALID_ARGUMENT;
  auto *S = new Signal();
  S->V.store(Init);
  std::lock_guard<std::mutex> G(g().Mtx);
  S->Id = g().NextSignal++;
  g().Signals[S->Id] = S;
  g().LiveSignals++;
  g().PeakSignals = std::max(g().PeakSignals, g().LiveSignals);
  Out->handle = S->Id;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t Init, uint32_t NumConsumers,
                                      const hsa_agent_t *Consumers, hsa_signal_t *Out) {
  ENTRY("hsa_signal_create");
  NEED_INIT();
  return newSignal(Init, Out);
}

EXPORT hsa_status_t hsa_amd_signal_create(hsa_signal_value_t Init, uint32_t NumConsumers,
                                          const hsa_agent_t *Consumers, uint64_t Attributes,
                                          hsa_signal_t *Out) {
  ENTRY("hsa_amd_signal_create");
  NEED_INIT();
  return newSignal(Init, Out);
}

EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t H) {
  ENTRY("hsa_signal_destroy");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  auto It = g().Signals.find(H.handle);
  if (It == g().Signals.end() || It->second->Destroyed || It->second->DoorbellOf)
    return ST_INVALID_SIGNAL;
  Signal *S = It->second;
  for (auto &C : g().Copies)
    if (C->Done == S || std::count(C->Deps.begin(), C->Deps.end(), S))
      opViolation("B: hsa_signal_destroy of signal %#llx that pending copy op #%llu uses",
                  (unsigned long long)S->Id, (unsigned long long)C->Op);
  for (auto &Hd : g().Handlers)
    if (Hd.S == S)
      opViolation("B: hsa_signal_destroy of signal %#llx that a pending async handler waits on",
                  (unsigned long long)S->Id);
  S->Destroyed = true;
  g().LiveSignals--;
  return HSA_STATUS_SUCCESS;
}

static Signal *apiSignal(hsa_signal_t H, const char *Fn) {
  Signal *S = sigOf(H);
  if (!S)
    opViolation("%s on an unknown or destroyed signal %#llx", Fn, (unsigned long long)H.handle);
  return S;
}

EXPORT void hsa_signal_store_relaxed(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_store_relaxed");
  Signal *S = apiSignal(H, "hsa_signal_store_relaxed");
  if (!S)
    return;
  S->V.store(V);
  if (S->DoorbellOf)
    doorbellHook(*S->DoorbellOf, V);
  else {
    S->HostEpoch = ++g().HostEpoch;
    g().Wake.notify();
  }
}

EXPORT void hsa_signal_store_screlease(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_store_screlease");
  Signal *S = apiSignal(H, "hsa_signal_store_screlease");
  if (!S)
    return;
  if (S->DoorbellOf) {
    S->V.store(V);
    doorbellHook(*S->DoorbellOf, V);
    return;
  }
  S->HostEpoch = ++g().HostEpoch;
  S->V.store(V);
  g().Wake.notify();
}

EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t H) {
  ENTRY_VOID("hsa_signal_load_scacquire");
  Signal *S = apiSignal(H, "hsa_signal_load_scacquire");
  return S ? S->V.load() : 0;
}

EXPORT void hsa_signal_subtract_screlease(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_subtract_screlease");
  Signal *S = apiSignal(H, "hsa_signal_subtract_screlease");
  if (!S)
    return;
  S->HostEpoch = ++g().HostEpoch;
  sigSub(S, V);
}

EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t H, hsa_signal_condition_t Cond,
                                                    hsa_signal_value_t X, uint64_t Timeout,
                                                    hsa_wait_state_t State) {
  ENTRY_VOID("hsa_signal_wait_scacquire");
  Signal *S = apiSignal(H, "hsa_signal_wait_scacquire");
  if (!S)
    return 0;
  // The timeout is a hint (ROCr: timestamp ticks); spurious returns are legal
  // and callers loop, so wait at most 10 ms per call.
  g().Wake.waitUntil([&] { return condHolds(Cond, S->V.load(), X); },
            std::min<uint64_t>(Timeout, 10000000ull));
  return S->V.load();
}

EXPORT hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t H, hsa_signal_condition_t Cond,
                                                 hsa_signal_value_t V, hsa_amd_signal_handler Fn,
                                                 void *Arg) {
  ENTRY("hsa_amd_signal_async_handler");
  NEED_INIT();
  Signal *S = sigOf(H);
  if (!S)
    return ST_INVALID_SIGNAL;
  if (!Fn || int(Cond) < 0 || int(Cond) > 3)
    return ST_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    g().Handlers.push_back(Handler{S, Cond, V, Fn, Arg});
  }
  g().Wake.notify(); // never run inline: the handler thread picks it up
  return HSA_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Exports: queues
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t A, uint32_t Size, hsa_queue_type32_t Type,
                                     void (*Cb)(hsa_status_t, hsa_queue_t *, void *), void *Data,
                                     uint32_t PrivateSize, uint32_t GroupSize, hsa_queue_t **Out) {
  ENTRY("hsa_queue_create");
  NEED_INIT();
  if (A.handle != GPU_AGENT)
    return ST_INVALID_AGENT;
  if (!Out || Size < 64 || Size > 131072 || (Size & (Size - 1)))
    return ST_INVALID_ARGUMENT;
  auto *Q = new Queue();
  void *Ring = nullptr;
  if (posix_memalign(&Ring, 4096, size_t(Size) * 64)) {
    delete Q;
    return ST_OUT_OF_RESOURCES;
  }
  Q->Ring = static_cast<uint8_t *>(Ring);
  for (uint32_t I = 0; I < Size; ++I) {
    memset(Q->Ring + size_t(I) * 64, 0, 64);
    *reinterpret_cast<uint16_t *>(Q->Ring + size_t(I) * 64) = PACKET_TYPE_INVALID;
  }
  hsa_signal_t Db;
  newSignal(-1, &Db);
  Q->Doorbell = sigOf(Db);
  Q->Doorbell->DoorbellOf = Q;
  Q->Callback = Cb;
  Q->Data = Data;
  Q->Q.type = Type;
  Q->Q.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  Q->Q.base_address = Q->Ring;
  Q->Q.doorbell_signal = Db;
  Q->Q.size = Size;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    Q->Id = g().NextQueue++;
    Q->Q.id = Q->Id;
    g().Queues.insert(Q);
  }
  Q->Work.start([Q] { queueWorker(Q); });
  *Out = &Q->Q;
  return HSA_STATUS_SUCCESS;
}

static Queue *queueOf(const hsa_queue_t *H) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto *Q = reinterpret_cast<Queue *>(const_cast<hsa_queue_t *>(H));
  return g().Queues.count(Q) && !Q->Destroyed ? Q : nullptr;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *H) {
  ENTRY("hsa_queue_destroy");
  NEED_INIT();
  Queue *Q = queueOf(H);
  if (!Q)
    return ST_INVALID_QUEUE;
  // The worker signals completion before it retires the packet (advances the
  // read index), so give announced packets a moment to retire.
  g().Wake.waitUntil([&] { return Q->Read.load() >= Q->Rung.load(); }, 1000000000ull);
  uint64_t W = Q->Write.load(), R = Q->Read.load();
  if (R < W)
    opViolation("B: hsa_queue_destroy of queue %llu with %llu packet(s) not processed",
                (unsigned long long)Q->Id, (unsigned long long)(W - R));
  Q->Work.requestStop(g().Wake);
  Q->Work.join();
  std::lock_guard<std::mutex> G(g().Mtx);
  Q->Destroyed = true;
  Q->Doorbell->Destroyed = true;
  g().LiveSignals--;
  for (auto &KV : Q->Launches)
    for (auto *M : {&g().InflightKle, &g().InflightCnt, &g().InflightKernarg})
      for (auto It = M->begin(); It != M->end();)
        It = It->second == KV.second->N ? M->erase(It) : std::next(It);
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *H) {
  ENTRY_VOID("hsa_queue_load_read_index_scacquire");
  Queue *Q = queueOf(H);
  if (!Q) {
    opViolation("hsa_queue_load_read_index_scacquire on an unknown queue %p", (const void *)H);
    return 0;
  }
  return Q->Read.load();
}

EXPORT uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t *H, uint64_t V) {
  ENTRY_VOID("hsa_queue_add_write_index_relaxed");
  Queue *Q = queueOf(H);
  if (!Q) {
    opViolation("hsa_queue_add_write_index_relaxed on an unknown queue %p", (const void *)H);
    return 0;
  }
  return Q->Write.fetch_add(V);
}

EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t Cb,
                                                          void *Data) {
  ENTRY("hsa_amd_register_system_event_handler");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  g().EventCb = Cb;
  g().EventData = Data;
  return HSA_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Exports: code objects and executables
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void *Image, size_t Size,
                                                              hsa_code_object_reader_t *Out) {
  ENTRY("hsa_code_object_reader_create_from_memory");
  NEED_INIT();
  if (!Image || !Size || !Out)
    return ST_INVALID_ARGUMENT;
  auto *R = new Reader{static_cast<const uint8_t *>(Image), Size};
  std::lock_guard<std::mutex> G(g().Mtx);
  g().Readers.insert(reinterpret_cast<uint64_t>(R));
  Out->handle = reinterpret_cast<uint64_t>(R);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t H) {
  ENTRY("hsa_code_object_reader_destroy");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  if (!g().Readers.erase(H.handle))
    return ST_INVALID_CODE_OBJECT_READER;
  delete reinterpret_cast<Reader *>(H.handle);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t Profile,
                                              hsa_default_float_rounding_mode_t Mode,
                                              const char *Options, hsa_executable_t *Out) {
  ENTRY("hsa_executable_create_alt");
  NEED_INIT();
  if (!Out)
    return ST_INVALID_ARGUMENT;
  auto *X = new Executable();
  std::lock_guard<std::mutex> G(g().Mtx);
  X->Id = g().NextExe++;
  g().Exes.insert(X);
  Out->handle = reinterpret_cast<uint64_t>(X);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t E, hsa_agent_t A,
                                                          hsa_code_object_reader_t R,
                                                          const char *Options,
                                                          hsa_loaded_code_object_t *Loaded) {
  ENTRY("hsa_executable_load_agent_code_object");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X || X->Frozen || X->Seg)
    return ST_INVALID_EXECUTABLE;
  if (A.handle != GPU_AGENT)
    return ST_INVALID_AGENT;
  Reader *Rd;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    if (!g().Readers.count(R.handle))
      return ST_INVALID_CODE_OBJECT_READER;
    Rd = reinterpret_cast<Reader *>(R.handle);
  }
  hsa_status_t S = loadElf(*X, *Rd);
  if (S == HSA_STATUS_SUCCESS && Loaded)
    Loaded->handle = reinterpret_cast<uint64_t>(X);
  return S;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t E, const char *Options) {
  ENTRY("hsa_executable_freeze");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  X->Frozen = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_validate(hsa_executable_t E, uint32_t *Result) {
  ENTRY("hsa_executable_validate");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Result)
    return ST_INVALID_ARGUMENT;
  *Result = X->Seg ? 0 : 1;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t E) {
  ENTRY("hsa_executable_destroy");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
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
      if (KV.second->K && KV.second->K->Exe == X)
        violation(KV.second->N, "B: hsa_executable_destroy while this dispatch of %s is pending",
                  KV.second->K->Name.c_str());
  }
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    X->Destroyed = true;
  }
  if (X->Seg)
    mem().release(X->Seg);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t E, const char *Name,
                                                      const hsa_agent_t *Agent,
                                                      hsa_executable_symbol_t *Out) {
  ENTRY("hsa_executable_get_symbol_by_name");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Name || !Out)
    return ST_INVALID_ARGUMENT;
  for (Symbol *Y : X->Syms)
    if (Y->Name == Name) {
      Out->handle = reinterpret_cast<uint64_t>(Y);
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t H,
                                                   hsa_executable_symbol_info_t Attr, void *V) {
  ENTRY("hsa_executable_symbol_get_info");
  NEED_INIT();
  Symbol *Y = symOf(H);
  if (!Y)
    return ST_INVALID_ARGUMENT;
  if (!V)
    return ST_INVALID_ARGUMENT;
  switch (Attr) {
  case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
    *static_cast<hsa_symbol_kind_t *>(V) = Y->IsKernel ? HSA_SYMBOL_KIND_KERNEL : HSA_SYMBOL_KIND_VARIABLE;
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
    *static_cast<uint32_t *>(V) = uint32_t(Y->Name.size());
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
    memcpy(V, Y->Name.data(), Y->Name.size());
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS:
    if (Y->IsKernel) break;
    *static_cast<uint64_t *>(V) = Y->Addr;
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
    if (Y->IsKernel) break;
    *static_cast<uint32_t *>(V) = Y->Size;
    return HSA_STATUS_SUCCESS;
  default:
    break;
  }
  if (!Y->IsKernel)
    return ST_INVALID_ARGUMENT;
  switch (Attr) {
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: *static_cast<uint64_t *>(V) = Y->Addr; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->KernargSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->GroupSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->PrivateSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: *static_cast<bool *>(V) = Y->K->DynStack; break;
  default: return ST_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_iterate_symbols(
    hsa_executable_t E, hsa_status_t (*Cb)(hsa_executable_t, hsa_executable_symbol_t, void *),
    void *D) {
  ENTRY("hsa_executable_iterate_symbols");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  for (Symbol *Y : X->Syms) {
    hsa_status_t S = Cb(E, hsa_executable_symbol_t{reinterpret_cast<uint64_t>(Y)}, D);
    if (S != HSA_STATUS_SUCCESS)
      return S;
  }
  return HSA_STATUS_SUCCESS;
}

// Resolved by the plugin, never called: they exist and fail clearly.
EXPORT hsa_status_t hsa_executable_create(hsa_profile_t, hsa_executable_state_t, const char *,
                                          hsa_executable_t *) {
  ENTRY("hsa_executable_create");
  say("hsa_executable_create is not modelled (the plugin uses hsa_executable_create_alt)");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_code_object_deserialize(void *, size_t, const char *, hsa_code_object_t *) {
  ENTRY("hsa_code_object_deserialize");
  say("hsa_code_object_deserialize is not modelled");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_executable_load_code_object(hsa_executable_t, hsa_agent_t,
                                                    hsa_code_object_t, const char *) {
  ENTRY("hsa_executable_load_code_object");
  say("hsa_executable_load_code_object is not modelled");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_code_object_destroy(hsa_code_object_t) {
  ENTRY("hsa_code_object_destroy");
  say("hsa_code_object_destroy is not modelled");
  return HSA_STATUS_ERROR;
}
