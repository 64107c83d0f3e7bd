//===- cuda_stream.cpp - Streams and events of the CUDA stand-in ----------===//
//
// TEST ONLY.  The CUDA stand-in's streams (one in-order worker thread each,
// stopped and joined at library unload), events, host callbacks, stream
// waits and synchronisation.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"
#include "../core/kle_contract.h"

#include <system_error>

namespace cuda_standin {

using standin::contract::Check;
using standin::contract::reportOp;

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
static WorkerRegistryTy &workers() {
  static auto *R = new WorkerRegistryTy();
  return *R;
}

// Runs the stream's ops in order, each after its random delay.
static void streamWorker(Stream *S) {
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
    std::unique_lock<std::mutex> Running(S->RunM, std::defer_lock);
    if (!O->Waits)
      Running.lock();
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
    try {
      S->Work.start([S] { streamWorker(S); });
    } catch (const std::system_error &) { // no thread to be had
      delete S;
      return nullptr;
    }
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
    hbAtEnqueueLocked(*S, *O);
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

void pollFor(Stream *S, uint64_t Seq) {
  for (;;) {
    {
      std::lock_guard<std::mutex> L(S->M);
      if (S->Completed >= Seq)
        return;
    }
    std::this_thread::yield();
  }
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
// the same stream must see the delivered bytes (the contract's A1, A2).
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
    kleAfterQueuedWrite(*O->Launch, Dst, Lo, N, SrcChanged, SrcAddr);
  }
}


//===----------------------------------------------------------------------===//
// Waits that sleep (cuda_front.h)
//===----------------------------------------------------------------------===//

static const char *const WaitNames[W_NUM_KINDS] = {
    "cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize",
    "cuMemcpyDtoHAsync", "cuMemcpy"};

struct WaitCountsTy {
  std::atomic<uint64_t> Slept[W_NUM_KINDS] = {}, Wakeups[W_NUM_KINDS] = {};
  std::atomic<uint64_t> Polled{0};
  std::atomic<uint64_t> CopyBackPageable{0}, CopyBackPinned{0};
};
static WaitCountsTy &waitCounts() {
  static auto *W = new WaitCountsTy(); // leaked: read during exit
  return *W;
}

// When operation Seq of S completed (its worker's clock), or now if it is
// no longer remembered.
static uint64_t completedAtNs(Stream *S, uint64_t Seq) {
  std::lock_guard<std::mutex> L(S->M);
  for (auto It = S->DoneNs.rbegin(); It != S->DoneNs.rend(); ++It)
    if (It->first == Seq)
      return It->second;
  return nowNs();
}

static bool blockingSync(Ctx *C) {
  std::lock_guard<std::mutex> L(g().Mtx);
  return C && (C->Flags & CU_CTX_SCHED_MASK) == CU_CTX_SCHED_BLOCKING_SYNC;
}

void sleepingWait(Ctx *C, const std::vector<std::pair<Stream *, uint64_t>> &Ops,
                  WaitKind K) {
  bool Pending = false;
  for (auto &[S, Seq] : Ops) {
    std::lock_guard<std::mutex> L(S->M);
    Pending |= S->Completed < Seq;
  }
  if (!Pending)
    return; // complete at the call: the driver returns without sleeping
  // Only a blocking-sync context sleeps; spin, yield and auto scheduling
  // poll, as the driver does (auto spins or yields by the number of contexts
  // and cores).  Polling yields the core: here the device is a thread too.
  const bool Blocking = blockingSync(C);
  uint64_t DoneNs = 0;
  for (auto &[S, Seq] : Ops) {
    if (Blocking)
      waitFor(S, Seq);
    else
      pollFor(S, Seq);
    if (Seq)
      DoneNs = std::max(DoneNs, completedAtNs(S, Seq));
  }
  if (!Blocking) {
    waitCounts().Polled++;
    return;
  }
  waitCounts().Slept[K]++;
  if (standin::plantedWakeupOn()) {
    standin::plantedWakeup(DoneNs ? DoneNs : nowNs());
    waitCounts().Wakeups[K]++;
  }
}

void countCopyBack(bool Pageable) {
  (Pageable ? waitCounts().CopyBackPageable : waitCounts().CopyBackPinned)++;
}

void waitReport() {
  if (!core().Stats)
    return;
  WaitCountsTy &W = waitCounts();
  uint64_t Slept = 0, Wakeups = 0;
  for (int K = 0; K < W_NUM_KINDS; ++K)
    Slept += W.Slept[K], Wakeups += W.Wakeups[K];
  uint64_t Pageable = W.CopyBackPageable, Pinned = W.CopyBackPinned;
  uint64_t Polled = W.Polled;
  static std::mutex M;
  static uint64_t Last[5] = {~0ull, 0, 0, 0, 0};
  {
    std::lock_guard<std::mutex> L(M);
    uint64_t Now[5] = {Slept, Wakeups, Pageable, Pinned, Polled};
    if (!memcmp(Now, Last, sizeof(Now)))
      return; // nothing new since the last report
    memcpy(Last, Now, sizeof(Now));
  }
  say("waits slept=%llu wakeups=%llu d2h_pageable=%llu d2h_pinned=%llu "
      "polled=%llu",
      (unsigned long long)Slept, (unsigned long long)Wakeups,
      (unsigned long long)Pageable, (unsigned long long)Pinned,
      (unsigned long long)Polled);
  for (int K = 0; K < W_NUM_KINDS; ++K)
    if (W.Slept[K])
      say("wait %s slept=%llu wakeups=%llu", WaitNames[K],
          (unsigned long long)W.Slept[K].load(),
          (unsigned long long)W.Wakeups[K].load());
  standin::WakeupStats WS = standin::plantedWakeupStats();
  if (standin::plantedWakeupOn())
    say("wakeup planted=%llu:%llu:%llu paid=%llu mean_target_us=%.1f "
        "mean_realised_us=%.1f total_realised_us=%.1f",
        (unsigned long long)WS.Low, (unsigned long long)WS.High,
        (unsigned long long)WS.PeriodMs, (unsigned long long)WS.Count,
        WS.Count ? WS.TargetNs / 1e3 / WS.Count : 0.0,
        WS.Count ? WS.RealisedNs / 1e3 / WS.Count : 0.0, WS.RealisedNs / 1e3);
}

void stopStreamWorkers() {
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

// The streams forkCollect listed (workers().M held; streams are only added
// until the library unloads).
static size_t CollectedStreams = 0;

bool forkCurrent() { return workers().Streams.size() == CollectedStreams; }

void forkCollect(std::vector<std::mutex *> &Locks, std::vector<standin::Waker *> &Wakers) {
  std::lock_guard<std::mutex> L(workers().M);
  CollectedStreams = workers().Streams.size();
  Locks.push_back(&workers().M);
  Locks.push_back(&g().Mtx);
  hbForkLocks(Locks);
  for (Stream *S : workers().Streams) {
    Locks.push_back(&S->M);
    Locks.push_back(&S->RunM);
    Wakers.push_back(&S->Wake);
  }
}

void forkChild() {
  // Every stream the parent had, destroyed handles with work left included:
  // a worker of the child's own runs what was queued at the fork, and the
  // child goes on once it completed. Nothing in the child waits for that
  // work otherwise (its libomptarget forgets the parent's pending regions),
  // so its exit would free memory the work still reads.
  // Counted before the child's workers start: nothing else runs yet.
  std::vector<std::pair<Stream *, uint64_t>> Left;
  size_t Queued = 0;
  for (Stream *S : workers().Streams) {
    Left.emplace_back(S, S->Enqueued);
    Queued += S->Enqueued - std::min(S->Enqueued, S->Completed);
  }
  for (Stream *S : workers().Streams) {
    S->Work.forget();
    S->Work.start([S] { streamWorker(S); });
  }
  if (Queued)
    say("%zu operations queued at the fork", Queued);
  size_t Pending = standin::drainAfterFork([&] {
    size_t N = 0;
    for (auto &[S, Seq] : Left) {
      std::lock_guard<std::mutex> L(S->M);
      N += Seq - std::min(Seq, S->Completed);
    }
    return N;
  });
  if (Pending)
    say("%zu operations queued at the fork did not complete in the child", Pending);
}

// cuStreamWaitValue32 (CU_STREAM_WAIT_VALUE_GEQ only): the stream stops until
// the 32-bit word at Addr (pinned or device memory) is >= Value.
static CUresult doWaitValue32(uintptr_t Addr, uint32_t Value, unsigned Flags,
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
  O->Waits = true;
  O->Run = [=](Op &) {
    for (;;) {
      if (A->Freed) {
        reportOp(Check::B, "cuStreamWaitValue32 on %#llx: the memory was released",
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


} // namespace cuda_standin

using namespace cuda_standin;

//===----------------------------------------------------------------------===//
// Exported driver API
//===----------------------------------------------------------------------===//

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
  Stream *S = newStream(CurrentCtx, false);
  if (!S)
    return ERR_OUT_OF_MEMORY;
  *H = reinterpret_cast<CUstream>(S);
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
  uint64_t Tail = hbTail(*S);
  sleepingWait(S->C, {{S, Tail}}, W_STREAM_SYNC);
  hbObserved(*S, Tail);
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
  if (S->Completed < S->Enqueued)
    return CUDA_ERROR_NOT_READY;
  hbObservedLocked(*S, S->Enqueued);
  return CUDA_SUCCESS;
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
    hbEventRecordLocked(*E, *S);
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
  if (!eventDone(reinterpret_cast<Event *>(H), S, Seq))
    return CUDA_ERROR_NOT_READY;
  hbEventObserved(*reinterpret_cast<Event *>(H));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent H) {
  ENTRY("cuEventSynchronize");
  NEED_INIT();
  if (!isHandle(H, H_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  Stream *S;
  uint64_t Seq;
  if (!eventDone(reinterpret_cast<Event *>(H), S, Seq))
    sleepingWait(S->C, {{S, Seq}}, W_EVENT_SYNC);
  hbEventObserved(*reinterpret_cast<Event *>(H));
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
  hbStreamWaitEvent(*S, *reinterpret_cast<Event *>(H));
  Stream *ES;
  uint64_t Seq;
  if (eventDone(reinterpret_cast<Event *>(H), ES, Seq))
    return CUDA_SUCCESS;
  if (ES == S)
    return CUDA_SUCCESS; // same stream: already ordered
  auto O = std::make_shared<Op>();
  O->What = "wait-event";
  O->Waits = true;
  O->Run = [ES, Seq](Op &) { waitFor(ES, Seq); };
  enqueue(S, O);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Aliases: the other spellings of the entry points above (see
// cuda_context.cpp).
//===----------------------------------------------------------------------===//

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

// TEST ONLY, not a driver entry point: the wait counters, for programs that
// compare phases of one run.  Out[0] waits that slept, [1] wake-ups paid,
// [2] device-to-host copies into pageable memory, [3] into pinned memory,
// [4] realised wake-up ns in total, [5] waits that polled (not blocking-sync
// scheduled).  Writes min(N, 6); returns 6.
EXPORT int kle_standin_wait_counts(unsigned long long *Out, int N) {
  WaitCountsTy &W = waitCounts();
  unsigned long long V[6] = {0, 0, W.CopyBackPageable, W.CopyBackPinned,
                             standin::plantedWakeupStats().RealisedNs,
                             W.Polled};
  for (int K = 0; K < W_NUM_KINDS; ++K)
    V[0] += W.Slept[K], V[1] += W.Wakeups[K];
  for (int I = 0; I < N && I < 6; ++I)
    Out[I] = V[I];
  return 6;
}
