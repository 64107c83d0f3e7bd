//===- hsa_queue.cpp - HSA stand-in: AQL queues and dispatch --------------===//
//
// TEST ONLY.  Queue create and destroy, the read and write indices, the
// doorbell (which records each dispatch packet it announces with the KLE
// contract), and one in-order worker per queue, the packet processor, that
// runs barrier-AND and kernel dispatch packets.
//
//===----------------------------------------------------------------------===//

#include "happens_before_hsa.h"
#include "kle_contract_hsa.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace hsafront;
using standin::contract::Check;
using standin::contract::reportOp;

//===----------------------------------------------------------------------===//
// AQL packet processor: one in-order worker per queue
//===----------------------------------------------------------------------===//

namespace {

uint16_t headerOf(Queue &Q, uint64_t Index) {
  auto *P = reinterpret_cast<uint16_t *>(Q.Ring + (Index & (Q.Q.size - 1)) * 64);
  return __atomic_load_n(P, __ATOMIC_ACQUIRE);
}

// " signal 0x1f=1 signal 0x20=0": each signal and its value.
std::string signalList(const std::vector<Signal *> &Sigs) {
  std::string S;
  for (auto *X : Sigs) {
    char B[64];
    snprintf(B, sizeof(B), " signal %#llx=%lld", (unsigned long long)X->Id, (long long)X->V.load());
    S += B;
  }
  return S.empty() ? " no signal" : S;
}

void watchdog(const char *What, const std::vector<Signal *> &Sigs) {
  say("WATCHDOG: %s waited more than %llu s for%s; exiting with status 96", What,
      (unsigned long long)g().WatchdogS, signalList(Sigs).c_str());
  fflush(nullptr);
  _exit(96);
}

} // namespace

namespace hsafront {

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
    auto Rec = kleAtDoorbell(Q, I, P);
    hbAtDoorbell(*Rec);
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

static void queueWorker(Queue *Q) {
  uint64_t Mask = Q->Q.size - 1;
  while (true) {
    uint64_t R = Q->Read.load();
    g().Wake.waitUntil([&] { return Q->Work.stopping() || Q->Rung.load() > R; });
    if (Q->Rung.load() <= R)
      return; // stopped with nothing announced
    std::unique_lock<std::mutex> Run(Q->RunM, std::defer_lock);
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
      for (auto *S : Deps) // the packet processor observes what it waits for
        startHeldCopy(S);
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
      Run.lock();
      Signal *BarrierDone =
          P.completion_signal.handle ? sigOf(P.completion_signal) : nullptr;
      hbAtBarrier(*Q, Deps, BarrierDone);
      if (BarrierDone)
        sigSub(BarrierDone, 1);
    } else if (Type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      Run.lock();
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
        kleAtStart(*L);
        hbAtDispatchStart(*Q, *L);
        if (broken("early-completion") && Done) {
          hbAtDispatchDone(*Q, Done);
          sigSub(Done, 1); // complete before the kernel "ran"
          Done = nullptr;
          sleepUs(cfg().KernelUs + 2000);
        } else {
          sleepUs(cfg().KernelUs);
        }
        kleAtEnd(*L);
        if (cfg().Verbose)
          say("launch #%llu done", (unsigned long long)L->N);
      }
      if (Done) {
        hbAtDispatchDone(*Q, Done);
        sigSub(Done, 1);
      }
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

// The queues forkCollect listed: g().NextQueue then (read under g().Mtx).
static uint64_t CollectedQueues = 0;

bool forkCurrent() { return g().NextQueue == CollectedQueues; }

void forkCollect(std::vector<std::mutex *> &Locks, std::vector<standin::Waker *> &Wakers) {
  std::lock_guard<std::mutex> G(g().Mtx);
  CollectedQueues = g().NextQueue;
  Locks.push_back(&g().Mtx);
  Locks.push_back(&g().CopyRunMtx);
  Locks.push_back(&g().HandlerRunMtx);
  hbForkLocks(Locks);
  for (Queue *Q : g().Queues) {
    Locks.push_back(&Q->M);
    Locks.push_back(&Q->RunM);
  }
  Wakers.push_back(&g().Wake);
}

void forkChild() {
  // The signals and queues live at the fork are the parent's: the child's
  // report leaves out those it never destroys (the plugin's streams that
  // hold them belong to the parent's regions; a queue a parent thread was
  // creating at the fork is unknown to the child's plugin). Marked, and
  // the work queued at the fork counted, before the child's threads start.
  // Counted afresh: a grandchild's were partly its parent's inherited ones.
  g().InheritedSignals = 0;
  for (auto &[Id, S] : g().Signals)
    if (!S->Destroyed) {
      S->Inherited = true;
      ++g().InheritedSignals;
    }
  size_t Unannounced = 0;
  for (Queue *Q : g().Queues) {
    Q->Inherited = !Q->Destroyed;
    if (!Q->Inherited)
      continue;
    // A parent thread between its write-index reservation and its doorbell
    // at the fork: the child never rings for that packet.
    Q->RungAtFork = Q->Rung.load();
    Q->UnannouncedAtFork = Q->Write.load() - std::min(Q->Write.load(), Q->RungAtFork);
    Unannounced += Q->UnannouncedAtFork;
  }
  auto Left = [] {
    // CopyRunMtx first (the DMA engine's order): a copy taken off Copies
    // counts until it completed.
    std::lock_guard<std::mutex> Run(g().CopyRunMtx);
    std::lock_guard<std::mutex> G(g().Mtx);
    size_t N = g().Copies.size() + g().HandlersRunning;
    for (const Handler &H : g().Handlers) // ready, not yet taken up
      N += condHolds(H.Cond, H.S->V.load(), H.Value);
    for (Queue *Q : g().Queues)
      if (!Q->Destroyed)
        N += Q->Rung.load() - std::min(Q->Rung.load(), Q->Read.load());
    return N;
  };
  size_t Queued = Left();
  // The child's own DMA engine, handler thread and queue workers: they run
  // what was queued or announced at the fork, and the child goes on once it
  // was processed: nothing in the child waits for it otherwise (its
  // libomptarget forgets the parent's pending regions), so its exit would
  // release memory and executables it still uses.
  if (g().ThreadsStarted) {
    std::thread(dmaWorker).detach();
    std::thread(handlerWorker).detach();
  }
  for (Queue *Q : g().Queues)
    if (!Q->Destroyed) {
      Q->Work.forget();
      Q->Work.start([Q] { queueWorker(Q); });
    }
  if (Queued)
    say("%zu packets and copies queued at the fork", Queued);
  if (Unannounced)
    say("%zu packet(s) reserved but not announced at the fork: the parent's, not run here",
        Unannounced);
  if (size_t Pending = standin::drainAfterFork(Left)) {
    say("%zu packets and copies queued at the fork did not complete in the child", Pending);
    sayPending();
  }
}

void sayPending() {
  std::lock_guard<std::mutex> G(g().Mtx);
  for (auto &C : g().Copies)
    say("  copy op #%llu waits for%s", (unsigned long long)C->Op, signalList(C->Deps).c_str());
  for (Queue *Q : g().Queues) {
    if (Q->Destroyed || Q->Read.load() >= Q->Rung.load())
      continue;
    uint64_t R = Q->Read.load();
    std::vector<Signal *> Deps;
    if ((headerOf(*Q, R) & 0xff) == HSA_PACKET_TYPE_BARRIER_AND) {
      hsa_barrier_and_packet_t P;
      memcpy(&P, Q->Ring + (R & (Q->Q.size - 1)) * 64, 64);
      for (auto &D : P.dep_signal)
        if (auto It = g().Signals.find(D.handle); D.handle && It != g().Signals.end())
          Deps.push_back(It->second);
    }
    say("  queue %llu: packets %llu to %llu, the first (type %u) waits for%s",
        (unsigned long long)Q->Id, (unsigned long long)R,
        (unsigned long long)Q->Rung.load() - 1, headerOf(*Q, R) & 0xffu, signalList(Deps).c_str());
  }
}

} // namespace hsafront

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
  // Left out: the parent's unannounced packets, while the child announced
  // nothing after them.
  if (Q->Rung.load() == Q->RungAtFork && R == Q->RungAtFork)
    W -= std::min(W - R, Q->UnannouncedAtFork);
  if (R < W)
    reportOp(Check::B, "hsa_queue_destroy of queue %llu with %llu packet(s) not processed",
                (unsigned long long)Q->Id, (unsigned long long)(W - R));
  Q->Work.requestStop(g().Wake);
  Q->Work.join();
  std::lock_guard<std::mutex> G(g().Mtx);
  Q->Destroyed = true;
  Q->Doorbell->Destroyed = true;
  g().LiveSignals--;
  g().InheritedSignals -= Q->Doorbell->Inherited;
  kleAtQueueDestroy(*Q);
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
