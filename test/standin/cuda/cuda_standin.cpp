//===- standin.cpp - CPU stand-in for the CUDA driver (TEST ONLY) ---------===//
//
// A fake libcuda.so.1 for CI without a GPU.  It implements the driver entry
// points that the upstream CUDA plugin (offload/plugins-nextgen/cuda, dlopen
// mode, dynamic_cuda/cuda.cpp) resolves, with driver-like semantics, and it
// checks the kernel-launch-environment (KLE / dyn_ptr) contract on every
// kernel launch.  Kernels compute nothing.  See README.md for the
// environment variables and the exact list of checks.
//
// This is the CUDA front over the shared stand-in core (../core): the core
// holds the configuration every stand-in shares, the output lines, the
// violation count and the exit status it forces, fault injection, the calls
// per entry point and the workers' delays, wake-up, stop and join; this file
// holds the driver API and how it maps onto the core (contexts, streams and
// the order their workers run operations in, the memory table, cubins, the
// KLE checks).
//
// NEVER install this library.  The CMake project has no install() rule.
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>

// The plugin's own header: the exported symbols below are type-checked
// against exactly the prototypes the plugin calls through.  The header has
// C++ linkage declarations; wrap it so our definitions are extern "C".
extern "C" {
#include "cuda.h"
// The fork's KLE layout, as the DeviceRTL decodes it (overlaid into the
// patched tree at offload/include/Shared/KLEAbi.h).
#include "Shared/KLEAbi.h"
}

#include <gelf.h>
#include <libelf.h>

#include "core.h"
#include "planted.h"
#include "worker.h"

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

#include <sys/mman.h>
#include <unistd.h>

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

namespace {

//===----------------------------------------------------------------------===//
// Configuration (environment)
//===----------------------------------------------------------------------===//

enum class Expect { Any, ZeroCopy, Copy, Staged, Resident };

// The CUDA front's own settings (KLE_STANDIN_DEVICES, _EXPECT, _KLE_SIZE,
// _KLE_LAYOUT); the shared ones (delays, faults, stats, exit status, verbose,
// seed) are the core's: standin::cfg().
struct Config {
  int NumDevices = 1;
  Expect Mode = Expect::Any;
  size_t KleSize = 16;                  // LLVM 22 KernelLaunchEnvironmentTy
  bool Llvm22Layout = true;             // check KLE.ReductionBuffer at +8
};

Config &cfg();

//===----------------------------------------------------------------------===//
// Global state.  Everything is heap allocated and never destroyed: the plugin
// calls into us from its own destructors, possibly after ours ran.
//===----------------------------------------------------------------------===//

enum class MemKind { Device = 0, Pinned = 1, Managed = 2, Module = 3 };
static const char *kindName(MemKind K) {
  switch (K) {
  case MemKind::Device: return "device";
  case MemKind::Pinned: return "pinned-host";
  case MemKind::Managed: return "managed";
  case MemKind::Module: return "module-global";
  }
  return "?";
}

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
};

struct Stream {
  Ctx *C = nullptr;
  uint64_t Id = 0;
  bool IsDefault = false;
  std::mutex M;
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
  uintptr_t Dyn = 0;
  bool HasKle = false;
  AllocP KleAlloc;
  std::vector<uint8_t> Expected; // bytes the kernel must see
  bool Completed = false;
  bool ReportedFree = false;
  bool ReportedBytes = false;
  AllocP RedAlloc;
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
};

Global &g() {
  static Global *G = new Global();
  return *G;
}

enum HandleTag { H_CTX = 1, H_STREAM, H_EVENT, H_MODULE, H_FUNC };

thread_local Ctx *CurrentCtx = nullptr;

//===----------------------------------------------------------------------===//
// Output helpers
//===----------------------------------------------------------------------===//

// The core's: "kle-standin: <text>", "kle-standin: VIOLATION launch #<n>:
// <text>", "kle-standin: VIOLATION op: <text>" (counted like launch
// violations).
using standin::hex;
using standin::opViolation;
using standin::say;
using standin::violation;

//===----------------------------------------------------------------------===//
// Configuration parsing
//===----------------------------------------------------------------------===//

bool parseResult(const std::string &S, int &Out) {
  static const std::map<std::string, int> Names = {
      {"CUDA_ERROR_INVALID_VALUE", 1},     {"CUDA_ERROR_OUT_OF_MEMORY", 2},
      {"CUDA_ERROR_NOT_INITIALIZED", 3},   {"CUDA_ERROR_NO_DEVICE", 100},
      {"CUDA_ERROR_INVALID_DEVICE", 101},  {"CUDA_ERROR_INVALID_IMAGE", 200},
      {"CUDA_ERROR_INVALID_CONTEXT", 201}, {"CUDA_ERROR_INVALID_HANDLE", 400},
      {"CUDA_ERROR_NOT_FOUND", 500},       {"CUDA_ERROR_NOT_READY", 600},
      {"CUDA_ERROR_ILLEGAL_ADDRESS", 700},
      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 701},
      {"CUDA_ERROR_LAUNCH_FAILED", 719},   {"CUDA_ERROR_NOT_SUPPORTED", 801},
      {"CUDA_ERROR_UNKNOWN", 999}};
  auto It = Names.find(S);
  if (It != Names.end()) {
    Out = It->second;
    return true;
  }
  char *End = nullptr;
  long V = strtol(S.c_str(), &End, 0);
  if (S.empty() || *End || V < 0 || V > 0x7fffffff)
    return false;
  Out = int(V);
  return true;
}

std::string baseName(const std::string &Name) {
  std::string N = Name;
  for (const char *Suf : {"_v2", "_v3", "_v4", "_ptds", "_ptsz"}) {
    size_t L = strlen(Suf);
    if (N.size() > L && N.compare(N.size() - L, L, Suf) == 0)
      N.resize(N.size() - L);
  }
  return N;
}

// Reads the environment once: the core's variables (KLE_STANDIN_DELAY_US,
// _KERNEL_US, _EXPECT, _FAIL, _STATS, _STATS_FILE, _EXIT_CODE, _VERBOSE,
// _SEED) and the front's own.
Config &cfg() {
  static Config *C = [] {
    const standin::Config &Core =
        standin::init("kle-standin", "KLE_STANDIN_", parseResult, baseName);
    standin::setStatsNames(standin::StatsNames::Exported);
    standin::plantedInit(); // COPY_US, SYNC_NOISE (malformed: exit 2)
    Config *C = new Config();
    C->NumDevices = standin::deviceCount(1, 64); // DEVICES (bad: exit 2)
    if (Core.Expect == "zerocopy") C->Mode = Expect::ZeroCopy;
    else if (Core.Expect == "copy") C->Mode = Expect::Copy;
    else if (Core.Expect == "staged") C->Mode = Expect::Staged;
    else if (Core.Expect == "resident") C->Mode = Expect::Resident;
    else C->Mode = Expect::Any;
    if (const char *E = standin::env("KLE_SIZE"))
      C->KleSize = std::max<size_t>(1, strtoull(E, nullptr, 0));
    if (const char *E = standin::env("KLE_LAYOUT"))
      C->Llvm22Layout = std::string(E) == "llvm22";
    return C;
  }();
  return *C;
}

const standin::Config &core() {
  (void)cfg();
  return standin::cfg();
}

//===----------------------------------------------------------------------===//
// Entry accounting and fault injection
//===----------------------------------------------------------------------===//

// Calls per entry point and fault injection are the core's; the injected
// value is a CUresult.
using standin::registerEntry;
CUresult enterCuda(EntryStat &E) { return R(standin::enter(E)); }

#define ENTRY(NAME)                                                            \
  static EntryStat *ES__ = registerEntry(NAME);                                \
  if (CUresult Inj__ = enterCuda(*ES__))                                         \
  return Inj__

#define NEED_INIT()                                                            \
  do {                                                                         \
    if (!g().Initialized)                                                      \
      return ERR_NOT_INITIALIZED;                                              \
  } while (0)

#define NEED_CTX()                                                             \
  do {                                                                         \
    NEED_INIT();                                                               \
    if (!CurrentCtx || !isHandle(CurrentCtx, H_CTX))                           \
      return ERR_INVALID_CONTEXT;                                              \
  } while (0)

bool isHandle(void *P, int Tag) {
  std::lock_guard<std::mutex> L(g().Mtx);
  auto It = g().Handles.find(P);
  return It != g().Handles.end() && It->second == Tag;
}
void addHandle(void *P, int Tag) {
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles[P] = Tag;
}
void dropHandle(void *P) {
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles.erase(P);
}

//===----------------------------------------------------------------------===//
// Memory: the core's table (standin::mem()).  Device memory lives in its
// PROT_NONE range (device pointers are not dereferenceable on the host) with
// a separate backing store; pinned/managed memory is host memory.  Device
// addresses are 512-byte granules with a granule of gap.  Small device
// allocations are poisoned with 0xA5 (real device memory is uninitialised);
// host and large (>= 1 MiB) device allocations read 0.  Addresses are never
// reused, so stale pointers are always recognised.
//===----------------------------------------------------------------------===//

static constexpr size_t kTotalMem = size_t(80) << 30; // H100 SXM 80 GB

size_t liveDeviceBytes() {
  size_t LN[standin::MaxKinds], LB[standin::MaxKinds], PN[standin::MaxKinds],
      PB[standin::MaxKinds];
  standin::mem().counts(LN, LB, PN, PB);
  return LB[int(MemKind::Device)] + LB[int(MemKind::Module)];
}

// Caller holds g().Mtx.
CUresult newAllocLocked(MemKind K, size_t Size, Ctx *Owner, AllocP &Out) {
  if (Size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  bool Dev = K == MemKind::Device || K == MemKind::Module;
  if (Dev) {
    size_t Used = liveDeviceBytes();
    if (Size > kTotalMem || Used + Size > kTotalMem)
      return ERR_OUT_OF_MEMORY;
  }
  auto A = std::make_shared<Alloc>();
  A->K = K;
  A->Owner = Owner;
  int Poison = Dev && Size < (size_t(1) << 20) ? 0xA5 : -1;
  if (!standin::mem().allocate(int(K), Size, Dev, Poison, /*Counted=*/true, A,
                               /*DevGranule=*/512, /*ReturnOnDrop=*/true))
    return ERR_OUT_OF_MEMORY;
  Out = A;
  return CUDA_SUCCESS;
}

AllocP asAlloc(const standin::BlockP &B) {
  return std::static_pointer_cast<Alloc>(B);
}

// Caller holds g().Mtx.  Finds the allocation containing [P, P+N).
// cuLaunchKernel's snapshot of device memory at dyn_ptr: deliberately not
// seen by ThreadSanitizer (a volatile byte loop, so no memcpy interceptor).
__attribute__((no_sanitize("thread"))) void
snapshotDeviceBytes(void *Dst, const void *Src, size_t N) {
  auto *D = static_cast<volatile unsigned char *>(Dst);
  auto *S = static_cast<const volatile unsigned char *>(Src);
  for (size_t I = 0; I < N; ++I)
    D[I] = S[I];
}

AllocP resolveLocked(uintptr_t P, size_t N) {
  return asAlloc(standin::mem().resolve(P, N));
}

AllocP resolve(uintptr_t P, size_t N) {
  std::lock_guard<std::mutex> L(g().Mtx);
  return resolveLocked(P, N);
}

bool inDeviceRange(uintptr_t P) { return standin::mem().inDeviceRange(P); }

// Caller holds g().Mtx.
void releaseLocked(const AllocP &A, const char *By) {
  A->FreedBy = By;
  standin::mem().release(A);
  for (LaunchRec *LR : A->Launches) {
    if (LR->Completed || LR->ReportedFree)
      continue;
    LR->ReportedFree = true;
    violation(LR->Index,
              "kernel '%s': %s memory %#llx (dyn_ptr %#llx) released by %s "
              "while the launch was still pending on stream %llu "
              "(queued or running)",
              LR->F->Name.c_str(), kindName(A->K), (unsigned long long)A->Addr,
              (unsigned long long)LR->Dyn, By,
              (unsigned long long)LR->S->Id);
  }
}

void recordWriteLocked(Alloc &A, uintptr_t Lo, size_t N, Stream *S,
                       MemKind SrcKind, bool SrcPageable) {
  WriteRec W{Lo, Lo + N, S, ++g().WriteOrder, SrcKind, SrcPageable};
  A.Writes.push_back(W);
  if (N == kle::KLESize)
    A.KleWrites.insert(Lo);
  if (A.Writes.size() > 16)
    A.Writes.pop_front();
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

// Every stream (its worker thread), stopped and joined when the library is
// unloaded: a dlclose (the plugin unloads libcuda at deinit) must never unmap
// code a worker is still running. Leaked on purpose (outlives static
// destructors).
struct WorkerRegistryTy {
  std::mutex M;
  std::vector<Stream *> Streams;
};
WorkerRegistryTy &workers() {
  static auto *R = new WorkerRegistryTy();
  return *R;
}

// Runs the stream's ops in order, each after its random delay.
void streamWorker(Stream *S) {
  for (;;) {
    std::shared_ptr<Op> O;
    S->Wake.waitUntil([&] {
      std::lock_guard<std::mutex> L(S->M);
      if (!S->Q.empty() && !S->Work.stopping())
        O = S->Q.front();
      return O || S->Work.stopping();
    });
    if (!O)
      return; // stopped at library unload
    standin::sleepUs(standin::randomDelayUs(S->Rng));
    O->Run(*O);
    {
      std::lock_guard<std::mutex> L(S->M);
      O->Done = true;
      S->Q.pop_front();
      S->Completed = O->Seq;
      S->DoneNs.emplace_back(O->Seq, nowNs());
      if (S->DoneNs.size() > 4096)
        S->DoneNs.pop_front();
    }
    S->Wake.notify();
  }
}

Stream *newStream(Ctx *C, bool IsDefault) {
  auto *S = new Stream();
  S->C = C;
  S->IsDefault = IsDefault;
  S->Id = ++g().StreamIds;
  S->Rng.seed(core().Seed + S->Id * 7919);
  {
    std::lock_guard<std::mutex> L(workers().M);
    S->Work.start([S] { streamWorker(S); });
    workers().Streams.push_back(S);
  }
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    C->Streams.push_back(S);
  }
  addHandle(S, H_STREAM);
  return S;
}

uint64_t enqueue(Stream *S, std::shared_ptr<Op> O) {
  uint64_t Seq;
  {
    std::lock_guard<std::mutex> L(S->M);
    Seq = O->Seq = ++S->Enqueued;
    S->Q.push_back(std::move(O));
  }
  S->Wake.notify();
  return Seq;
}

void waitFor(Stream *S, uint64_t Seq) {
  S->Wake.waitUntil([&] {
    std::lock_guard<std::mutex> L(S->M);
    return S->Completed >= Seq;
  });
}

void drain(Stream *S) {
  uint64_t T;
  {
    std::lock_guard<std::mutex> L(S->M);
    T = S->Enqueued;
  }
  waitFor(S, T);
}

// Maps a CUstream argument to a stream of the current context.
Stream *streamArg(CUstream H, CUresult &Err) {
  Err = CUDA_SUCCESS;
  uintptr_t V = reinterpret_cast<uintptr_t>(H);
  if (V == 0 || V == 1 || V == 2) { // null, CU_STREAM_LEGACY, PER_THREAD
    if (!CurrentCtx || !isHandle(CurrentCtx, H_CTX)) {
      Err = ERR_INVALID_CONTEXT;
      return nullptr;
    }
    return CurrentCtx->Default;
  }
  if (!isHandle(H, H_STREAM)) {
    Err = CUDA_ERROR_INVALID_HANDLE;
    return nullptr;
  }
  return reinterpret_cast<Stream *>(H);
}

// After a write executed on stream S by op Self: launches queued behind it on
// the same stream must see the delivered bytes (check (a)).
void patchQueuedLaunches(Stream *S, Op &Self, Alloc &Dst, uintptr_t Lo,
                         size_t N, bool SrcChanged, uintptr_t SrcAddr) {
  std::lock_guard<std::mutex> L(S->M);
  bool After = false;
  for (auto &O : S->Q) {
    if (O.get() == &Self) {
      After = true;
      continue;
    }
    if (!After || !O->Launch || !O->Launch->HasKle)
      continue;
    LaunchRec &LR = *O->Launch;
    uintptr_t KLo = LR.Dyn, KHi = LR.Dyn + LR.Expected.size();
    uintptr_t WLo = std::max(KLo, Lo), WHi = std::min(KHi, Lo + N);
    if (WLo >= WHi)
      continue;
    memcpy(LR.Expected.data() + (WLo - KLo), Dst.host(WLo), WHi - WLo);
    if (SrcChanged)
      violation(LR.Index,
                "kernel '%s': the pinned staging source %#llx of the copy that "
                "fills its KLE (%#llx) was modified after cuMemcpyHtoDAsync "
                "was enqueued and before the copy executed",
                LR.F->Name.c_str(), (unsigned long long)SrcAddr,
                (unsigned long long)LR.Dyn);
  }
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

void liveReport(const char *At, Ctx *Only) {
  Global &G = g();
  size_t C[4] = {0, 0, 0, 0}, B[4] = {0, 0, 0, 0};
  size_t PC[4], PB[4];
  {
    std::lock_guard<std::mutex> L(G.Mtx);
    for (auto &Blk : standin::mem().live()) {
      AllocP A = asAlloc(Blk);
      if (Only && A->Owner != Only)
        continue;
      int KI = static_cast<int>(A->K);
      C[KI]++;
      B[KI] += A->Size;
    }
    size_t LN[standin::MaxKinds], LB[standin::MaxKinds], PN[standin::MaxKinds],
        PBy[standin::MaxKinds];
    standin::mem().counts(LN, LB, PN, PBy);
    for (int K = 0; K < 4; ++K)
      PC[K] = PN[K], PB[K] = PBy[K];
  }
  say("live device=%zu pinned=%zu managed=%zu (bytes device=%zu pinned=%zu "
      "managed=%zu) at=%s",
      C[0], C[1], C[2], B[0], B[1], B[2], At);
  say("peak device=%zu pinned=%zu managed=%zu (bytes device=%zu pinned=%zu "
      "managed=%zu)",
      PC[0], PC[1], PC[2], PB[0], PB[1], PB[2]);
  say("launches=%llu violations=%llu",
      (unsigned long long)standin::launches(),
      (unsigned long long)standin::violations());
}

// "kle-standin: calls <exported name>=<n>" (the core's, by exported name).
void statsReport() { standin::statsReport(); }

bool anyCtxAlive() {
  std::lock_guard<std::mutex> L(g().Mtx);
  for (Ctx *C : g().PrimaryCtx)
    if (C && C->Alive && C->Ref > 0)
      return true;
  for (auto &KV : g().Handles)
    if (KV.second == H_CTX && !static_cast<Ctx *>(KV.first)->Primary)
      return true;
  return false;
}

// Final report.  If violations happened the process exit status is forced to
// KLE_STANDIN_EXIT_CODE (97) with _exit() (the core's exitIfViolations).
void finalReport(const char *At) {
  liveReport(At, nullptr);
  statsReport();
  standin::exitIfViolations(nullptr);
}

void onExit() {
  g().Exiting = true;
  if (anyCtxAlive()) {
    // The plugin normally releases its primary contexts from libomptarget's
    // destructor, which runs after this handler; the report (and the forced
    // exit status) then happens at that release.  Violations already seen
    // fail the process now.
    if (standin::violations())
      finalReport("exit");
    liveReport("exit(contexts-still-active)", nullptr);
    statsReport();
    return;
  }
  finalReport("exit");
}

__attribute__((constructor)) void standinInit() {
  (void)cfg();
  (void)g();
  atexit(onExit);
}

__attribute__((destructor)) void standinFini() {
  g().Exiting = true;
  if (standin::violations())
    finalReport("fini");
  statsReport();
  // Stop and join the stream workers before our code is unmapped.
  std::vector<Stream *> Ss;
  {
    std::lock_guard<std::mutex> L(workers().M);
    Ss.swap(workers().Streams);
  }
  for (Stream *S : Ss)
    S->Work.requestStop(S->Wake);
  for (Stream *S : Ss)
    S->Work.join();
}

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

Ctx *newCtx(int Dev, bool Primary) {
  auto *C = new Ctx();
  C->Dev = Dev;
  C->Primary = Primary;
  addHandle(C, H_CTX);
  C->Default = newStream(C, true);
  return C;
}

void destroyCtx(Ctx *C, const char *Why) {
  // Drain all work of the context (KLE checks of pending kernels still run).
  std::vector<Stream *> Ss;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    Ss = C->Streams;
  }
  size_t Pending = 0;
  for (Stream *S : Ss) {
    std::lock_guard<std::mutex> L(S->M);
    Pending += S->Q.size();
  }
  if (Pending)
    say("%s: draining %zu pending stream operation(s)", Why, Pending);
  for (Stream *S : Ss)
    drain(S);
  char At[96];
  snprintf(At, sizeof(At), "%s(dev%d)", Why, C->Dev);
  liveReport(At, C);
  // A stream the program (or the plugin) created and never destroyed: the
  // driver frees it with its context, but nothing released it.
  size_t Undestroyed = 0;
  for (Stream *S : Ss) {
    std::lock_guard<std::mutex> L(S->M);
    Undestroyed += !S->IsDefault && !S->Destroyed;
  }
  if (Undestroyed)
    say("streams never destroyed: %zu at=%s", Undestroyed, At);
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    C->Alive = false;
    g().Handles.erase(C);
    for (Stream *S : Ss)
      g().Handles.erase(S);
    std::vector<AllocP> Owned;
    for (auto &Blk : standin::mem().live())
      if (asAlloc(Blk)->Owner == C)
        Owned.push_back(asAlloc(Blk));
    for (auto &A : Owned)
      releaseLocked(A, "context destruction");
  }
  if (CurrentCtx == C)
    CurrentCtx = nullptr;
  if (g().Exiting && !anyCtxAlive())
    finalReport(At);
  else
    statsReport();
}

//===----------------------------------------------------------------------===//
// ELF (cubin) loading
//===----------------------------------------------------------------------===//

struct ElfCloser {
  Elf *E;
  ~ElfCloser() {
    if (E)
      elf_end(E);
  }
};

// Find an sm_XY cubin inside a CUDA fatbinary (uncompressed entries only).
const void *findElfInFatbin(const void *Img, size_t &SizeOut) {
  const uint8_t *P = static_cast<const uint8_t *>(Img);
  uint32_t Magic;
  memcpy(&Magic, P, 4);
  if (Magic != 0xBA55ED50u)
    return nullptr;
  uint64_t HdrSize = 0, DataSize = 0;
  uint16_t HS;
  memcpy(&HS, P + 6, 2);
  HdrSize = HS;
  memcpy(&DataSize, P + 8, 8);
  const uint8_t *Q = P + HdrSize, *End = Q + DataSize;
  while (Q + 16 < End) {
    uint16_t Kind2;
    uint32_t EHdr;
    uint64_t Payload;
    memcpy(&Kind2, Q, 2);
    memcpy(&EHdr, Q + 4, 4);
    memcpy(&Payload, Q + 8, 8);
    const uint8_t *D = Q + EHdr;
    if (Kind2 == 2 && D + 4 <= End && memcmp(D, "\x7f" "ELF", 4) == 0) {
      SizeOut = Payload;
      return D;
    }
    Q = D + Payload;
  }
  return nullptr;
}

struct NvInfo {
  std::vector<Func::Param> Params;
  int MaxThreads = 0;
  uint32_t CbankParamSize = 0;
};

NvInfo parseNvInfo(const uint8_t *D, size_t N) {
  NvInfo I;
  size_t P = 0;
  while (P + 4 <= N) {
    uint8_t Fmt = D[P], Attr = D[P + 1];
    uint16_t V;
    memcpy(&V, D + P + 2, 2);
    if (Fmt == 0x04) { // EIFMT_SVAL: size + payload
      const uint8_t *Pay = D + P + 4;
      if (P + 4 + V > N)
        break;
      if (Attr == 0x17 && V >= 12) { // EIATTR_KPARAM_INFO
        uint16_t Ord, Off;
        uint32_t Packed;
        memcpy(&Ord, Pay + 4, 2);
        memcpy(&Off, Pay + 6, 2);
        memcpy(&Packed, Pay + 8, 4);
        uint32_t Sz = (Packed >> 18) & 0x3fff;
        bool Ptr = ((Packed >> 8) & 0xf) != 0;
        I.Params.push_back({Ord, Off, Sz, Ptr});
      } else if (Attr == 0x05 && V >= 12) { // EIATTR_MAX_THREADS
        uint32_t X, Y, Z;
        memcpy(&X, Pay, 4);
        memcpy(&Y, Pay + 4, 4);
        memcpy(&Z, Pay + 8, 4);
        I.MaxThreads = int(X * std::max(1u, Y) * std::max(1u, Z));
      }
      P += 4 + V;
    } else {
      if (Fmt == 0x03 && Attr == 0x19) // EIATTR_CBANK_PARAM_SIZE
        I.CbankParamSize = V;
      P += 4;
    }
  }
  std::sort(I.Params.begin(), I.Params.end(),
            [](const Func::Param &A, const Func::Param &B) {
              return A.Ordinal < B.Ordinal;
            });
  return I;
}

CUresult loadModule(const void *Image, Module *&Out) {
  const uint8_t *P = static_cast<const uint8_t *>(Image);
  size_t Size = 0;
  if (memcmp(P, "\x7f" "ELF", 4) == 0) {
    // Compute the ELF size from the section header table.
    Elf64_Ehdr H;
    memcpy(&H, P, sizeof(H));
    if (H.e_ident[EI_CLASS] != ELFCLASS64)
      return ERR_INVALID_IMAGE;
    Size = H.e_shoff + size_t(H.e_shnum) * H.e_shentsize;
    Size = std::max<size_t>(Size, H.e_phoff + size_t(H.e_phnum) * H.e_phentsize);
    for (unsigned I = 0; I < H.e_shnum; ++I) {
      Elf64_Shdr Sh;
      memcpy(&Sh, P + H.e_shoff + size_t(I) * H.e_shentsize, sizeof(Sh));
      if (Sh.sh_type != SHT_NOBITS)
        Size = std::max<size_t>(Size, Sh.sh_offset + Sh.sh_size);
    }
  } else if (const void *E = findElfInFatbin(Image, Size)) {
    P = static_cast<const uint8_t *>(E);
  } else {
    say("cuModuleLoadDataEx: image is neither an ELF cubin nor an "
        "uncompressed fatbinary (PTX JIT is not modelled)");
    return ERR_INVALID_IMAGE;
  }
  Elf64_Ehdr H;
  memcpy(&H, P, sizeof(H));
  if (H.e_machine != 190 /*EM_CUDA*/)
    return ERR_INVALID_IMAGE;
  unsigned SM = H.e_ident[EI_ABIVERSION] == 7 ? (H.e_flags & 0xff)
                                              : ((H.e_flags & 0xff00) >> 8);
  if (SM / 10 != 9 || SM % 10 > 0) {
    say("cuModuleLoadDataEx: cubin is for sm_%u, device is sm_90", SM);
    return ERR_NO_BINARY_FOR_GPU;
  }

  elf_version(EV_CURRENT);
  std::vector<char> Copy(P, P + Size);
  ElfCloser EC{elf_memory(Copy.data(), Copy.size())};
  if (!EC.E || elf_kind(EC.E) != ELF_K_ELF)
    return ERR_INVALID_IMAGE;
  size_t ShStrNdx;
  if (elf_getshdrstrndx(EC.E, &ShStrNdx) != 0)
    return ERR_INVALID_IMAGE;

  struct SecInfo {
    std::string Name;
    GElf_Shdr Sh;
    Elf_Scn *Scn;
    AllocP Seg;
  };
  std::vector<SecInfo> Secs;
  Secs.push_back({"", {}, nullptr, nullptr});
  Elf_Scn *SymScn = nullptr;
  for (Elf_Scn *S = elf_nextscn(EC.E, nullptr); S; S = elf_nextscn(EC.E, S)) {
    SecInfo SI;
    gelf_getshdr(S, &SI.Sh);
    const char *N = elf_strptr(EC.E, ShStrNdx, SI.Sh.sh_name);
    SI.Name = N ? N : "";
    SI.Scn = S;
    if (SI.Sh.sh_type == SHT_SYMTAB)
      SymScn = S;
    Secs.push_back(SI);
  }
  if (!SymScn)
    return ERR_INVALID_IMAGE;

  auto *M = new Module();
  M->C = CurrentCtx;

  auto isDataSec = [](const std::string &N) {
    return N.rfind(".nv.global", 0) == 0 || N.rfind(".nv.constant", 0) == 0;
  };
  // One device segment per global/constant data section.
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    for (size_t I = 1; I < Secs.size(); ++I) {
      SecInfo &SI = Secs[I];
      if (!isDataSec(SI.Name) || SI.Sh.sh_size == 0)
        continue;
      AllocP Seg;
      if (CUresult Err = newAllocLocked(MemKind::Module, SI.Sh.sh_size,
                                        CurrentCtx, Seg))
        return Err;
      if (SI.Sh.sh_type == SHT_NOBITS) {
        memset(Seg->Backing, 0, SI.Sh.sh_size);
      } else {
        Elf_Data *D = elf_getdata(SI.Scn, nullptr);
        memset(Seg->Backing, 0, SI.Sh.sh_size);
        if (D && D->d_buf)
          memcpy(Seg->Backing, D->d_buf, std::min<size_t>(D->d_size, SI.Sh.sh_size));
      }
      SI.Seg = Seg;
      M->Segments.push_back(Seg);
    }
  }

  GElf_Shdr SymSh;
  gelf_getshdr(SymScn, &SymSh);
  Elf_Data *SymData = elf_getdata(SymScn, nullptr);
  size_t NSyms = SymSh.sh_entsize ? SymSh.sh_size / SymSh.sh_entsize : 0;
  std::vector<uintptr_t> SymAddr(NSyms, 0);
  uintptr_t FakeText = 0x7e0000000000ull;
  for (size_t I = 0; I < NSyms; ++I) {
    GElf_Sym Sym;
    gelf_getsym(SymData, int(I), &Sym);
    const char *N = elf_strptr(EC.E, SymSh.sh_link, Sym.st_name);
    std::string Name = N ? N : "";
    if (Sym.st_shndx == SHN_UNDEF || Sym.st_shndx >= Secs.size())
      continue;
    SecInfo &SI = Secs[Sym.st_shndx];
    if (SI.Seg) {
      SymAddr[I] = SI.Seg->Addr + Sym.st_value;
      if (GELF_ST_TYPE(Sym.st_info) == STT_OBJECT && !Name.empty())
        M->Globals[Name] = {SI.Seg->Addr + Sym.st_value, Sym.st_size};
    } else if (GELF_ST_TYPE(Sym.st_info) == STT_FUNC) {
      SymAddr[I] = FakeText + I * 0x1000;
      bool Entry = (Sym.st_other & 0x10) != 0;
      std::string InfoName = ".nv.info." + Name;
      const SecInfo *Info = nullptr;
      for (auto &S2 : Secs)
        if (S2.Name == InfoName)
          Info = &S2;
      if (!Entry) // STO_CUDA_ENTRY: device functions also have .nv.info.*
        continue;
      auto *F = new Func();
      F->M = M;
      F->Name = Name;
      if (Info) {
        Elf_Data *D = elf_getdata(Info->Scn, nullptr);
        if (D && D->d_buf) {
          NvInfo NI = parseNvInfo(static_cast<const uint8_t *>(D->d_buf), D->d_size);
          F->Params = NI.Params;
          if (NI.MaxThreads > 0)
            F->MaxThreads = std::min(1024, NI.MaxThreads);
        }
      }
      for (auto &Pa : F->Params)
        F->ParamBytes = std::max(F->ParamBytes, Pa.Offset + Pa.Size);
      M->Funcs[Name] = F;
      addHandle(F, H_FUNC);
    }
  }

  // Apply relocations to the data segments (pointers between globals).
  for (size_t I = 1; I < Secs.size(); ++I) {
    SecInfo &RS = Secs[I];
    if (RS.Sh.sh_type != SHT_RELA && RS.Sh.sh_type != SHT_REL)
      continue;
    if (RS.Sh.sh_info >= Secs.size() || !Secs[RS.Sh.sh_info].Seg)
      continue;
    AllocP Seg = Secs[RS.Sh.sh_info].Seg;
    Elf_Data *D = elf_getdata(RS.Scn, nullptr);
    size_t Cnt = RS.Sh.sh_entsize ? RS.Sh.sh_size / RS.Sh.sh_entsize : 0;
    for (size_t J = 0; J < Cnt; ++J) {
      uint64_t Off, Info;
      int64_t Add = 0;
      if (RS.Sh.sh_type == SHT_RELA) {
        GElf_Rela Ra;
        gelf_getrela(D, int(J), &Ra);
        Off = Ra.r_offset;
        Info = Ra.r_info;
        Add = Ra.r_addend;
      } else {
        GElf_Rel Rl;
        gelf_getrel(D, int(J), &Rl);
        Off = Rl.r_offset;
        Info = Rl.r_info;
      }
      size_t SymI = GELF_R_SYM(Info);
      unsigned Type = GELF_R_TYPE(Info);
      uint64_t V = (SymI < NSyms ? SymAddr[SymI] : 0) + Add;
      // R_CUDA_32 = 1, R_CUDA_64 = 2, R_CUDA_G32 = 3, R_CUDA_G64 = 4.
      if ((Type == 2 || Type == 4) && Off + 8 <= Seg->Size)
        memcpy(Seg->Backing + Off, &V, 8);
      else if ((Type == 1 || Type == 3) && Off + 4 <= Seg->Size) {
        uint32_t V32 = uint32_t(V);
        memcpy(Seg->Backing + Off, &V32, 4);
      }
    }
  }

  // OpenMP kernel environments: <kernel>_kernel_environment.
  for (auto &KV : M->Funcs) {
    auto It = M->Globals.find(KV.first + "_kernel_environment");
    if (It == M->Globals.end() || It->second.second < 28)
      continue;
    Func *F = KV.second;
    AllocP A = resolve(It->second.first, 28);
    if (!A)
      continue;
    const uint8_t *B = A->host(It->second.first);
    F->HasKernelEnv = true;
    F->ExecMode = B[2];
    memcpy(&F->ReductionDataSize, B + 20, 4);
    memcpy(&F->ReductionBufferLength, B + 24, 4);
  }
  if (core().Verbose) {
    for (auto &KV : M->Funcs)
      say("module: kernel %s params=%zu bytes=%u maxthreads=%d kenv=%d "
          "exec_mode=%u red=%dx%d",
          KV.first.c_str(), KV.second->Params.size(), KV.second->ParamBytes,
          KV.second->MaxThreads, KV.second->HasKernelEnv,
          KV.second->ExecMode, KV.second->ReductionDataSize,
          KV.second->ReductionBufferLength);
    for (auto &KV : M->Globals)
      say("module: global %s addr=%#llx size=%zu", KV.first.c_str(),
          (unsigned long long)KV.second.first, KV.second.second);
  }
  addHandle(M, H_MODULE);
  Out = M;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

// The kind of a host-side pointer: pinned/managed if tracked, pageable otherwise.
// Device pointers on the host side are an error.
enum class HostSide { Pageable, Tracked, DevicePtr };

HostSide classifyHost(uintptr_t P, size_t N, AllocP &A) {
  A = resolve(P, N);
  if (A)
    return A->K == MemKind::Device || A->K == MemKind::Module ? HostSide::DevicePtr
                                                        : HostSide::Tracked;
  if (inDeviceRange(P))
    return HostSide::DevicePtr;
  return HostSide::Pageable;
}

// Enqueue (or run synchronously when S == nullptr) a copy of N bytes.
// Dst/Src are device-visible addresses or host pointers.
CUresult doCopy(const char *What, uintptr_t Dst, bool DstIsHostArg,
                uintptr_t Src, bool SrcIsHostArg, size_t N, Stream *S) {
  if (N == 0)
    return CUDA_SUCCESS;
  AllocP DA, SA;
  bool DstPageable = false, SrcPageable = false;
  if (DstIsHostArg) {
    HostSide HS = classifyHost(Dst, N, DA);
    if (HS == HostSide::DevicePtr)
      return CUDA_ERROR_INVALID_VALUE;
    DstPageable = HS == HostSide::Pageable;
  } else {
    DA = resolve(Dst, N);
    if (!DA)
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (SrcIsHostArg) {
    HostSide HS = classifyHost(Src, N, SA);
    if (HS == HostSide::DevicePtr)
      return CUDA_ERROR_INVALID_VALUE;
    SrcPageable = HS == HostSide::Pageable;
  } else {
    SA = resolve(Src, N);
    if (!SA)
      return CUDA_ERROR_INVALID_VALUE;
  }

  // Pageable source: the driver stages it before returning.
  std::shared_ptr<std::vector<uint8_t>> Staged;
  if (SrcPageable) {
    Staged = std::make_shared<std::vector<uint8_t>>(N);
    memcpy(Staged->data(), reinterpret_cast<const void *>(Src), N);
  }
  // Pinned source of a small async H2D copy: remember the bytes at enqueue
  // time to detect a staging slot recycled before the DMA ran.
  std::shared_ptr<std::vector<uint8_t>> AtEnqueue;
  if (S && SA && SA->K == MemKind::Pinned && DA &&
      (DA->K == MemKind::Device) && N <= 4096) {
    AtEnqueue = std::make_shared<std::vector<uint8_t>>(N);
    memcpy(AtEnqueue->data(), SA->host(Src), N);
  }
  if (DA) {
    std::lock_guard<std::mutex> L(g().Mtx);
    recordWriteLocked(*DA, Dst, N, S,
                      SA ? SA->K : MemKind::Pinned, SrcPageable);
  }

  auto Body = [=](Op &Self) {
    if ((DA && DA->Freed) || (SA && SA->Freed)) {
      opViolation("%s of %zu bytes %#llx -> %#llx executed after %s memory "
                  "was released (%s)",
                  What, N, (unsigned long long)Src, (unsigned long long)Dst,
                  DA && DA->Freed ? "destination" : "source",
                  DA && DA->Freed ? DA->FreedBy.c_str() : SA->FreedBy.c_str());
      return;
    }
    const uint8_t *From = Staged ? Staged->data()
                          : SA   ? SA->host(Src)
                                 : reinterpret_cast<const uint8_t *>(Src);
    uint8_t *To = DA ? DA->host(Dst) : reinterpret_cast<uint8_t *>(Dst);
    bool SrcChanged = AtEnqueue && memcmp(AtEnqueue->data(), From, N) != 0;
    memmove(To, From, N);
    if (SrcIsHostArg && !DstIsHostArg) standin::plantedCopyHold(); // COPY_US
    if (S && DA)
      patchQueuedLaunches(S, Self, *DA, Dst, N, SrcChanged, Src);
  };
  if (!S) {
    Op O;
    Body(O);
    return CUDA_SUCCESS;
  }
  auto O = std::make_shared<Op>();
  O->What = What;
  O->Run = Body;
  uint64_t Seq = enqueue(S, O);
  // D2H into pageable memory returns only once the copy completed.
  if (DstPageable)
    waitFor(S, Seq);
  return CUDA_SUCCESS;
}

CUresult doMemset(uintptr_t Dst, size_t Pitch, unsigned Val, size_t ElemSize,
                  size_t Width, size_t Height, CUstream H) {
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  if (Width == 0 || Height == 0)
    return CUDA_SUCCESS;
  if (Height > 1 && Pitch < Width * ElemSize)
    return CUDA_ERROR_INVALID_VALUE;
  size_t Span = (Height - 1) * Pitch + Width * ElemSize;
  AllocP DA = resolve(Dst, Span);
  if (!DA || Dst % ElemSize)
    return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    recordWriteLocked(*DA, Dst, Span, S, MemKind::Device, false);
  }
  auto O = std::make_shared<Op>();
  O->What = "memset";
  O->Run = [=](Op &Self) {
    if (DA->Freed) {
      opViolation("cuMemset* on %#llx executed after the memory was released (%s)",
                  (unsigned long long)Dst, DA->FreedBy.c_str());
      return;
    }
    for (size_t Row = 0; Row < Height; ++Row) {
      uint8_t *P = DA->host(Dst + Row * Pitch);
      for (size_t I = 0; I < Width; ++I)
        memcpy(P + I * ElemSize, &Val, ElemSize);
    }
    patchQueuedLaunches(S, Self, *DA, Dst, Span, false, 0);
  };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

// cuStreamWaitValue32 (CU_STREAM_WAIT_VALUE_GEQ only): the stream stops until
// the 32-bit word at Addr (pinned or device memory) is >= Value.
CUresult doWaitValue32(uintptr_t Addr, uint32_t Value, unsigned Flags,
                       CUstream H) {
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  if ((Flags & 0x3) != 0 /* CU_STREAM_WAIT_VALUE_GEQ */ || Addr % 4)
    return CUDA_ERROR_INVALID_VALUE;
  AllocP A = resolve(Addr, 4);
  if (!A)
    return CUDA_ERROR_INVALID_VALUE;
  auto O = std::make_shared<Op>();
  O->What = "wait value";
  O->Run = [=](Op &) {
    for (;;) {
      if (A->Freed) {
        opViolation("cuStreamWaitValue32 on %#llx: the memory was released",
                    (unsigned long long)Addr);
        return;
      }
      uint32_t Now;
      memcpy(&Now, A->host(Addr), 4);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (Now >= Value)
        return;
      std::this_thread::sleep_for(std::chrono::microseconds(1));
    }
  };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Kernel execution (checks)
//===----------------------------------------------------------------------===//

void unregisterPending(LaunchRec &LR) {
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
void checkKle(LaunchRec &LR, const char *Phase) {
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

void executeKernel(LaunchRec &LR) {
  Func *F = LR.F;
  if (core().Verbose)
    say("exec launch #%llu '%s' on stream %llu dyn_ptr=%#llx",
        (unsigned long long)LR.Index, F->Name.c_str(),
        (unsigned long long)LR.S->Id, (unsigned long long)LR.Dyn);
  if (LR.HasKle) {
    checkKle(LR, "start");
    // LLVM 22 layout: { u32 ReductionCnt; u32 ReductionIterCnt; void *Buf; },
    // decoded as the fork's DeviceRTL does (Shared/KLEAbi.h): bit 0 of Buf
    // set means the first 8 bytes point to the counters in device memory.
    if (cfg().Llvm22Layout && F->ReductionDataSize > 0 &&
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
      if (cfg().Mode == Expect::Resident && (DeviceCounters || Word0 != 0))
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
  standin::sleepUs(core().KernelUs);
  if (LR.HasKle && !LR.ReportedFree)
    checkKle(LR, "end");
  unregisterPending(LR);
}

} // namespace

//===----------------------------------------------------------------------===//
// Exported driver API
//===----------------------------------------------------------------------===//

EXPORT CUresult cuInit(unsigned Flags) {
  ENTRY("cuInit");
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  if (!g().Initialized) {
    g().PrimaryCtx.assign(cfg().NumDevices, nullptr);
    g().DevFlags.assign(cfg().NumDevices, 0);
    g().Initialized = true;
    if (core().Verbose)
      fprintf(stderr, "kle-standin: cuInit devices=%d delay=%llu:%llu us expect=%d\n",
              cfg().NumDevices, (unsigned long long)core().DelayMin,
              (unsigned long long)core().DelayMax, (int)cfg().Mode);
  }
  if (cfg().NumDevices == 0)
    return CUDA_ERROR_NO_DEVICE;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *V) {
  ENTRY("cuDriverGetVersion");
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  *V = 12080;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *N) {
  ENTRY("cuDeviceGetCount");
  NEED_INIT();
  if (!N)
    return CUDA_ERROR_INVALID_VALUE;
  *N = cfg().NumDevices;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *D, int Ordinal) {
  ENTRY("cuDeviceGet");
  NEED_INIT();
  if (!D)
    return CUDA_ERROR_INVALID_VALUE;
  if (Ordinal < 0 || Ordinal >= cfg().NumDevices)
    return ERR_INVALID_DEVICE;
  *D = Ordinal;
  return CUDA_SUCCESS;
}

static bool validDev(CUdevice D) { return D >= 0 && D < cfg().NumDevices; }

EXPORT CUresult cuDeviceGetName(char *Name, int Len, CUdevice D) {
  ENTRY("cuDeviceGetName");
  NEED_INIT();
  if (!Name || Len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  snprintf(Name, Len, "KLE CPU stand-in (sm_90, H100-like) #%d", D);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *U, CUdevice D) {
  ENTRY("cuDeviceGetUuid");
  NEED_INIT();
  if (!U)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  memcpy(U->bytes, "KLE-STANDIN-0000", 16);
  U->bytes[15] = char('0' + D % 10);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *U, CUdevice D) {
  return cuDeviceGetUuid(U, D);
}

EXPORT CUresult cuDeviceTotalMem(size_t *B, CUdevice D) { // -> _v2 via header
  ENTRY("cuDeviceTotalMem_v2");
  NEED_INIT();
  if (!B)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  *B = kTotalMem;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *V, CUdevice_attribute A, CUdevice D) {
  ENTRY("cuDeviceGetAttribute");
  NEED_INIT();
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  int I = static_cast<int>(A);
  if (I <= 0 || I >= 200)
    return CUDA_ERROR_INVALID_VALUE;
  static const std::unordered_map<int, int> T = {
      {1, 1024},       {2, 1024},      {3, 1024},     {4, 64},
      {5, 2147483647}, {6, 65535},     {7, 65535},    {8, 49152},
      {9, 65536},      {10, 32},       {11, 2147483647}, {12, 65536},
      {13, 1980000},   {14, 512},      {15, 1},       {16, 132},
      {17, 0},         {18, 0},        {19, 1},       {20, 0},
      {30, 512},       {31, 1},        {32, 1},       {33, 0x19},
      {34, 0},         {35, 0},        {36, 2619000}, {37, 5120},
      {38, 52428800},  {39, 2048},     {40, 5},       {41, 1},
      {50, 0},         {51, 32},       {75, 9},       {76, 0},
      {78, 1},         {79, 1},        {80, 1},       {81, 233472},
      {82, 65536},     {83, 1},        {84, 0},       {85, 0},
      {86, 0},         {87, 2},        {88, 0},       {89, 1},
      {90, 1},         {91, 1},        {92, 1},       {93, 1},
      {94, 1},         {95, 1},        {96, 0},       {97, 232448},
      {98, 0},         {99, 1},        {100, 0},      {101, 0},
      // Virtual memory management is not modelled: report unsupported so
      // the plugin does not use cuMemCreate/cuMemMap.
      {102, 0},        {106, 32},      {107, 0},      {108, 0},
      {109, 134213632}, {111, 1024},   {115, 1},      {116, 0}};
  auto It = T.find(I);
  *V = It == T.end() ? 0 : It->second;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult E, const char **S) {
  ENTRY("cuGetErrorString");
  if (!S)
    return CUDA_ERROR_INVALID_VALUE;
  static const std::unordered_map<int, const char *> T = {
      {0, "no error"},
      {1, "invalid argument"},
      {2, "out of memory"},
      {3, "initialization error"},
      {4, "driver shutting down"},
      {100, "no CUDA-capable device is detected"},
      {101, "invalid device ordinal"},
      {200, "device kernel image is invalid"},
      {201, "invalid device context"},
      {209, "no kernel image is available for execution on the device"},
      {218, "a PTX JIT compilation failed"},
      {400, "invalid resource handle"},
      {500, "named symbol not found"},
      {600, "device not ready"},
      {700, "an illegal memory access was encountered"},
      {701, "too many resources requested for launch"},
      {704, "peer access is already enabled"},
      {709, "context is destroyed"},
      {719, "unspecified launch failure"},
      {801, "operation not supported"},
      {999, "unknown error"}};
  auto It = T.find(static_cast<int>(E));
  if (It == T.end()) {
    *S = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *S = It->second;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult E, const char **S) {
  ENTRY("cuGetErrorName");
  if (!S)
    return CUDA_ERROR_INVALID_VALUE;
  static char Buf[64];
  snprintf(Buf, sizeof(Buf), "CUDA_ERROR_%d", (int)E);
  *S = E == CUDA_SUCCESS ? "CUDA_SUCCESS" : Buf;
  return CUDA_SUCCESS;
}

//===------------------------------ contexts ------------------------------===//

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *C, CUdevice D) {
  ENTRY("cuDevicePrimaryCtxRetain");
  NEED_INIT();
  if (!C)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X;
  {
    std::unique_lock<std::mutex> L(g().Mtx);
    X = g().PrimaryCtx[D];
    if (X && X->Alive) {
      X->Ref++;
      *C = reinterpret_cast<CUcontext>(X);
      return CUDA_SUCCESS;
    }
  }
  X = newCtx(D, true);
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    X->Flags = g().DevFlags[D];
    X->Ref = 1;
    g().PrimaryCtx[D] = X;
  }
  *C = reinterpret_cast<CUcontext>(X);
  return CUDA_SUCCESS;
}

static CUresult primaryRelease(CUdevice D, bool Reset) {
  NEED_INIT();
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    X = g().PrimaryCtx[D];
    if (!X || !X->Alive || X->Ref <= 0)
      return Reset ? CUDA_SUCCESS : ERR_INVALID_CONTEXT;
    if (Reset)
      X->Ref = 0;
    else if (--X->Ref > 0)
      return CUDA_SUCCESS;
  }
  destroyCtx(X, Reset ? "cuDevicePrimaryCtxReset" : "cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice D) { // -> _v2
  ENTRY("cuDevicePrimaryCtxRelease_v2");
  return primaryRelease(D, false);
}
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice D) {
  ENTRY("cuDevicePrimaryCtxReset_v2");
  return primaryRelease(D, true);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice D, unsigned *Flags,
                                           int *Active) {
  ENTRY("cuDevicePrimaryCtxGetState");
  NEED_INIT();
  if (!Flags || !Active)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  std::lock_guard<std::mutex> L(g().Mtx);
  Ctx *X = g().PrimaryCtx[D];
  *Active = X && X->Alive && X->Ref > 0;
  *Flags = g().DevFlags[D];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice D, unsigned Flags) { // _v2
  ENTRY("cuDevicePrimaryCtxSetFlags_v2");
  NEED_INIT();
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  if (Flags & ~0x1Fu)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  g().DevFlags[D] = Flags;
  if (Ctx *X = g().PrimaryCtx[D])
    X->Flags = Flags;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *C, unsigned Flags, CUdevice D) {
  ENTRY("cuCtxCreate_v2");
  NEED_INIT();
  if (!C)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(D))
    return ERR_INVALID_DEVICE;
  Ctx *X = newCtx(D, false);
  X->Ref = 1;
  X->Flags = Flags;
  CurrentCtx = X;
  *C = reinterpret_cast<CUcontext>(X);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext C) {
  ENTRY("cuCtxDestroy_v2");
  NEED_INIT();
  Ctx *X = reinterpret_cast<Ctx *>(C);
  if (!isHandle(X, H_CTX))
    return ERR_INVALID_CONTEXT;
  if (X->Primary)
    return CUDA_ERROR_INVALID_VALUE; // primary contexts: use Release/Reset
  destroyCtx(X, "cuCtxDestroy");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext C) {
  ENTRY("cuCtxSetCurrent");
  NEED_INIT();
  if (!C) {
    CurrentCtx = nullptr;
    return CUDA_SUCCESS;
  }
  Ctx *X = reinterpret_cast<Ctx *>(C);
  if (!isHandle(X, H_CTX))
    return ERR_INVALID_CONTEXT;
  CurrentCtx = X;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *C) {
  ENTRY("cuCtxGetCurrent");
  NEED_INIT();
  if (!C)
    return CUDA_ERROR_INVALID_VALUE;
  *C = reinterpret_cast<CUcontext>(CurrentCtx);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *D) {
  ENTRY("cuCtxGetDevice");
  NEED_CTX();
  if (!D)
    return CUDA_ERROR_INVALID_VALUE;
  *D = CurrentCtx->Dev;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize() {
  ENTRY("cuCtxSynchronize");
  NEED_CTX();
  std::vector<Stream *> Ss;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    Ss = CurrentCtx->Streams;
  }
  for (Stream *S : Ss)
    drain(S);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetLimit(CUlimit Lim, size_t V) {
  ENTRY("cuCtxSetLimit");
  NEED_CTX();
  int I = static_cast<int>(Lim);
  if (I < 0 || I > 6)
    return R(215); // CUDA_ERROR_UNSUPPORTED_LIMIT
  CurrentCtx->Limits[I] = V;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetLimit(size_t *V, CUlimit Lim) {
  ENTRY("cuCtxGetLimit");
  NEED_CTX();
  int I = static_cast<int>(Lim);
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  if (I < 0 || I > 6)
    return R(215);
  *V = CurrentCtx->Limits[I];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *Can, CUdevice A, CUdevice B) {
  ENTRY("cuDeviceCanAccessPeer");
  NEED_INIT();
  if (!Can)
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDev(A) || !validDev(B))
    return ERR_INVALID_DEVICE;
  *Can = A != B;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext Peer, unsigned Flags) {
  ENTRY("cuCtxEnablePeerAccess");
  NEED_CTX();
  Ctx *P = reinterpret_cast<Ctx *>(Peer);
  if (!isHandle(P, H_CTX))
    return ERR_INVALID_CONTEXT;
  if (Flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (P->Dev == CurrentCtx->Dev)
    return ERR_INVALID_DEVICE;
  if (!CurrentCtx->PeerEnabled.insert(P->Dev).second)
    return ERR_PEER_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

//===------------------------------- memory -------------------------------===//

static CUresult allocCommon(MemKind K, size_t Size, uintptr_t &Out) {
  NEED_CTX();
  AllocP A;
  std::lock_guard<std::mutex> L(g().Mtx);
  if (CUresult Err = newAllocLocked(K, Size, CurrentCtx, A))
    return Err;
  Out = A->Addr;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *P, size_t Size) { // -> cuMemAlloc_v2
  ENTRY("cuMemAlloc_v2");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Device, Size, A))
    return Err;
  *P = A;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost(void **P, size_t Size) { // -> _v2
  ENTRY("cuMemAllocHost_v2");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Pinned, Size, A))
    return Err;
  *P = reinterpret_cast<void *>(A);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *P, size_t Size, unsigned Flags) {
  ENTRY("cuMemAllocManaged");
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  if (Flags != CU_MEM_ATTACH_GLOBAL && Flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t A;
  if (CUresult Err = allocCommon(MemKind::Managed, Size, A))
    return Err;
  *P = A;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *P, size_t Size, CUstream H) {
  ENTRY("cuMemAllocAsync");
  NEED_CTX();
  if (!P)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult Err;
  if (!streamArg(H, Err))
    return Err;
  uintptr_t A;
  if (CUresult E2 = allocCommon(MemKind::Device, Size, A))
    return E2;
  *P = A;
  return CUDA_SUCCESS;
}

static CUresult freeCommon(uintptr_t P, bool Host, const char *By) {
  NEED_CTX();
  if (!P)
    return CUDA_SUCCESS; // freeing NULL is a no-op
  std::lock_guard<std::mutex> L(g().Mtx);
  AllocP A = asAlloc(standin::mem().liveByStart(P));
  if (!A) {
    if (standin::mem().wasFreed(P))
      say("%s(%#llx): double free -> CUDA_ERROR_INVALID_VALUE", By,
          (unsigned long long)P);
    else
      say("%s(%#llx): not the start of a live allocation -> "
          "CUDA_ERROR_INVALID_VALUE", By, (unsigned long long)P);
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool IsHost = A->K == MemKind::Pinned;
  if (A->K == MemKind::Module || IsHost != Host) {
    say("%s(%#llx): wrong kind (%s) -> CUDA_ERROR_INVALID_VALUE", By,
        (unsigned long long)P, kindName(A->K));
    return CUDA_ERROR_INVALID_VALUE;
  }
  releaseLocked(A, By);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(CUdeviceptr P) { // -> cuMemFree_v2
  ENTRY("cuMemFree_v2");
  return freeCommon(P, false, "cuMemFree");
}

EXPORT CUresult cuMemFreeHost(void *P) {
  ENTRY("cuMemFreeHost");
  return freeCommon(reinterpret_cast<uintptr_t>(P), true, "cuMemFreeHost");
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr P, CUstream H) {
  ENTRY("cuMemFreeAsync");
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    AllocP A = asAlloc(standin::mem().liveByStart(P));
    if (!A || A->K == MemKind::Pinned || A->K == MemKind::Module)
      return CUDA_ERROR_INVALID_VALUE;
  }
  Ctx *C = CurrentCtx;
  auto O = std::make_shared<Op>();
  O->What = "cuMemFreeAsync";
  O->Run = [P, C](Op &) {
    Ctx *Saved = CurrentCtx;
    CurrentCtx = C;
    freeCommon(P, false, "cuMemFreeAsync");
    CurrentCtx = Saved;
  };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo(size_t *Free, size_t *Total) { // -> _v2
  ENTRY("cuMemGetInfo_v2");
  NEED_CTX();
  if (!Free || !Total)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> L(g().Mtx);
  *Total = kTotalMem;
  *Free = kTotalMem - liveDeviceBytes();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *D, void *P,
                                             unsigned Flags) {
  ENTRY("cuMemHostGetDevicePointer_v2");
  NEED_CTX();
  if (!D || Flags)
    return CUDA_ERROR_INVALID_VALUE;
  AllocP A = resolve(reinterpret_cast<uintptr_t>(P), 1);
  if (!A || A->K != MemKind::Pinned)
    return CUDA_ERROR_INVALID_VALUE;
  *D = reinterpret_cast<CUdeviceptr>(P); // unified addressing
  return CUDA_SUCCESS;
}

// Synchronous copies: ordered after the context's default stream.
static CUresult syncCopy(const char *What, uintptr_t Dst, bool DH, uintptr_t Src,
                         bool SH, size_t N) {
  NEED_CTX();
  drain(CurrentCtx->Default);
  return doCopy(What, Dst, DH, Src, SH, N, nullptr);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr D, const void *S, size_t N) {
  ENTRY("cuMemcpyHtoD_v2");
  return syncCopy("cuMemcpyHtoD", D, false, reinterpret_cast<uintptr_t>(S), true, N);
}
EXPORT CUresult cuMemcpyDtoH_v2(void *D, CUdeviceptr S, size_t N) {
  ENTRY("cuMemcpyDtoH_v2");
  return syncCopy("cuMemcpyDtoH", reinterpret_cast<uintptr_t>(D), true, S, false, N);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr D, CUdeviceptr S, size_t N) {
  ENTRY("cuMemcpyDtoD_v2");
  return syncCopy("cuMemcpyDtoD", D, false, S, false, N);
}

static CUresult asyncCopy(const char *What, uintptr_t Dst, bool DH,
                          uintptr_t Src, bool SH, size_t N, CUstream H) {
  NEED_CTX();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  return doCopy(What, Dst, DH, Src, SH, N, S);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr D, const void *S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyHtoDAsync_v2");
  return asyncCopy("cuMemcpyHtoDAsync", D, false, reinterpret_cast<uintptr_t>(S),
                   true, N, H);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *D, CUdeviceptr S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyDtoHAsync_v2");
  return asyncCopy("cuMemcpyDtoHAsync", reinterpret_cast<uintptr_t>(D), true, S,
                   false, N, H);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr D, CUdeviceptr S, size_t N,
                                     CUstream H) {
  ENTRY("cuMemcpyDtoDAsync_v2");
  return asyncCopy("cuMemcpyDtoDAsync", D, false, S, false, N, H);
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr D, CUcontext DC, CUdeviceptr S,
                                  CUcontext SC, size_t N, CUstream H) {
  ENTRY("cuMemcpyPeerAsync");
  if (!isHandle(DC, H_CTX) || !isHandle(SC, H_CTX))
    return ERR_INVALID_CONTEXT;
  return asyncCopy("cuMemcpyPeerAsync", D, false, S, false, N, H);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD8Async");
  return doMemset(D, 0, V & 0xff, 1, N, 1, S);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD16Async");
  return doMemset(D, 0, V & 0xffff, 2, N, 1, S);
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr D, unsigned V, size_t N, CUstream S) {
  ENTRY("cuMemsetD32Async");
  return doMemset(D, 0, V, 4, N, 1, S);
}
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                  size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D8Async");
  return doMemset(D, P, V & 0xff, 1, W, Hh, S);
}
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                   size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D16Async");
  return doMemset(D, P, V & 0xffff, 2, W, Hh, S);
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr D, size_t P, unsigned V, size_t W,
                                   size_t Hh, CUstream S) {
  ENTRY("cuMemsetD2D32Async");
  return doMemset(D, P, V, 4, W, Hh, S);
}

// Virtual memory management: not modelled (device attribute 102 reports 0).
EXPORT CUresult cuMemUnmap(CUdeviceptr, size_t) {
  ENTRY("cuMemUnmap");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle) {
  ENTRY("cuMemRelease");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemAddressFree(CUdeviceptr, size_t) {
  ENTRY("cuMemAddressFree");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemAddressReserve(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                    unsigned long long) {
  ENTRY("cuMemAddressReserve");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemMap(CUdeviceptr, size_t, size_t,
                         CUmemGenericAllocationHandle, unsigned long long) {
  ENTRY("cuMemMap");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t,
                            const CUmemAllocationProp *, unsigned long long) {
  ENTRY("cuMemCreate");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc *,
                               size_t) {
  ENTRY("cuMemSetAccess");
  return ERR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemGetAllocationGranularity(size_t *, const CUmemAllocationProp *,
                                              CUmemAllocationGranularity_flags) {
  ENTRY("cuMemGetAllocationGranularity");
  return ERR_NOT_SUPPORTED;
}

//===------------------------------- modules ------------------------------===//

EXPORT CUresult cuModuleLoadDataEx(CUmodule *M, const void *Image, unsigned N,
                                   void *Opts, void **Vals) {
  ENTRY("cuModuleLoadDataEx");
  NEED_CTX();
  if (!M || !Image)
    return CUDA_ERROR_INVALID_VALUE;
  Module *Mod = nullptr;
  if (CUresult Err = loadModule(Image, Mod))
    return Err;
  *M = reinterpret_cast<CUmodule>(Mod);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleLoadData(CUmodule *M, const void *Image) {
  return cuModuleLoadDataEx(M, Image, 0, nullptr, nullptr);
}

EXPORT CUresult cuModuleUnload(CUmodule H) {
  ENTRY("cuModuleUnload");
  NEED_INIT();
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles.erase(M);
  for (auto &KV : M->Funcs)
    g().Handles.erase(KV.second);
  for (auto &Seg : M->Segments)
    if (!Seg->Freed)
      releaseLocked(Seg, "cuModuleUnload");
  M->Unloaded = true;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *F, CUmodule H, const char *Name) {
  ENTRY("cuModuleGetFunction");
  NEED_CTX();
  if (!F || !Name)
    return CUDA_ERROR_INVALID_VALUE;
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  auto It = M->Funcs.find(Name);
  if (It == M->Funcs.end())
    return CUDA_ERROR_NOT_FOUND;
  *F = reinterpret_cast<CUfunction>(It->second);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *P, size_t *Sz, CUmodule H,
                                  const char *Name) { // -> _v2
  ENTRY("cuModuleGetGlobal_v2");
  NEED_CTX();
  if (!Name)
    return CUDA_ERROR_INVALID_VALUE;
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  auto It = M->Globals.find(Name);
  if (It == M->Globals.end())
    return CUDA_ERROR_NOT_FOUND;
  if (P)
    *P = It->second.first;
  if (Sz)
    *Sz = It->second.second;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *V, CUfunction_attribute A, CUfunction H) {
  ENTRY("cuFuncGetAttribute");
  NEED_INIT();
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (static_cast<int>(A)) {
  case 0: *V = F->MaxThreads; break;       // MAX_THREADS_PER_BLOCK
  case 1: *V = 0; break;                   // SHARED_SIZE_BYTES
  case 2: *V = 0; break;                   // CONST_SIZE_BYTES
  case 3: *V = 0; break;                   // LOCAL_SIZE_BYTES
  case 4: *V = 32; break;                  // NUM_REGS
  case 5: *V = 90; break;                  // PTX_VERSION
  case 6: *V = 90; break;                  // BINARY_VERSION
  case 7: *V = 0; break;                   // CACHE_MODE_CA
  case 8: *V = F->MaxDynShared; break;     // MAX_DYNAMIC_SHARED_SIZE_BYTES
  case 9: *V = -1; break;                  // PREFERRED_SHARED_MEMORY_CARVEOUT
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction H, CUfunction_attribute A, int V) {
  ENTRY("cuFuncSetAttribute");
  NEED_INIT();
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (static_cast<int>(A) == 8) {
    if (V < 0 || V > 232448)
      return CUDA_ERROR_INVALID_VALUE;
    F->MaxDynShared = V;
    return CUDA_SUCCESS;
  }
  if (static_cast<int>(A) == 9)
    return CUDA_SUCCESS;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction H, size_t Index, size_t *Off,
                                   size_t *Size) {
  ENTRY("cuFuncGetParamInfo");
  NEED_INIT();
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (Index >= F->Params.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (Off)
    *Off = F->Params[Index].Offset;
  if (Size)
    *Size = F->Params[Index].Size;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *MinGrid, int *Block,
                                                 CUfunction H,
                                                 CUoccupancyB2DSize Fn,
                                                 size_t DynSmem, int Limit) {
  ENTRY("cuOccupancyMaxPotentialBlockSize");
  NEED_CTX();
  if (!MinGrid || !Block)
    return CUDA_ERROR_INVALID_VALUE;
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  int B = F->MaxThreads;
  if (Limit > 0)
    B = std::min(B, Limit);
  *Block = B;
  *MinGrid = 132 * std::max(1, 2048 / std::max(1, B));
  return CUDA_SUCCESS;
}

//===------------------------------- launches -----------------------------===//

EXPORT CUresult cuLaunchKernel(CUfunction H, unsigned GX, unsigned GY,
                               unsigned GZ, unsigned BX, unsigned BY,
                               unsigned BZ, unsigned Smem, CUstream HS,
                               void **Params, void **Extra) {
  ENTRY("cuLaunchKernel");
  NEED_INIT();
  // A CUfunction carries its module's context: the launch runs there, and
  // the calling thread needs no current context. Seen on an H200 (driver
  // 580.159.04): upstream's CUDA plugin launches from hidden-helper threads
  // that never called cuCtxSetCurrent (test/gpu/nowait_depend_chain.c), and
  // the driver accepted it. Only the special streams (null, legacy,
  // per-thread) are resolved through the current context.
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!isHandle(F->M->C, H_CTX) || !F->M->C->Alive)
    return ERR_INVALID_CONTEXT;
  CUresult Err;
  Stream *S = streamArg(HS, Err);
  if (!S)
    return Err;
  if (S->C != F->M->C)
    return ERR_INVALID_CONTEXT; // a stream of another context
  if (!GX || !GY || !GZ || !BX || !BY || !BZ || GY > 65535 || GZ > 65535 ||
      BX > 1024 || BY > 1024 || BZ > 64)
    return CUDA_ERROR_INVALID_VALUE;
  if (uint64_t(BX) * BY * BZ > uint64_t(F->MaxThreads))
    return R(701); // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
  if (Smem > 49152 && int(Smem) > F->MaxDynShared)
    return CUDA_ERROR_INVALID_VALUE;

  // Record the parameter bytes now, as the driver does.
  std::vector<uint8_t> Bytes(F->ParamBytes, 0);
  if (Params && Extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (Params) {
    for (size_t I = 0; I < F->Params.size(); ++I)
      if (Params[I])
        memcpy(Bytes.data() + F->Params[I].Offset, Params[I], F->Params[I].Size);
      else
        return CUDA_ERROR_INVALID_VALUE;
  } else if (Extra) {
    void *Buf = nullptr;
    size_t *Len = nullptr;
    for (size_t I = 0; Extra[I] != CU_LAUNCH_PARAM_END; I += 2) {
      if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        Buf = Extra[I + 1];
      else if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        Len = static_cast<size_t *>(Extra[I + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!Buf || !Len || *Len != F->ParamBytes) {
      say("cuLaunchKernel('%s'): argument buffer size %zu != kernel parameter "
          "size %u -> CUDA_ERROR_INVALID_VALUE",
          F->Name.c_str(), Len ? *Len : 0, F->ParamBytes);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(Bytes.data(), Buf, F->ParamBytes);
  } else if (!F->Params.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }

  auto LR = new LaunchRec(); // owned by the op; freed after execution
  LR->Index = standin::nextLaunch();
  LR->F = F;
  LR->S = S;
  LR->Params = std::move(Bytes);
  size_t KleN = cfg().KleSize;
  if (!F->Params.empty() && F->Params[0].Size == 8 &&
      F->Params[0].Offset == 0) {
    memcpy(&LR->Dyn, LR->Params.data(), 8);
    LR->HasKle = LR->Dyn != 0 && LR->Dyn != ~uintptr_t(0);
  }
  const char *KN = F->Name.c_str();
  bool NeedsKle = F->HasKernelEnv && F->ReductionDataSize > 0 &&
                  F->ReductionBufferLength > 0;
  if (NeedsKle && !LR->HasKle)
    violation(LR->Index,
              "kernel '%s' does cross-team reductions (%dx%d bytes) but was "
              "launched without a KLE (dyn_ptr %#llx)",
              KN, F->ReductionDataSize, F->ReductionBufferLength,
              (unsigned long long)LR->Dyn);
  if (core().Verbose)
    say("cuLaunchKernel #%llu '%s' grid=%u,%u,%u block=%u,%u,%u stream=%llu "
        "dyn_ptr=%#llx",
        (unsigned long long)LR->Index, KN, GX, GY, GZ, BX, BY, BZ,
        (unsigned long long)S->Id, (unsigned long long)LR->Dyn);

  auto O = std::make_shared<Op>();
  O->What = "kernel";
  O->Launch = LR;
  O->Run = [LR](Op &) {
    executeKernel(*LR);
    LR->KleAlloc.reset();
    LR->RedAlloc.reset();
    // LaunchRec memory is kept (small) so late diagnostics never dangle.
  };
  // Snapshot and enqueue atomically w.r.t. the stream: a copy that executes
  // concurrently either is visible in the snapshot or patches this launch
  // (patchQueuedLaunches runs under S->M after the copy's data movement).
  {
    std::lock_guard<std::mutex> SL(S->M);
    if (LR->HasKle) {
      LR->Expected.assign(KleN, 0);
      std::lock_guard<std::mutex> L(g().Mtx);
      AllocP A = resolveLocked(LR->Dyn, KleN);
      if (A) {
        LR->KleAlloc = A;
        A->Launches.push_back(LR);
        // Launch snapshot. Device memory may be being written right now by
        // an earlier copy queued on this stream (stream order is the device's
        // and patchQueuedLaunches accounts for it), so that read is kept out
        // of ThreadSanitizer's view; pinned host memory (the zero-copy slot)
        // is read instrumented, so a host write racing with a launch reports.
        if (A->K == MemKind::Pinned)
          memcpy(LR->Expected.data(), A->host(LR->Dyn), KleN);
        else
          snapshotDeviceBytes(LR->Expected.data(), A->host(LR->Dyn), KleN);
        Expect Mode = cfg().Mode;
        if (Mode == Expect::ZeroCopy && A->K != MemKind::Pinned)
          violation(LR->Index,
                    "kernel '%s': KLE_STANDIN_EXPECT=zerocopy but dyn_ptr %#llx "
                    "is %s memory, not pinned host memory",
                    KN, (unsigned long long)LR->Dyn, kindName(A->K));
        if (Mode == Expect::Resident) {
          // The KLE lives in device memory, written by an earlier copy (on
          // this stream, or by an earlier launch of the same slot); its
          // upstream layout and zero counters are checked at kernel start.
          const bool Written =
              A->KleWrites.count(LR->Dyn) ||
              std::any_of(A->Writes.begin(), A->Writes.end(),
                          [&](const WriteRec &W) {
                            return W.Lo <= LR->Dyn && W.Hi >= LR->Dyn + KleN;
                          });
          if (A->K != MemKind::Device)
            violation(LR->Index,
                      "kernel '%s': KLE_STANDIN_EXPECT=resident but dyn_ptr "
                      "%#llx is %s memory, not device memory",
                      KN, (unsigned long long)LR->Dyn, kindName(A->K));
          else if (!Written)
            violation(LR->Index,
                      "kernel '%s': resident KLE %#llx was never written by a "
                      "copy before the launch",
                      KN, (unsigned long long)LR->Dyn);
        }
        if ((Mode == Expect::Copy || Mode == Expect::Staged)) {
          if (A->K != MemKind::Device) {
            violation(LR->Index,
                      "kernel '%s': KLE_STANDIN_EXPECT=%s but dyn_ptr %#llx is "
                      "%s memory, not device memory",
                      KN, Mode == Expect::Copy ? "copy" : "staged",
                      (unsigned long long)LR->Dyn, kindName(A->K));
          } else {
            const WriteRec *Last = nullptr;
            for (auto &W : A->Writes)
              if (W.Lo <= LR->Dyn && W.Hi >= LR->Dyn + KleN &&
                  (!Last || W.Order > Last->Order))
                Last = &W;
            if (!Last)
              violation(LR->Index,
                        "kernel '%s': device KLE %#llx was not filled by a "
                        "copy/memset before the launch",
                        KN, (unsigned long long)LR->Dyn);
            else if (Last->S != S)
              violation(LR->Index,
                        "kernel '%s': device KLE %#llx was last filled on %s "
                        "%llu, not on the launch stream %llu (no ordering "
                        "guarantee)",
                        KN, (unsigned long long)LR->Dyn,
                        Last->S ? "stream" : "a synchronous copy, stream",
                        (unsigned long long)(Last->S ? Last->S->Id : 0),
                        (unsigned long long)S->Id);
            else if (Mode == Expect::Staged &&
                     (Last->SrcPageable || Last->SrcKind != MemKind::Pinned))
              violation(LR->Index,
                        "kernel '%s': KLE_STANDIN_EXPECT=staged but the KLE "
                        "copy's source was %s memory, not a pinned staging slot",
                        KN, Last->SrcPageable ? "pageable host"
                                              : kindName(Last->SrcKind));
          }
        }
      }
      // If not resolvable, executeKernel reports it (device would fault).
    }
    O->Seq = ++S->Enqueued;
    S->Q.push_back(O);
  }
  S->Wake.notify();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchHostFunc(CUstream H, CUhostFn Fn, void *Data) {
  ENTRY("cuLaunchHostFunc");
  NEED_CTX();
  if (!Fn)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  auto O = std::make_shared<Op>();
  O->What = "host-func";
  O->Run = [Fn, Data](Op &) { Fn(Data); };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamAddCallback(CUstream H, CUstreamCallback Cb, void *Data,
                                    unsigned Flags) {
  ENTRY("cuStreamAddCallback");
  NEED_CTX();
  if (!Cb || Flags)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  auto O = std::make_shared<Op>();
  O->What = "callback";
  O->Run = [Cb, Data, H](Op &) { Cb(H, CUDA_SUCCESS, Data); };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

//===------------------------------- streams ------------------------------===//

EXPORT CUresult cuStreamCreate(CUstream *H, unsigned Flags) {
  ENTRY("cuStreamCreate");
  NEED_CTX();
  if (!H || (Flags & ~1u))
    return CUDA_ERROR_INVALID_VALUE;
  *H = reinterpret_cast<CUstream>(newStream(CurrentCtx, false));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream H) {
  ENTRY("cuStreamDestroy_v2");
  NEED_INIT();
  Stream *S = reinterpret_cast<Stream *>(H);
  if (!isHandle(S, H_STREAM) || S->IsDefault)
    return CUDA_ERROR_INVALID_HANDLE;
  // The driver returns immediately; pending work completes in the
  // background.  The handle is invalid from now on.
  dropHandle(S);
  std::lock_guard<std::mutex> L(S->M);
  S->Destroyed = true;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream H) {
  ENTRY("cuStreamSynchronize");
  NEED_INIT();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  drain(S);
  standin::plantedSyncNoise(); // SYNC_NOISE
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream H) {
  ENTRY("cuStreamQuery");
  NEED_INIT();
  CUresult Err;
  Stream *S = streamArg(H, Err);
  if (!S)
    return Err;
  std::lock_guard<std::mutex> L(S->M);
  return S->Completed >= S->Enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventCreate(CUevent *E, unsigned Flags) {
  ENTRY("cuEventCreate");
  NEED_CTX();
  if (!E || (Flags & ~0x7u))
    return CUDA_ERROR_INVALID_VALUE;
  auto *Ev = new Event();
  addHandle(Ev, H_EVENT);
  *E = reinterpret_cast<CUevent>(Ev);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent H) {
  ENTRY("cuEventDestroy_v2");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  dropHandle(H); // object leaked on purpose: pending waits may still read it
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent H, CUstream HS) {
  ENTRY("cuEventRecord");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult Err;
  Stream *S = streamArg(HS, Err);
  if (!S)
    return Err;
  Event *E = reinterpret_cast<Event *>(H);
  uint64_t Tail, Done;
  {
    std::lock_guard<std::mutex> L(S->M);
    Tail = S->Enqueued;
    Done = S->Completed;
  }
  std::lock_guard<std::mutex> L(E->M);
  E->S = S;
  E->Seq = Tail > Done ? Tail : 0; // 0: complete at once, at RecordNs
  E->RecordNs = nowNs();
  E->Recorded = true;
  return CUDA_SUCCESS;
}

static bool eventDone(Event *E, Stream *&S, uint64_t &Seq) {
  {
    std::lock_guard<std::mutex> L(E->M);
    S = E->S;
    Seq = E->Seq;
  }
  if (!S)
    return true; // never recorded: complete
  std::lock_guard<std::mutex> L(S->M);
  return S->Completed >= Seq;
}

EXPORT CUresult cuEventQuery(CUevent H) {
  ENTRY("cuEventQuery");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  Stream *S;
  uint64_t Seq;
  return eventDone(reinterpret_cast<Event *>(H), S, Seq) ? CUDA_SUCCESS
                                                          : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventSynchronize(CUevent H) {
  ENTRY("cuEventSynchronize");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  Stream *S;
  uint64_t Seq;
  if (!eventDone(reinterpret_cast<Event *>(H), S, Seq))
    waitFor(S, Seq);
  return CUDA_SUCCESS;
}

// The time an event completed: that of the last operation before it on its
// stream, or when it was recorded if the stream was idle then.
static bool eventTimeNs(Event *E, uint64_t &Ns) {
  Stream *S;
  uint64_t Seq;
  if (!eventDone(E, S, Seq))
    return false;
  std::lock_guard<std::mutex> LE(E->M);
  Ns = E->RecordNs;
  if (!E->S || !E->Seq)
    return true;
  std::lock_guard<std::mutex> L(E->S->M);
  for (auto &[OpSeq, T] : E->S->DoneNs)
    if (OpSeq == E->Seq)
      Ns = T;
  return true;
}

EXPORT CUresult cuEventElapsedTime(float *Ms, CUevent HStart, CUevent HEnd) {
  ENTRY("cuEventElapsedTime");
  NEED_INIT();
  if (!Ms)
    return CUDA_ERROR_INVALID_VALUE;
  if (!isHandle(HStart, H_EVENT) || !isHandle(HEnd, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  auto *Start = reinterpret_cast<Event *>(HStart);
  auto *End = reinterpret_cast<Event *>(HEnd);
  for (Event *E : {Start, End}) {
    std::lock_guard<std::mutex> L(E->M);
    if (!E->Recorded)
      return CUDA_ERROR_INVALID_HANDLE; // as the driver: never recorded
  }
  uint64_t T0, T1;
  if (!eventTimeNs(Start, T0) || !eventTimeNs(End, T1))
    return CUDA_ERROR_NOT_READY;
  *Ms = float((double(T1) - double(T0)) / 1e6);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamWaitEvent(CUstream HS, CUevent H, unsigned Flags) {
  ENTRY("cuStreamWaitEvent");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult Err;
  Stream *S = streamArg(HS, Err);
  if (!S)
    return Err;
  Stream *ES;
  uint64_t Seq;
  if (eventDone(reinterpret_cast<Event *>(H), ES, Seq))
    return CUDA_SUCCESS;
  if (ES == S)
    return CUDA_SUCCESS; // same stream: already ordered
  auto O = std::make_shared<Op>();
  O->What = "wait-event";
  O->Run = [ES, Seq](Op &) { waitFor(ES, Seq); };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Aliases: names the plugin (or the toolkit cuda.h) may resolve.  The plugin
// prefers the _v2 names for some entries and uses the header-renamed names
// for others; export both spellings.
//===----------------------------------------------------------------------===//

#undef cuDeviceTotalMem
#undef cuModuleGetGlobal
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocHost
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags

EXPORT CUresult cuDeviceTotalMem(size_t *B, CUdevice D) {
  return cuDeviceTotalMem_v2(B, D);
}
EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *P, size_t *S, CUmodule M,
                                  const char *N) {
  return cuModuleGetGlobal_v2(P, S, M, N);
}
EXPORT CUresult cuMemGetInfo(size_t *F, size_t *T) { return cuMemGetInfo_v2(F, T); }
EXPORT CUresult cuMemAlloc(CUdeviceptr *P, size_t S) { return cuMemAlloc_v2(P, S); }
EXPORT CUresult cuMemFree(CUdeviceptr P) { return cuMemFree_v2(P); }
EXPORT CUresult cuMemAllocHost(void **P, size_t S) { return cuMemAllocHost_v2(P, S); }
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice D) {
  return cuDevicePrimaryCtxRelease_v2(D);
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice D, unsigned F) {
  return cuDevicePrimaryCtxSetFlags_v2(D, F);
}
EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice D) {
  return cuDevicePrimaryCtxReset_v2(D);
}
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr D, const void *S, size_t N) {
  return cuMemcpyHtoD_v2(D, S, N);
}
EXPORT CUresult cuMemcpyDtoH(void *D, CUdeviceptr S, size_t N) {
  return cuMemcpyDtoH_v2(D, S, N);
}
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr D, CUdeviceptr S, size_t N) {
  return cuMemcpyDtoD_v2(D, S, N);
}
EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr D, const void *S, size_t N,
                                  CUstream H) {
  return cuMemcpyHtoDAsync_v2(D, S, N, H);
}
EXPORT CUresult cuMemcpyDtoHAsync(void *D, CUdeviceptr S, size_t N, CUstream H) {
  return cuMemcpyDtoHAsync_v2(D, S, N, H);
}
EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr D, CUdeviceptr S, size_t N,
                                  CUstream H) {
  return cuMemcpyDtoDAsync_v2(D, S, N, H);
}
EXPORT CUresult cuStreamDestroy(CUstream H) { return cuStreamDestroy_v2(H); }
EXPORT CUresult cuEventDestroy(CUevent H) { return cuEventDestroy_v2(H); }
EXPORT CUresult cuStreamWaitValue32_v2(CUstream S, CUdeviceptr A, uint32_t V,
                                      unsigned F) {
  ENTRY("cuStreamWaitValue32_v2");
  return doWaitValue32(A, V, F, S);
}
EXPORT CUresult cuStreamWaitValue32(CUstream S, CUdeviceptr A, uint32_t V,
                                    unsigned F) {
  ENTRY("cuStreamWaitValue32");
  return doWaitValue32(A, V, F, S);
}
EXPORT CUresult cuEventElapsedTime_v2(float *Ms, CUevent S, CUevent E) {
  return cuEventElapsedTime(Ms, S, E); // CUDA 12.8+ cuda.h maps to _v2
}
EXPORT CUresult cuCtxDestroy(CUcontext C) { return cuCtxDestroy_v2(C); }
EXPORT CUresult cuCtxCreate(CUcontext *C, unsigned F, CUdevice D) {
  return cuCtxCreate_v2(C, F, D);
}
EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *D, void *P, unsigned F) {
  return cuMemHostGetDevicePointer_v2(D, P, F);
}
