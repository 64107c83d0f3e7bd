//===- KLESlotPool.h - Pool of pinned kernel launch environment slots -----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Per-device pool of fixed-size slots in pinned, device-visible host memory,
// each with a small device counter block, for the KLE transport
// (KLETransport.h). Driver-free: slabs come through KLESlabAllocatorTy, as
// MemoryManager.h's pool draws through DeviceAllocatorTy. Rationale:
// docs/DESIGN.md, "The slot pool and a slot's lifetime".
//
// This header depends only on LLVM Support and the C++ standard library.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_OFFLOAD_PLUGINS_COMMON_KLESLOTPOOL_H
#define KLE_OFFLOAD_PLUGINS_COMMON_KLESLOTPOOL_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace kle {

/// Why a launch does not use a pool slot and falls back to upstream's copy
/// path (dataAlloc + dataSubmit of the KLE). The pool itself produces
/// PoolExhausted, AllocationFailed and TransportDisabled (the latter only
/// after deinit()); the plugin reports the others through
/// KLESlotPoolTy::noteFallback() so that all fallbacks appear in one place in
/// the statistics.
enum class KLEFallbackReasonTy : uint8_t {
  /// Every slot is in use and the pool may not grow (MaxSlabs / MaxSlots).
  PoolExhausted = 0,
  /// Growing the pool failed (pinned or device allocation failed, or the
  /// allocator returned memory the pool cannot align), or growth is backed
  /// off because of a recent failure.
  AllocationFailed,
  /// Record-replay is recording or replaying; a host KLE address would
  /// dangle in the replay process.
  RecordReplay,
  /// The device image's kernel-argument ABI does not carry dyn_ptr, or its
  /// KLE layout is not the one this runtime writes.
  ImageABI,
  /// The transport is disabled (by configuration, by the plugin, or because
  /// the pool was deinitialized).
  TransportDisabled,
};

/// Number of KLEFallbackReasonTy enumerators.
inline constexpr size_t KLENumFallbackReasons = 5;

/// Stable, human-readable name of \p Reason (e.g. "PoolExhausted"), for
/// debug output and statistics.
llvm::StringRef toString(KLEFallbackReasonTy Reason);

/// Narrow per-device allocator the pool draws slabs from. Implemented by the
/// plugin layer over dataAlloc(TARGET_ALLOC_HOST) / device memory, and by a
/// fake in the unit tests. The pool calls these methods only while holding
/// its internal growth mutex (from the take() that grows the pool, and from
/// deinit()), so an implementation must not call back into the pool; it may
/// block, which delays only that take() (see KLESlotPoolTy, Thread-safety).
/// All sizes are in bytes. The pool never dereferences device addresses.
struct KLESlabAllocatorTy {
  virtual ~KLESlabAllocatorTy() = default;

  /// Allocate \p Size bytes of pinned, device-visible host memory (CUDA
  /// cuMemAllocHost, AMDGPU fine-grained host pool). The pool aligns slots
  /// itself, see KLESlotPoolConfigTy::AllocatorAlignment.
  virtual llvm::Expected<void *> allocatePinned(size_t Size) = 0;

  /// Free memory returned by allocatePinned(); \p HostPtr is exactly the
  /// pointer allocatePinned() returned.
  virtual llvm::Error freePinned(void *HostPtr) = 0;

  /// Allocate \p Size bytes of device memory for the per-slot reduction
  /// counter blocks. Contents unspecified: the pool never reads them, and
  /// the holder zeroes a slot's block before the slot's first use
  /// (KLESlotTy::DeviceCounters), so growth makes no host-device transfer.
  virtual llvm::Expected<void *> allocateDevice(size_t Size) = 0;

  /// Free memory returned by allocateDevice(); \p DevPtr is exactly the
  /// pointer allocateDevice() returned.
  virtual llvm::Error freeDevice(void *DevPtr) = 0;

  /// Device address of pinned host memory (identity under unified
  /// addressing). The pool calls it once per slab with the base pointer
  /// allocatePinned() returned and derives slot addresses by adding the same
  /// byte offset on the host and the device side, i.e. it assumes the
  /// mapping is linear within one allocation.
  virtual void *getDevicePointer(void *HostPtr) { return HostPtr; }
};

/// Pool geometry and limits. Validated by KLESlotPoolTy::create().
struct KLESlotPoolConfigTy {
  /// Bytes per slot. Must be a multiple of KLESlotPoolTy::SlotAlignment (128,
  /// the GPU coherence granule) and at least 128, and must hold the KLE.
  size_t SlotSize = 128;

  /// Bytes of device memory per slot for the reduction counters.
  /// Must be a non-zero multiple of 8 and at most 4096. Counter blocks of one
  /// slab are contiguous, and the first one is 128-byte aligned.
  size_t CounterBlockSize = 64;

  /// Slots in the first slab. At least 1.
  uint32_t InitialSlotsPerSlab = 64;

  /// Each new slab has GrowthFactor times the slots of the previous one (1 =
  /// constant slab size), clamped to MaxSlotsPerSlab and to the MaxSlots
  /// budget left. At least 1.
  uint32_t GrowthFactor = 2;

  /// Upper bound on the slots of one slab. At least InitialSlotsPerSlab.
  uint32_t MaxSlotsPerSlab = 4096;

  /// Upper bound on the number of slabs the pool allocates over its life
  /// (slabs are never freed before deinit()). At least 1.
  uint32_t MaxSlabs = 8;

  /// Upper bound on the total number of slots; 0 means "only MaxSlabs bounds
  /// the pool". The last slab is shrunk to respect it.
  uint32_t MaxSlots = 0;

  /// Alignment in bytes (a power of two) that the allocator guarantees for
  /// allocatePinned() and allocateDevice(), and that
  /// getDevicePointer() preserves. If it is below 128 the pool asks for
  /// (128 - AllocatorAlignment) extra bytes per allocation and aligns inside
  /// it; if the allocator breaks its promise the slab is freed and the take()
  /// falls back with AllocationFailed. 1 (the default) makes no assumption;
  /// plugins whose allocator returns page-aligned memory can pass 4096 to
  /// avoid the padding.
  size_t AllocatorAlignment = 1;

  /// After a failed growth attempt, the next this-many takes that would have
  /// to grow the pool fall back with AllocationFailed without calling the
  /// allocator. Each further consecutive failure doubles the window, up to
  /// MaxAllocFailureBackoff; a successful growth resets it. 0 retries on
  /// every take.
  uint32_t AllocFailureBackoff = 64;

  /// Upper bound of the doubling backoff window. At least
  /// AllocFailureBackoff.
  uint32_t MaxAllocFailureBackoff = 65536;
};

/// Slabs that \p Config's growth rule (InitialSlotsPerSlab slots, then
/// GrowthFactor times the previous slab, at most MaxSlotsPerSlab) takes to
/// hold at least \p Slots slots, ignoring MaxSlabs and MaxSlots: the
/// MaxSlabs needed for a MaxSlots cap to be reachable. At least 1; for
/// configurations that KLESlotPoolTy::create accepts.
uint32_t slabsToReach(const KLESlotPoolConfigTy &Config, uint64_t Slots);

/// A slot handed out by KLESlotPoolTy::take(). A plain value; copying it does
/// not duplicate ownership. It stays valid until it is passed to
/// KLESlotPoolTy::recycle() or the pool is deinitialized.
struct KLESlotTy {
  /// Host address of the slot's SlotSize bytes, 128-byte aligned: the host
  /// writes the KLE here. Zero when the slab is created; afterwards whatever
  /// the previous user left (bytes the device never reads may carry the
  /// holder's own per-slot state from one take to the next).
  void *HostPtr = nullptr;

  /// Device address of the same bytes, 128-byte aligned: the kernel's dyn_ptr.
  void *DevicePtr = nullptr;

  /// Device address of this slot's CounterBlockSize-byte counter block.
  /// Unspecified when the slab is created: the first holder that uses it
  /// zeroes it (KLETransportTy: one stream-ordered copy of zeros on the first
  /// launch's queue, ahead of the kernel, tracked in the slot's host-private
  /// bytes). Afterwards the device's last team leaves it zero, so the host
  /// never re-zeroes it.
  void *DeviceCounters = nullptr;

  /// Opaque identity: slot index and a per-take generation that starts at a
  /// per-pool seed. Two takes of the same slot yield different ids, and ids of
  /// different pools differ except with probability about 2^-32. Enough on
  /// its own to recycle the slot (KLESlotPoolTy::recycle(uint64_t)).
  uint64_t Id = InvalidId;

  static constexpr uint64_t InvalidId = ~uint64_t(0);

  bool isValid() const { return Id != InvalidId; }
};

/// Result of KLESlotPoolTy::take(): either a slot or the reason to fall back.
class KLETakeResultTy {
public:
  /* implicit */ KLETakeResultTy(const KLESlotTy &Slot) : Slot(Slot) {}
  /* implicit */ KLETakeResultTy(KLEFallbackReasonTy Reason) : Reason(Reason) {}

  /// True if a slot was handed out.
  explicit operator bool() const { return Slot.isValid(); }

  /// The slot; only meaningful if the result converts to true.
  const KLESlotTy &operator*() const { return Slot; }
  const KLESlotTy *operator->() const { return &Slot; }

  /// The fallback reason; only meaningful if the result converts to false.
  KLEFallbackReasonTy getFallbackReason() const { return Reason; }

private:
  KLESlotTy Slot;
  KLEFallbackReasonTy Reason = KLEFallbackReasonTy::PoolExhausted;
};

/// Snapshot of the pool's counters. Each counter is read atomically, but not
/// all at the same instant: while other threads take and recycle slots, a
/// snapshot may mix counters from slightly different moments (e.g.
/// SlotsTaken - SlotsRecycled may differ from SlotsInUse by the operations in
/// flight). Once those threads are joined (or otherwise synchronized with),
/// the snapshot is exact and consistent.
struct KLESlotPoolStatsTy {
  /// Successful take() calls.
  uint64_t SlotsTaken = 0;
  /// Successful recycle() calls.
  uint64_t SlotsRecycled = 0;
  /// Slots handed out and not yet recycled (0 after deinit()).
  uint64_t SlotsInUse = 0;
  /// Maximum of SlotsInUse over the pool's life.
  uint64_t PeakSlotsInUse = 0;
  /// Slots in the live slabs (0 after deinit()).
  uint64_t SlotCapacity = 0;
  /// Slabs allocated over the pool's life (never decreases).
  uint64_t SlabsAllocated = 0;
  /// Slabs currently live (0 after deinit()).
  uint64_t SlabsLive = 0;
  /// Fallbacks by reason, indexed by KLEFallbackReasonTy; includes those
  /// reported with noteFallback().
  std::array<uint64_t, KLENumFallbackReasons> Fallbacks = {};
  /// recycle() calls rejected with an Error (double, stale or foreign).
  uint64_t RecycleErrors = 0;
  /// Allocator calls that failed (pinned or device) while growing.
  uint64_t AllocationFailures = 0;
  /// Slots still outstanding when deinit() ran.
  uint64_t OutstandingAtDeinit = 0;
  /// Bytes currently held from allocatePinned(), padding included.
  uint64_t BytesPinned = 0;
  /// Bytes currently held from allocateDevice(), padding included.
  uint64_t BytesDevice = 0;

  uint64_t getFallbacks(KLEFallbackReasonTy Reason) const {
    return Fallbacks[static_cast<size_t>(Reason)];
  }
  uint64_t getTotalFallbacks() const {
    uint64_t Sum = 0;
    for (uint64_t N : Fallbacks)
      Sum += N;
    return Sum;
  }
};

/// Per-device pool of KLE slots.
///
/// A slab is one allocatePinned() call of N slots of SlotSize bytes plus one
/// allocateDevice() call of their N counter blocks of CounterBlockSize bytes;
/// slot addresses and each slab's first counter block are 128-byte aligned.
/// Slabs grow geometrically up to the configured caps and are freed only by
/// deinit(). A slot is handed out again only after recycle(); the caller
/// recycles it once the work that reads it completed, and should not recycle
/// a slot whose kernel may have stopped mid-reduction (leaking it until
/// deinit() is safe).
///
/// Thread-safety: take(), recycle(), noteFallback(), forEachFreeSlot() and
/// getStats() may run concurrently. take() with a free slot and every
/// recycle() are lock-free (a tagged free stack and a compare-and-swap on the
/// slot's state word, which rejects double, stale and foreign recycles);
/// growth runs under a try-locked mutex, and a take() that finds no free slot
/// while another thread grows waits for that growth. A holder's writes to a
/// slot before recycle() are visible to its next holder. deinit() must not
/// race with take() or recycle(); afterwards both fail as documented. The
/// allocator must outlive the pool; the destructor calls deinit() and drops
/// its Error.
class KLESlotPoolTy {
public:
  /// Alignment in bytes of every slot (host and device address) and of each
  /// slab's first counter block: the GPU coherence granule.
  static constexpr size_t SlotAlignment = 128;

  /// Validate \p Config and create an empty pool that draws from
  /// \p Allocator. No memory is allocated until the first take(). Returns an
  /// Error (std::errc::invalid_argument) describing the first invalid field.
  static llvm::Expected<std::unique_ptr<KLESlotPoolTy>>
  create(KLESlabAllocatorTy &Allocator, const KLESlotPoolConfigTy &Config);

  ~KLESlotPoolTy();
  KLESlotPoolTy(const KLESlotPoolTy &) = delete;
  KLESlotPoolTy &operator=(const KLESlotPoolTy &) = delete;

  /// Hand out a free slot, growing the pool by one slab if none is free and
  /// the caps allow. Never returns an Error: exhaustion, a failed or
  /// backed-off allocation, and use after deinit() yield a fallback reason
  /// (PoolExhausted, AllocationFailed, TransportDisabled), which is counted.
  /// If no slot is free while another thread is growing the pool, it waits
  /// for that growth and takes a slot of the new slab. A slot is not handed
  /// out again until it has been recycled.
  KLETakeResultTy take();

  /// Return \p Slot to the free list. Call only after completion of all work
  /// that reads the slot or its counters was observed. Returns an Error
  /// (std::errc::invalid_argument), counted in RecycleErrors and leaving the
  /// pool unchanged, if \p Slot was not handed out by this pool, was already
  /// released (including a stale copy of a handle whose slot was since taken
  /// again), or the pool was deinitialized.
  llvm::Error recycle(const KLESlotTy &Slot);

  /// Same as recycle(const KLESlotTy &) for callers that keep only the
  /// handle's Id (what __tgt_async_info keeps: one word per pending slot,
  /// until the queue completes). The index and generation in \p SlotId are
  /// checked, so double and stale recycles are detected; a foreign id is
  /// detected through the per-pool generation seed (all but ~2^-32 of the
  /// time), as the slot's pointers are not available for comparison.
  llvm::Error recycle(uint64_t SlotId);

  /// Count a fallback the caller decided on (e.g. RecordReplay, ImageABI,
  /// TransportDisabled) so that all fallbacks appear in getStats().
  void noteFallback(KLEFallbackReasonTy Reason);

  /// Free every slab and counter block, including slabs with slots still
  /// outstanding (their number is recorded in OutstandingAtDeinit). Every
  /// allocation is freed even if some frees fail; the failures are joined
  /// into the returned Error. Afterwards take() returns TransportDisabled and
  /// recycle() returns an Error. Calling it again is a no-op.
  llvm::Error deinit();

  /// Call \p Fn once for every slot that is free when the call starts, with
  /// the slot held exclusively while Fn runs: the free slots are taken off
  /// the free stack together and put back in the same order afterwards, so
  /// no take() hands one out meanwhile (a take() that finds the stack empty
  /// in that window grows the pool or falls back, as under load). The slot
  /// passed has HostPtr, DevicePtr and DeviceCounters set and an invalid Id
  /// (it is not a handle: it cannot be recycled). Fn may read and write the
  /// slot's host bytes, e.g. give back a per-slot cache kept there, and must
  /// not call take() or recycle(). Not counted as takes. Returns the number
  /// of slots visited; 0 after deinit(). Lock-free with respect to take()
  /// and recycle(); calls from several threads each see a subset of the
  /// free slots. Meant for rare paths (a failed device allocation).
  size_t forEachFreeSlot(llvm::function_ref<void(const KLESlotTy &)> Fn);

  /// Thread-safe, lock-free snapshot of the counters (see
  /// KLESlotPoolStatsTy for its consistency under concurrency).
  KLESlotPoolStatsTy getStats() const;

private:
  KLESlotPoolTy(KLESlabAllocatorTy &Allocator,
                const KLESlotPoolConfigTy &Config);

  /// Per-slot bookkeeping. Lives in a chunk that is never reallocated nor
  /// freed before the destructor, so it is read without a lock.
  struct SlotInfoTy {
    /// Written once by the grower before the slot is published (through
    /// NumSlotsPublished and the free stack); immutable afterwards.
    void *HostPtr = nullptr;
    void *DevicePtr = nullptr;
    void *DeviceCounters = nullptr;
    /// (Generation << 32) | InUse. Generation starts at GenerationSeed and is
    /// incremented by each take; it is the high half of the handle's Id. Set
    /// by the thread that popped the slot off the free stack; cleared by the
    /// one recycle() whose compare-and-swap from (Id's generation, in use)
    /// succeeds.
    std::atomic<uint64_t> State{0};
    /// Free-stack link: index + 1 of the slot below this one, 0 at the
    /// bottom. Meaningful only while the slot is on the free stack.
    std::atomic<uint32_t> Next{0};
  };

  /// One pinned allocation and its counter allocation, as the allocator
  /// returned them (unaligned), for freeing.
  struct SlabTy {
    void *PinnedBase;
    void *CounterBase;
    size_t PinnedBytes;
    size_t DeviceBytes;
  };

  /// Slot bookkeeping is kept in chunks indexed by slot index: chunk K holds
  /// the 2^K slots with Index + 1 in [2^K, 2^(K+1)) (fewer if the pool can
  /// never hold that many), so a lookup is a bit scan and two loads, and
  /// slot indices below 2^31 need at most 32 chunks.
  static constexpr unsigned NumSlotChunks = 32;

  /// Counters updated outside the growth mutex (relaxed atomics).
  struct AtomicStatsTy {
    std::atomic<uint64_t> SlotsTaken{0};
    std::atomic<uint64_t> SlotsRecycled{0};
    std::atomic<uint64_t> SlotsInUse{0};
    std::atomic<uint64_t> PeakSlotsInUse{0};
    std::atomic<uint64_t> SlotCapacity{0};
    std::atomic<uint64_t> SlabsAllocated{0};
    std::atomic<uint64_t> SlabsLive{0};
    std::array<std::atomic<uint64_t>, KLENumFallbackReasons> Fallbacks{};
    std::atomic<uint64_t> RecycleErrors{0};
    std::atomic<uint64_t> AllocationFailures{0};
    std::atomic<uint64_t> OutstandingAtDeinit{0};
    std::atomic<uint64_t> BytesPinned{0};
    std::atomic<uint64_t> BytesDevice{0};
  };

  /// The slot with index \p Index, which must be below NumSlotsPublished as
  /// observed (with acquire) by the caller or implied by the free stack.
  SlotInfoTy &slotInfo(uint32_t Index) const;

  /// Pop the free stack; false if it is empty. Lock-free.
  bool popFree(uint32_t &Index);

  /// Push the chain \p First .. \p Last (already linked through Next from
  /// First down to Last) on the free stack. Lock-free.
  void pushFree(uint32_t First, uint32_t Last);

  /// Consume one unit of the allocation failure backoff, if any is left.
  /// Lock-free.
  bool consumeBackoff();

  /// Mark \p Index (just popped, or just created by the grower) as taken,
  /// count it, and build its handle.
  KLETakeResultTy handOut(uint32_t Index);

  /// The part of take() after the free stack was found empty.
  KLETakeResultTy takeSlow();

  /// Allocate one more slab, publish its slots, keep its first slot for the
  /// caller (returned in \p Reserved) and push the others on the free stack.
  /// Returns false (after counting) if it failed; requires GrowMutex.
  bool growLocked(uint32_t &Reserved);

  /// Slots the next slab gets, or 0 if the caps forbid growth; requires
  /// GrowMutex.
  uint32_t nextSlabSlotsLocked() const;

  /// Validate \p SlotId (and \p Slot's pointers if non-null) and put the slot
  /// back on the free list. Lock-free.
  llvm::Error recycleSlot(uint64_t SlotId, const KLESlotTy *Slot);

  /// Record a fallback and build the result.
  KLETakeResultTy fallback(KLEFallbackReasonTy Reason);

  /// Bytes of padding to request so an allocation can be aligned to
  /// SlotAlignment.
  size_t paddingBytes() const;

  KLESlabAllocatorTy &Allocator;
  const KLESlotPoolConfigTy Config;
  /// Most slots the pool can ever hold (MaxSlabs, MaxSlotsPerSlab, MaxSlots).
  const uint64_t MaxTotalSlots;
  /// Initial generation of every slot, distinct per pool instance, so that
  /// ids of different pools (almost surely) differ.
  const uint32_t GenerationSeed;

  /// Free stack head: (ABA tag << 32) | (top index + 1), 0 in the low half
  /// when empty. The tag is incremented by every successful push and pop,
  /// so a pop whose view of the top's Next went stale fails its
  /// compare-and-swap (unless exactly 2^32 other operations completed in
  /// between).
  alignas(64) std::atomic<uint64_t> FreeHead{0};

  /// Slots whose bookkeeping is published; recycle() rejects larger
  /// indices. Store-release by the grower after initializing them.
  alignas(64) std::atomic<uint32_t> NumSlotsPublished{0};
  /// Growth-needing takes left to skip before retrying the allocator. Set
  /// by the grower, decremented lock-free by consumeBackoff().
  std::atomic<uint32_t> BackoffRemaining{0};
  /// Set (never cleared) once the caps forbid growth.
  std::atomic<bool> CapReached{false};
  std::atomic<bool> Deinitialized{false};
  std::array<std::atomic<SlotInfoTy *>, NumSlotChunks> SlotChunks{};

  alignas(64) AtomicStatsTy Stats;

  /// Guards the growth path and deinit(): everything below, and the calls
  /// to the allocator. Never taken by take() when a slot is free, nor by
  /// recycle().
  alignas(64) mutable std::mutex GrowMutex;
  /// Owners of the SlotChunks arrays, freed by the destructor.
  std::array<std::unique_ptr<SlotInfoTy[]>, NumSlotChunks> ChunkOwners;
  llvm::SmallVector<SlabTy, 8> Slabs;
  /// Slots in the slabs allocated so far (index of the next new slot).
  uint32_t TotalSlots = 0;
  /// Slot count of the last slab allocated (0 before the first).
  uint32_t LastSlabSlots = 0;
  /// Window to apply after the next failure.
  uint32_t NextBackoff;
};

} // namespace kle

#endif // KLE_OFFLOAD_PLUGINS_COMMON_KLESLOTPOOL_H
