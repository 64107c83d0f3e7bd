//===- cuda_front.h - State shared by the CUDA stand-in's files -*- C++ -*-===//
//
// TEST ONLY.  The CUDA front of the CPU driver stand-ins (a fake
// libcuda.so.1, see README.md) is split by API area: cuda_front.cpp
// (configuration, handles, the library's reports and exit), cuda_context.cpp
// (init, devices, contexts), cuda_memory.cpp (allocations, copies, memsets),
// cuda_module.cpp (cubins, globals, functions), cuda_stream.cpp (streams,
// their workers, events, host callbacks, waits), cuda_launch.cpp
// (cuLaunchKernel) and kle_contract_cuda.cpp (the KLE checks).  This header
// holds what they share: the driver objects, the global state, the entry
// macros and the helpers each area offers the others.
//
// The shared stand-in core (../core) holds the configuration every stand-in
// shares, the output lines, the violation count and the exit status it
// forces, fault injection, the calls per entry point, the memory table and
// the workers' delays, wake-up, stop and join.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_CUDA_FRONT_H
#define KLE_STANDIN_CUDA_FRONT_H

#include <cstddef>
#include <cstdint>

// The plugin's own header: the exported symbols are type-checked against
// exactly the prototypes the plugin calls through.  The header has C++
// linkage declarations; wrap it so our definitions are extern "C".
extern "C" {
#include "cuda.h"
// The fork's KLE layout, as the DeviceRTL decodes it (overlaid into the
// patched tree at offload/include/Shared/KLEAbi.h).
#include "Shared/KLEAbi.h"
}

#include "core.h"
#include "happens_before_cuda.h"
#include "kle_contract_cuda.h"
#include "planted.h"
#include "worker.h"
#include "fork.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#define EXPORT extern "C" __attribute__((visibility("default")))

// Result codes the plugin header does not define (values from the CUDA
// driver API documentation / toolkit cuda.h).
static constexpr CUresult R(int V) { return static_cast<CUresult>(V); }
static constexpr CUresult ERR_OUT_OF_MEMORY = R(2);
static constexpr CUresult ERR_NOT_INITIALIZED = R(3);
static constexpr CUresult ERR_INVALID_DEVICE = R(101);
static constexpr CUresult ERR_INVALID_IMAGE = R(200);
static constexpr CUresult ERR_INVALID_CONTEXT = R(201);
static constexpr CUresult ERR_NO_BINARY_FOR_GPU = R(209);
static constexpr CUresult ERR_PEER_ALREADY_ENABLED = R(704);
static constexpr CUresult ERR_NOT_SUPPORTED = R(801);

namespace cuda_standin {

//===----------------------------------------------------------------------===//
// Configuration (environment)
//===----------------------------------------------------------------------===//

// The CUDA front's own settings (KLE_CUDA_STANDIN_DEVICES, and the contract's
// _EXPECT, _KLE_SIZE, _KLE_LAYOUT); the shared ones (delays, faults, stats,
// exit status, verbose, seed) are the core's: standin::cfg().
struct Config {
  int NumDevices = 1;
  /// The devices' compute capability as sm_SM (KLE_CUDA_STANDIN_SM).
  int SM = 90;
  KleConfig Kle;
};

/// Reads the environment once (the core's variables and the front's own);
/// thread-safe.
Config &cfg();
/// The core's configuration, after cfg() has read the environment.
const standin::Config &core();

//===----------------------------------------------------------------------===//
// Global state.  Everything is heap allocated and never destroyed: the plugin
// calls into us from its own destructors, possibly after ours ran.
//===----------------------------------------------------------------------===//

enum class MemKind { Device = 0, Pinned = 1, Managed = 2, Module = 3 };
/// "device", "pinned-host", "managed" or "module-global".
const char *kindName(MemKind K);

struct Ctx;
struct Stream;
struct LaunchRec;

struct WriteRec {
  uintptr_t Lo, Hi;     // device-visible address range written
  Stream *S;            // nullptr: synchronous (host-ordered) write
  uint64_t Order;       // global enqueue order
  MemKind SrcKind;         // for staged: where the data came from
  bool SrcPageable;
};

// An allocation: a block of the core's memory table (address, size, backing
// store, freed flag; device memory in its PROT_NONE range) plus what the CUDA
// front tracks.  Block::Kind is the MemKind as an int (the core counts live
// and peak per kind).  Memory is returned when the last reference to a freed
// allocation goes away (ReturnOnDrop); addresses are never reused.
struct Alloc : standin::Block {
  MemKind K = MemKind::Device;
  Ctx *Owner = nullptr;
  std::string FreedBy;
  // Launches, Writes and KleWrites are kept by kle_contract_cuda.cpp.
  std::vector<LaunchRec *> Launches; // launches referencing this (g.Mtx)
  std::deque<WriteRec> Writes;       // recent writes (g.Mtx)
  // Start addresses of every KLE-sized write (16 bytes) ever made into this
  // allocation (g.Mtx): the resident check asks whether a slot's device KLE
  // was written at all, which the 16 most recent writes cannot tell once
  // other slots of the same slab were written since.
  std::set<uintptr_t> KleWrites;
  uint8_t *host(uintptr_t A) { return bytes(A); }
};
using AllocP = std::shared_ptr<Alloc>;

struct Module;
struct Func {
  Module *M = nullptr;
  std::string Name;
  struct Param { uint32_t Ordinal, Offset, Size; bool Ptr; };
  std::vector<Param> Params; // sorted by ordinal
  uint32_t ParamBytes = 0;
  int MaxThreads = 1024;
  int MaxDynShared = 0;
  bool HasKernelEnv = false;
  uint8_t ExecMode = 0;
  int32_t ReductionDataSize = 0, ReductionBufferLength = 0;
};

struct Module {
  Ctx *C = nullptr;
  std::map<std::string, Func *> Funcs;
  std::map<std::string, std::pair<uintptr_t, size_t>> Globals;
  std::vector<AllocP> Segments;
  bool Unloaded = false;
};

struct Op {
  uint64_t Seq = 0;
  const char *What = "";
  std::function<void(Op &)> Run;
  LaunchRec *Launch = nullptr;
  bool Done = false;
  bool Waits = false; ///< only waits (wait value, wait event): may run again
  std::shared_ptr<HbAccess> Hb; // the device bytes a copy or memset uses
};

struct Stream {
  Ctx *C = nullptr;
  uint64_t Id = 0;
  bool IsDefault = false;
  std::mutex M;
  /// Held by the worker from running an op (one that does more than wait)
  /// until it completed it, and by the fork's prepare: a fork never leaves a
  /// kernel, copy or callback half run, to be run again by the child.
  std::mutex RunM;
  standin::Waker Wake; // notified when an op is queued or completes
  standin::Worker Work;
  std::deque<std::shared_ptr<Op>> Q;
  uint64_t Enqueued = 0, Completed = 0;
  // Completion times (steady clock, ns) of the most recent operations, by
  // sequence number: what cuEventElapsedTime reads.
  std::deque<std::pair<uint64_t, uint64_t>> DoneNs;
  bool Destroyed = false;
  bool Exiting = false;
  std::mt19937_64 Rng; // its worker's delays
};

struct Event {
  std::mutex M;
  Stream *S = nullptr;
  uint64_t Seq = 0;
  uint64_t RecordNs = 0; // when recorded; its time if the stream was idle
  bool Recorded = false;
};

using standin::nowNs; // steady clock, ns

struct Ctx {
  int Dev = 0;
  bool Primary = true;
  int Ref = 0;
  bool Alive = true;
  unsigned Flags = 0;
  Stream *Default = nullptr;
  std::vector<Stream *> Streams; // g.Mtx
  size_t Limits[8] = {1024, 1 << 20, 8 << 20, 2, 2048, 64, 0, 0};
  std::set<int> PeerEnabled;
};

struct LaunchRec {
  uint64_t Index = 0;
  Func *F = nullptr;
  Stream *S = nullptr;
  std::vector<uint8_t> Params;
  uintptr_t Dyn = 0;      // the KLE's address: dyn_ptr without its host flag
  bool HostFlag = false;  // dyn_ptr's host flag (Shared/KLEAbi.h)
  bool HasKle = false;
  // From here on: kept by kle_contract_cuda.cpp.
  AllocP KleAlloc;
  std::vector<uint8_t> Expected; // bytes the kernel must see
  bool Completed = false;
  bool ReportedFree = false;
  bool ReportedBytes = false;
  AllocP RedAlloc;
  std::shared_ptr<HbLaunch> Hb; // happens_before_cuda.cpp
};

using standin::EntryStat;

struct Global {
  std::mutex Mtx; // memory table, handles, launches, contexts
  bool Initialized = false;
  std::unordered_map<void *, int> Handles; // object -> kind tag
  std::vector<Ctx *> PrimaryCtx;           // per device (current incarnation)
  std::vector<unsigned> DevFlags;          // primary context flags per device
  std::atomic<uint64_t> OpErrors{0};
  std::atomic<uint64_t> WriteOrder{0};
  std::atomic<uint64_t> StreamIds{0};
  std::atomic<bool> Exiting{false};
  std::atomic<bool> ModuleLoaded{false}; // a cuModuleLoadData* succeeded
};

/// The global state (never destroyed).
Global &g();

enum HandleTag { H_CTX = 1, H_STREAM, H_EVENT, H_MODULE, H_FUNC };

/// The calling thread's current context (cuCtxSetCurrent).
extern thread_local Ctx *CurrentCtx;

//===----------------------------------------------------------------------===//
// Output helpers
//===----------------------------------------------------------------------===//

// The core's: "kle-standin: <text>", "kle-standin: VIOLATION launch #<n>:
// <text>", "kle-standin: VIOLATION op: <text>" (counted like launch
// violations); KLE contract violations add "<id> <name>: " to <text>
// (../core/kle_contract.h).
using standin::hex;
using standin::opViolation;
using standin::say;
using standin::violation;

//===----------------------------------------------------------------------===//
// Entry accounting and fault injection
//===----------------------------------------------------------------------===//

// Calls per entry point and fault injection are the core's; the injected
// value is a CUresult.
using standin::registerEntry;
inline CUresult enterCuda(EntryStat &E) { return R(standin::enter(E)); }

#define ENTRY(NAME)                                                            \
  static cuda_standin::EntryStat *ES__ =                                       \
      cuda_standin::registerEntry(NAME);                                       \
  if (CUresult Inj__ = cuda_standin::enterCuda(*ES__))                         \
  return Inj__

#define NEED_INIT()                                                            \
  do {                                                                         \
    if (!cuda_standin::g().Initialized)                                        \
      return ERR_NOT_INITIALIZED;                                              \
  } while (0)

#define NEED_CTX()                                                             \
  do {                                                                         \
    NEED_INIT();                                                               \
    if (!cuda_standin::CurrentCtx ||                                           \
        !cuda_standin::isHandle(cuda_standin::CurrentCtx,                      \
                                cuda_standin::H_CTX))                          \
      return ERR_INVALID_CONTEXT;                                              \
  } while (0)

/// True if \p P is a live handle of kind \p Tag.  Takes g().Mtx.
bool isHandle(void *P, int Tag);
/// Registers / forgets a handle.  Take g().Mtx.
void addHandle(void *P, int Tag);
void dropHandle(void *P);

//===----------------------------------------------------------------------===//
// Memory (cuda_memory.cpp)
//===----------------------------------------------------------------------===//

static constexpr size_t kTotalMem = size_t(80) << 30; // H100 SXM 80 GB

/// Live device and module-global bytes.
size_t liveDeviceBytes();
/// A new allocation of \p Size bytes (0: CUDA_ERROR_INVALID_VALUE; beyond
/// kTotalMem: ERR_OUT_OF_MEMORY).  Caller holds g().Mtx.
CUresult newAllocLocked(MemKind K, size_t Size, Ctx *Owner, AllocP &Out);
inline AllocP asAlloc(const standin::BlockP &B) {
  return std::static_pointer_cast<Alloc>(B);
}
/// The live allocation containing [P, P+N), or null.  The Locked form needs
/// g().Mtx held; the other takes it.
AllocP resolveLocked(uintptr_t P, size_t N);
AllocP resolve(uintptr_t P, size_t N);
/// True if \p P is in the PROT_NONE device range (live or not).
bool inDeviceRange(uintptr_t P);
/// Releases \p A (By names the releaser in messages); reports pending
/// launches that still use it.  Caller holds g().Mtx.
void releaseLocked(const AllocP &A, const char *By);

//===----------------------------------------------------------------------===//
// Streams (cuda_stream.cpp)
//===----------------------------------------------------------------------===//

/// A stream of \p C with its worker thread, registered as a handle; null
/// when no thread could be started (the caller reports out of memory).
Stream *newStream(Ctx *C, bool IsDefault);
/// Queues \p O on \p S; returns its sequence number.
uint64_t enqueue(Stream *S, std::shared_ptr<Op> O);
/// Blocks until operation \p Seq of \p S completed / until \p S is empty.
void waitFor(Stream *S, uint64_t Seq);
/// The same as waitFor, polling (yielding the core), never sleeping.
void pollFor(Stream *S, uint64_t Seq);
void drain(Stream *S);
/// Maps a CUstream argument to a stream of the current context; null (with
/// \p Err set) for a bad handle or no context.
Stream *streamArg(CUstream H, CUresult &Err);
/// After a write executed on stream \p S by op \p Self: launches queued
/// behind it on the same stream must see the delivered bytes.
void patchQueuedLaunches(Stream *S, Op &Self, Alloc &Dst, uintptr_t Lo,
                         size_t N, bool SrcChanged, uintptr_t SrcAddr);
/// Stops and joins every stream worker (library unload).
void stopStreamWorkers();
/// Fork safety (../core/fork.h): the streams' and the global locks and wake-up
/// channels; in the child, a new worker for every stream.
void forkCollect(std::vector<std::mutex *> &Locks, std::vector<standin::Waker *> &Wakers);
void forkChild();
bool forkCurrent();

/// The host waits that wait in the driver when the work is not yet
/// complete: under CU_CTX_SCHED_BLOCKING_SYNC they sleep and each pays the
/// planted wake-up (KLE_STANDIN_WAKEUP_US); under spin, yield and auto
/// scheduling they poll.  cuStreamQuery and cuEventQuery never wait.
enum WaitKind {
  W_STREAM_SYNC,  ///< cuStreamSynchronize
  W_EVENT_SYNC,   ///< cuEventSynchronize
  W_CTX_SYNC,     ///< cuCtxSynchronize
  W_COPY_BACK,    ///< cuMemcpyDtoHAsync into pageable memory
  W_SYNC_COPY,    ///< cuMemcpy{HtoD,DtoH,DtoD} behind the default stream
  W_NUM_KINDS
};
/// Blocks until every operation {S, Seq} names has completed.  If one was
/// still pending at the call and \p C is scheduled CU_CTX_SCHED_BLOCKING_SYNC,
/// the wait sleeps: it is counted under \p K and returns only after the
/// planted wake-up, counted from the last completion (one per call).  Under
/// spin, yield and auto scheduling it polls, yielding the core, and is
/// counted as polled.
void sleepingWait(Ctx *C, const std::vector<std::pair<Stream *, uint64_t>> &Ops,
                  WaitKind K);
/// Counts a device-to-host copy by the kind of its destination.
void countCopyBack(bool Pageable);
/// "kle-standin: waits ..." lines (STATS=1), when changed since the last.
void waitReport();

//===----------------------------------------------------------------------===//
// Contexts and reports (cuda_context.cpp, cuda_front.cpp)
//===----------------------------------------------------------------------===//

/// A new context with its default stream, registered as a handle; null when
/// no thread could be started for that stream.
Ctx *newCtx(int Dev, bool Primary);
/// Drains, reports and destroys \p C (Why names the caller in the report).
void destroyCtx(Ctx *C, const char *Why);
/// The live/peak/launches lines for \p Only (null: every context).
void liveReport(const char *At, Ctx *Only);
/// "kle-standin: calls <exported name>=<n>" (the core's, by exported name).
void statsReport();
/// True while a primary context is retained or a created one is alive.
bool anyCtxAlive();
/// Final report; if violations happened the process exit status is forced
/// to KLE_STANDIN_EXIT_CODE (97) with _exit().
void finalReport(const char *At);

} // namespace cuda_standin

#endif // KLE_STANDIN_CUDA_FRONT_H
