//===- KLEMapOrder.h - Order a map entry's transfers across queues -*- C++ -*-===//
//
// kle-offload.  A mapped entry's transfer (its first host-to-device copy, a
// pointer attachment, its last copy back) must be complete before another
// queue uses the entry's device memory (LIBOMPTARGET_MAP_FORCE_ATOMIC).
// Upstream records an event after every such transfer and makes every later
// user of the entry wait on it, also on the queue that recorded it, where
// stream order already holds: two records and one wait per synchronous region
// with a tofrom map.  Instead the entry remembers the queue of its last
// transfer and a transfer id of the async info that enqueued it; a user on
// another queue records the event on that queue when it needs it (while that
// async info has not completed; the first such user only) and waits on it.
// Recording later than the transfer orders the user after everything on that
// queue by then: never less than upstream's ordering, sometimes more.
//
// Transfer ids grow: an async info takes one at its first transfer, after it
// acquired its queue, so after every earlier holder of that queue took its
// own; a queue's completed id is the largest id of an async info that held it
// and completed.  An id at most that is complete, whenever the completion
// was recorded (also after the queue went back to its pool).
//
// Thread safety: noteTransfer and needsWait run with the entry locked (as
// upstream's addEventIfNecessary and waits); the table is thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef OMPTARGET_OPENMP_KLE_MAP_ORDER_H
#define OMPTARGET_OPENMP_KLE_MAP_ORDER_H

#include "llvm/ADT/DenseMap.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace llvm::omp::target::maporder {

/// Per queue (a plugin's __tgt_async_info::Queue), the largest transfer id
/// of an async info that held it and completed. The first NumSlots queues
/// seen get a slot found and updated without a lock (a queue's slot is
/// claimed once and never freed); later ones go to a map under a mutex.
/// Thread-safe.
class TransfersTy {
public:
  uint64_t newId() { return Next.fetch_add(1, std::memory_order_relaxed) + 1; }

  uint64_t completedId(void *Queue) {
    bool Full;
    if (SlotTy *S = slot(Queue, /*Claim=*/false, Full))
      return S->Id.load(std::memory_order_acquire);
    if (!Full)
      return 0;
    std::lock_guard<std::mutex> L(M);
    auto It = Overflow.find(Queue);
    return It == Overflow.end() ? 0 : It->second;
  }

  void completed(void *Queue, uint64_t Id) {
    bool Full;
    if (SlotTy *S = slot(Queue, /*Claim=*/true, Full)) {
      uint64_t Cur = S->Id.load(std::memory_order_relaxed);
      while (Id > Cur && !S->Id.compare_exchange_weak(
                             Cur, Id, std::memory_order_release,
                             std::memory_order_relaxed))
        ;
      return;
    }
    std::lock_guard<std::mutex> L(M);
    uint64_t &D = Overflow[Queue];
    if (Id > D)
      D = Id;
  }

private:
  static constexpr size_t NumSlots = 256;
  struct SlotTy {
    std::atomic<void *> Queue{nullptr};
    std::atomic<uint64_t> Id{0};
  };

  /// \p Queue's slot (claiming a free one if \p Claim), or null; \p Full:
  /// every slot is another queue's, so Queue may be in Overflow. A reader
  /// that races with a claim may miss the slot: it then sees no completion,
  /// which only makes a user wait.
  SlotTy *slot(void *Queue, bool Claim, bool &Full) {
    uintptr_t H = reinterpret_cast<uintptr_t>(Queue);
    size_t I = ((H >> 4) ^ (H >> 9)) & (NumSlots - 1);
    Full = false;
    for (size_t N = 0; N < NumSlots; ++N, I = (I + 1) & (NumSlots - 1)) {
      void *Q = Slots[I].Queue.load(std::memory_order_acquire);
      if (!Q) {
        if (!Claim)
          return nullptr;
        if (Slots[I].Queue.compare_exchange_strong(Q, Queue,
                                                   std::memory_order_acq_rel))
          return &Slots[I];
        // Q is now the queue that claimed the slot first.
      }
      if (Q == Queue)
        return &Slots[I];
    }
    Full = true;
    return nullptr;
  }

  SlotTy Slots[NumSlots];
  std::atomic<uint64_t> Next{0};
  std::mutex M;
  llvm::DenseMap<void *, uint64_t> Overflow;
};

/// The process's table (never destroyed: async infos complete during exit).
inline TransfersTy &transfers() {
  static auto *T = new TransfersTy();
  return *T;
}

/// Where a map entry's last transfer was enqueued.
struct LastTransferTy {
  void *Queue = nullptr; ///< null: nothing another queue must wait for
  uint64_t Id = 0;       ///< the transfer id of the async info that did it
  /// The entry's event was recorded on Queue since the transfer: later
  /// users wait on that record, which already follows the transfer.
  bool EventRecorded = false;
};

/// After a transfer for the entry on \p Queue (null: it completed already)
/// by an async info whose transfer id is \p AsyncId (0: none yet; assigned).
inline void noteTransfer(LastTransferTy &T, void *Queue, uint64_t &AsyncId) {
  if (Queue && !AsyncId)
    AsyncId = transfers().newId();
  T.Queue = Queue;
  T.Id = Queue ? AsyncId : 0;
  T.EventRecorded = false;
}

/// Whether a user of the entry on \p Queue (null: none yet) must wait for its
/// last transfer, on T.Queue: not on the same queue, nor once the async info
/// that enqueued it completed (then T is cleared).
inline bool needsWait(LastTransferTy &T, void *Queue) {
  if (!T.Queue || T.Queue == Queue)
    return false;
  if (transfers().completedId(T.Queue) >= T.Id) {
    T.Queue = nullptr;
    return false;
  }
  return true;
}

/// The async info that held \p Queue and transfer id \p AsyncId completed
/// (a synchronization or query that emptied it); its id is reset.
inline void asyncInfoCompleted(void *Queue, uint64_t &AsyncId) {
  if (Queue && AsyncId)
    transfers().completed(Queue, AsyncId);
  AsyncId = 0;
}

} // namespace llvm::omp::target::maporder

#endif // OMPTARGET_OPENMP_KLE_MAP_ORDER_H
