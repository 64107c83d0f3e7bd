//===-- KLEWait.h - Plugin waits that poll before they sleep ----- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Driver-neutral pieces of a plugin's host waits (the CUDA plugin uses them):
//  - pollThenBlock: poll a completion query for a bounded time, then fall
//    back to the driver's blocking wait, as the AMDGPU plugin's signal wait
//    does (LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT);
//  - KLECopyBackTy: small device-to-host copies into pageable memory staged
//    through pinned memory the plugin owns, so that the copy is asynchronous
//    and the bytes reach their destination when the queue completes.
// Why and the defaults: docs/DESIGN.md, "Waiting".
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEWAIT_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEWAIT_H

#include "Shared/Debug.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <pthread.h>
#include <thread>

namespace llvm::omp::target::plugin {

/// The CUDA plugin's default busy-wait budget, microseconds
/// (LIBOMPTARGET_CUDA_STREAM_BUSYWAIT; docs/DESIGN.md says why).
constexpr uint32_t DefaultCudaBusyWaitUs = 2000;
/// The default bound of a staged copy back, bytes
/// (LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX); the knob's maximum.
constexpr uint32_t DefaultCopyBackStagingMax = 4096;
constexpr uint32_t MaxCopyBackStagingMax = 65536;

/// Calls \p Query (returns a driver status) until it returns anything but
/// \p NotReady or \p BudgetUs microseconds have passed, yielding the core
/// between calls; returns that status. Then, or at once when BudgetUs is 0,
/// returns \p Block() (the driver's blocking wait). Thread-safe if Query and
/// Block are.
template <typename StatusT, typename QueryFn, typename BlockFn>
StatusT pollThenBlock(uint64_t BudgetUs, StatusT NotReady, QueryFn Query,
                      BlockFn Block) {
  if (BudgetUs) {
    using Clock = std::chrono::steady_clock;
    auto End = Clock::now() + std::chrono::microseconds(BudgetUs);
    for (;;) {
      StatusT S = Query();
      if (S != NotReady)
        return S;
      if (Clock::now() >= End)
        break;
      std::this_thread::yield();
    }
  }
  return Block();
}

/// Per device. Copies back of at most maxBytes() bytes into memory the
/// plugin has not pinned are staged: the driver copies into a pinned block
/// (asynchronous), and complete() copies the block to the destination once
/// the queue completed, in enqueue order, before the plugin reports the
/// queue done. The pending copies live in the queue's async info
/// (__tgt_async_info::KLEStagedCopies). Each size class keeps one spare
/// block outside the lock, so a copy back whose destination lies outside
/// every pinned range takes and returns a block without it. Thread-safe.
class KLECopyBackTy {
public:
  KLECopyBackTy() {
    // A forked child never sees the parent's pending copies complete: its
    // deinit must not keep the slabs for them.
    static std::once_flag Once;
    std::call_once(Once, [] {
      pthread_atfork(nullptr, nullptr, [] {
        ForkGeneration.fetch_add(1, std::memory_order_relaxed);
      });
    });
  }

  /// Returns pinned host memory of the given size, or nullptr.
  using AllocFnTy = llvm::function_ref<void *(size_t)>;
  using FreeFnTy = llvm::function_ref<void(void *)>;

  /// \p MaxBytes: the bound (0: nothing is staged).
  void setMaxBytes(size_t MaxBytes) { Max = MaxBytes; }
  size_t maxBytes() const { return Max; }

  /// The plugin pinned [\p P, P + \p Size) (host or managed memory): copies
  /// into it are direct. forgetPinned: it was freed.
  void notePinned(void *P, size_t Size) {
    std::lock_guard<std::mutex> L(M);
    Pinned[uintptr_t(P)] = Size;
    // The hull of every range noted so far (never shrunk).
    if (uintptr_t(P) < PinnedBegin.load(std::memory_order_relaxed))
      PinnedBegin.store(uintptr_t(P), std::memory_order_release);
    if (uintptr_t(P) + Size > PinnedEnd.load(std::memory_order_relaxed))
      PinnedEnd.store(uintptr_t(P) + Size, std::memory_order_release);
  }
  void forgetPinned(void *P) {
    std::lock_guard<std::mutex> L(M);
    Pinned.erase(uintptr_t(P));
  }

  /// A pinned block for a copy back of \p Size bytes to \p Dst, or nullptr
  /// (copy directly): Size is 0 or over the bound, Dst is pinned, or no
  /// pinned memory could be had (once \p Alloc failed, it is not called
  /// again). Enqueue the copy into the block, then call
  /// enqueued(), or release() if enqueuing failed.
  void *take(const void *Dst, size_t Size, AllocFnTy Alloc) {
    if (!Size || Size > Max)
      return nullptr;
    unsigned C = sizeClass(Size);
    uintptr_t D = uintptr_t(Dst);
    // Outside the hull of the pinned ranges, Dst is in none of them.
    if (D >= PinnedBegin.load(std::memory_order_acquire) &&
        D < PinnedEnd.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> L(M);
      if (isPinnedLocked(D, Size)) {
        ++Stats.Direct;
        return nullptr;
      }
    }
    if (void *B = Spare[C].exchange(nullptr, std::memory_order_acquire)) {
      Staged.fetch_add(1, std::memory_order_relaxed);
      return B;
    }
    std::lock_guard<std::mutex> L(M);
    auto &Free = FreeLists[C];
    // After one failed pinned allocation, no more are tried: each would be
    // a failing driver call per copy back.
    if (Free.empty() && !GrowFailed && !growLocked(C, Alloc))
      GrowFailed = true;
    if (Free.empty()) {
      ++Stats.NoMemory;
      return nullptr;
    }
    Staged.fetch_add(1, std::memory_order_relaxed);
    return Free.pop_back_val();
  }

  /// The copy into \p Block (from take()) was enqueued on \p AsyncInfo's
  /// queue (a __tgt_async_info, or a unit test's type with its Mutex and
  /// KLEStagedCopies). Takes AsyncInfo.Mutex.
  template <typename AsyncInfoT>
  void enqueued(AsyncInfoT &AsyncInfo, void *Block, void *Dst, size_t Size) {
    std::lock_guard<std::mutex> L(AsyncInfo.Mutex);
    AsyncInfo.KLEStagedCopies.push_back({Block, Dst, Size});
    Outstanding.fetch_add(1, std::memory_order_relaxed);
    EnqueueGeneration.store(ForkGeneration.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
  }
  /// Returns \p Block (from take(), for \p Size bytes) unused.
  void release(void *Block, size_t Size) {
    std::unique_lock<std::mutex> L(M, std::defer_lock);
    giveBack(Block, Size, L);
  }

  /// The queue of the async info whose staged copies are \p Pending
  /// completed (\p Ok) or failed: copies the staged bytes to their
  /// destinations, in enqueue order, if Ok; returns the blocks either way.
  /// The caller holds the async info's Mutex.
  template <typename StagedCopyT>
  void complete(llvm::SmallVectorImpl<StagedCopyT> &Pending, bool Ok) {
    if (Pending.empty())
      return;
    std::unique_lock<std::mutex> L(M, std::defer_lock);
    for (const auto &P : Pending) {
      if (Ok)
        std::memcpy(P.Dst, P.Block, P.Size);
      giveBack(P.Block, P.Size, L);
    }
    Outstanding.fetch_sub(Pending.size(), std::memory_order_relaxed);
    Pending.clear();
  }

  /// Device teardown: frees every block with \p Free and forgets every
  /// pinned range. While copies this process enqueued are still staged (an
  /// async info never seen complete: work left in flight at exit), no block
  /// is freed, so no copy lands in freed memory; the device's teardown
  /// reclaims them. Copies enqueued only before a fork() do not count in the
  /// child. Nothing else may run on this object meanwhile.
  void deinit(FreeFnTy Free) {
    std::lock_guard<std::mutex> L(M);
    bool PendingHere = Outstanding.load(std::memory_order_relaxed) &&
                       EnqueueGeneration.load(std::memory_order_relaxed) ==
                           ForkGeneration.load(std::memory_order_relaxed);
    if (!PendingHere)
      for (void *S : Slabs)
        Free(S);
    Slabs.clear();
    for (auto &F : FreeLists)
      F.clear();
    for (auto &S : Spare)
      S.store(nullptr, std::memory_order_relaxed);
    Pinned.clear();
  }

  struct StatsTy {
    uint64_t Staged = 0;   ///< copies back staged
    uint64_t Direct = 0;   ///< small copies back into pinned memory, direct
    uint64_t NoMemory = 0; ///< not staged: no pinned memory could be had
    uint64_t SlabBytes = 0; ///< pinned bytes held
  };
  StatsTy stats() {
    std::lock_guard<std::mutex> L(M);
    StatsTy S = Stats;
    S.Staged = Staged.load(std::memory_order_relaxed);
    return S;
  }

private:
  /// Blocks of 64 << C bytes; 64 << (NumClasses - 1) >= MaxCopyBackStagingMax.
  static constexpr unsigned NumClasses = 11;
  static constexpr size_t SlabBytes = 64 * 1024;

  static unsigned sizeClass(size_t Size) {
    unsigned C = 0;
    while ((size_t(64) << C) < Size)
      ++C;
    return C;
  }
  /// Puts \p Block into its class's spare, or into the free list (taking
  /// \p L, M's deferred lock, if it does not hold it yet) when the spare is
  /// occupied.
  void giveBack(void *Block, size_t Size, std::unique_lock<std::mutex> &L) {
    unsigned C = sizeClass(Size);
    void *Old = Spare[C].exchange(Block, std::memory_order_acq_rel);
    if (!Old)
      return;
    if (!L.owns_lock())
      L.lock();
    FreeLists[C].push_back(Old);
  }
  bool isPinnedLocked(uintptr_t P, size_t N) const {
    auto It = Pinned.upper_bound(P);
    if (It == Pinned.begin())
      return false;
    --It;
    return P - It->first < It->second && N <= It->second - (P - It->first);
  }
  /// Carves a new slab (64 KiB, or one block if larger) into class \p C.
  bool growLocked(unsigned C, AllocFnTy Alloc) {
    size_t BlockBytes = size_t(64) << C;
    size_t Bytes = BlockBytes > SlabBytes ? BlockBytes : SlabBytes;
    auto *S = static_cast<char *>(Alloc(Bytes));
    if (!S)
      return false;
    Slabs.push_back(S);
    Stats.SlabBytes += Bytes;
    for (size_t Off = 0; Off + BlockBytes <= Bytes; Off += BlockBytes)
      FreeLists[C].push_back(S + Off);
    return true;
  }

  std::mutex M;
  size_t Max = DefaultCopyBackStagingMax;
  bool GrowFailed = false;
  std::map<uintptr_t, size_t> Pinned;
  std::atomic<uintptr_t> PinnedBegin{UINTPTR_MAX}, PinnedEnd{0};
  llvm::SmallVector<void *, 64> FreeLists[NumClasses];
  /// Per class, one free block or null, taken and given by exchange.
  std::atomic<void *> Spare[NumClasses] = {};
  llvm::SmallVector<void *, 4> Slabs;
  /// Blocks taken and enqueued, not yet returned by complete().
  std::atomic<size_t> Outstanding{0};
  /// ForkGeneration at the last enqueued(); the count of fork()s this
  /// process descends from (incremented in each child).
  std::atomic<unsigned> EnqueueGeneration{0};
  static inline std::atomic<unsigned> ForkGeneration{0};
  std::atomic<uint64_t> Staged{0};
  StatsTy Stats;
};

/// LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX's value as a bound: above
/// MaxCopyBackStagingMax it prints one warning line and uses that maximum.
inline size_t copyBackStagingMax(uint32_t Value) {
  if (Value <= MaxCopyBackStagingMax)
    return Value;
  static std::once_flag Once;
  std::call_once(Once, [&] {
    MESSAGE("warning: LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX=%u is above %u "
            "bytes; using %u",
            unsigned(Value), unsigned(MaxCopyBackStagingMax),
            unsigned(MaxCopyBackStagingMax));
  });
  return MaxCopyBackStagingMax;
}

/// With LIBOMPTARGET_KLE_STATS=1, one line for device \p DeviceId:
/// "omptarget KLE stats: device N: copy back staged=S direct_pinned=D
/// no_memory=M staging_bytes=B".
inline void reportCopyBack(int DeviceId, KLECopyBackTy &C) {
  const char *E = std::getenv("LIBOMPTARGET_KLE_STATS");
  if (!E || std::strcmp(E, "1"))
    return;
  KLECopyBackTy::StatsTy S = C.stats();
  std::fprintf(stderr,
               "omptarget KLE stats: device %d: copy back staged=%llu "
               "direct_pinned=%llu no_memory=%llu staging_bytes=%llu\n",
               DeviceId, (unsigned long long)S.Staged,
               (unsigned long long)S.Direct, (unsigned long long)S.NoMemory,
               (unsigned long long)S.SlabBytes);
}

} // namespace llvm::omp::target::plugin

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEWAIT_H
