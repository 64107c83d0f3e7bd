//===- hsa_front.h - HSA stand-in front: shared state and types -----------===//
//
// TEST ONLY.  What every file of the HSA front shares: the agents, pools and
// memory kinds it models, the handle types (signals, queues, executables,
// copies, async handlers), the global state g(), configuration, the entry
// accounting macros and the helpers the API areas call across files.  The KLE
// contract checks are in kle_contract_hsa.h.
//
// Locking: g().Mtx guards the handle tables, the in-flight maps and the copy
// and handler lists; a queue's M is taken before g().Mtx, never after.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_HSA_FRONT_H
#define KLE_HSA_FRONT_H

#include "hsa.h"
#include "hsa_ext_amd.h"

#include "../core/core.h"
#include "../core/worker.h"
#include "../core/fork.h"

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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

namespace hsafront {

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
const char *kindName(int K);
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
  bool Inherited = false;             ///< live at a fork, in the child
  /// COPY_START=observed: a queued copy that completes this signal has not
  /// started its delay (set and cleared under g().Mtx).
  std::atomic<bool> HoldsCopy{false};
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

struct Launch; // one dispatch, as the KLE contract records it (kle_contract_hsa.h)

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
  /// Held by the worker from taking up a packet (a barrier-AND once its
  /// dependences are met) until it retired it, and by the fork's prepare: a
  /// fork never leaves a packet half run (its launch record taken or its
  /// signal decremented, the read index not yet advanced).
  std::mutex RunM;
  std::map<uint64_t, std::shared_ptr<Launch>> Launches;
  standin::Worker Work; ///< runs the packets in order (queueWorker)
  bool Destroyed = false;
  bool Inherited = false; ///< live at a fork, in the child
  /// In the child: packets a parent thread had reserved (write index) but
  /// not announced at the fork, from index RungAtFork; the parent's, never
  /// run here.
  uint64_t RungAtFork = 0, UnannouncedAtFork = 0;
};

struct Copy {
  uint64_t Op = 0;
  uintptr_t Dst = 0, Src = 0;
  size_t N = 0;
  BlockP DstB, SrcB; ///< null for pageable host memory (a violation)
  std::vector<Signal *> Deps;
  Signal *Done = nullptr;
  uint64_t ReadyNs = 0;
  bool Held = false; ///< COPY_START=observed: delay not started (ReadyNs ~0)
  standin::contract::SourceWatch SrcSnap;
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
  std::atomic<bool> CodeObjectLoaded{false}; ///< a load succeeded
  std::unordered_map<uint64_t, Signal *> Signals;
  std::atomic<uint64_t> NextSignal{1};
  size_t LiveSignals = 0, PeakSignals = 0;
  size_t InheritedSignals = 0; ///< of LiveSignals, live since a fork (child)
  std::set<Queue *> Queues;
  uint64_t NextQueue = 1;
  std::set<Executable *> Exes;
  uint64_t NextExe = 1;
  std::set<uint64_t> Readers;
  std::unordered_map<uint64_t, Kernel *> Kernels; // kernel_object -> kernel
  std::unordered_set<Symbol *> Syms;
  std::list<std::shared_ptr<Copy>> Copies; // not yet executed
  /// Held by the DMA worker from picking a copy until it completed, and by
  /// the fork's prepare: a fork never leaves a copy half run (taken off
  /// Copies, its signal not yet decremented) with no thread to finish it.
  std::mutex CopyRunMtx;
  uint64_t NextOp = 1;
  std::list<Handler> Handlers;
  size_t HandlersRunning = 0;
  /// Held by the handler thread from taking handlers off Handlers until
  /// their callbacks returned, and by the fork's prepare: a fork never
  /// leaves a callback taken but not run (the plugin's callbacks decrement
  /// the signals later work waits for).
  std::mutex HandlerRunMtx;
  hsa_amd_system_event_callback_t EventCb = nullptr;
  void *EventData = nullptr;
  // Every signal change notifies this (one channel, as a command processor
  // would poll every signal); waitUntil re-checks at least every 2 ms.
  standin::Waker Wake{2000000};
  std::atomic<uint64_t> HostEpoch{0};
  bool ThreadsStarted = false;
  uint64_t WatchdogS = 60;
  /// COPY_START=observed: a copy's delay starts when its completion signal
  /// is first observed (startHeldCopy), not when it is queued.
  bool CopyStartObserved = false;
};

/// The front's state: heap allocated on first use, never destroyed.
Global &g();

/// The configuration (core init on first use: also installs the exit
/// handlers and the SIGSEGV note).
const Config &conf();

/// The text of status \p S, or null when the stand-in does not name it.
const char *statusText(hsa_status_t S);

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

/// The signal of handle \p H, or null when unknown (or destroyed, unless
/// \p AllowDestroyed).  Takes g().Mtx.
Signal *sigOf(hsa_signal_t H, bool AllowDestroyed = false);
/// Subtracts \p V from \p S and wakes every waiter.
void sigSub(Signal *S, int64_t V);
/// Creates a signal with value \p Init; ST_INVALID_ARGUMENT if !Out.
hsa_status_t newSignal(int64_t Init, hsa_signal_t *Out);
/// Whether value \p V satisfies condition \p C against \p X.
bool condHolds(hsa_signal_condition_t C, int64_t V, int64_t X);

/// COPY_START=observed: starts the delay of the queued copy that completes
/// \p S, if it has not started; a no-op otherwise.  startHeldCopyLocked
/// needs g().Mtx held and notifies no waiter.
void startHeldCopy(Signal *S);
void startHeldCopyLocked(Signal *S);

/// The DMA engine and async-handler threads (started once, by hsa_init).
void startThreads();
void dmaWorker();
void handlerWorker();
/// Installs the SIGSEGV note for faults inside the program's async handlers.
void installSegvNote();
/// Fork safety (../core/fork.h): the global and the queues' locks and the
/// wake-up channel; in the child, its own DMA engine, handler thread and
/// queue workers.
void forkCollect(std::vector<std::mutex *> &Locks, std::vector<standin::Waker *> &Wakers);
void forkChild();
bool forkCurrent();
/// Says which copies and queues have work not yet run, and the signals
/// their first item waits for.
void sayPending();

/// The doorbell of queue \p Q was set to \p Value: records the packets up
/// to it and wakes the queue's worker.
void doorbellHook(Queue &Q, int64_t Value);

/// The "live" and "peak" lines at \p At.
void liveReport(const char *At);
/// liveReport at exit, if the runtime was initialized.
void finalReport(const char *Where);

bool validAgent(hsa_agent_t A);
/// GPU agents modelled: 0 or 1 (KLE_HSA_STANDIN_DEVICES).
int gpuCount();
/// Host view of [P, P+N): a live block (device bytes via the backing store),
/// or nullptr for memory the stand-in does not know (pageable).
BlockP blockFor(uintptr_t P, size_t N);

} // namespace hsafront

#endif // KLE_HSA_FRONT_H
