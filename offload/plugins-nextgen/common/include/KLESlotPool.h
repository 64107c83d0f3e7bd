//===- KLESlotPool.h - Pool of pinned kernel launch environment slots -----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Per-device pool of 128-byte slots in pinned host memory, each with a 64-byte
// device counter block, for the KLE transport (KLETransport.h). Driver-free:
// slabs come through KLESlabAllocatorTy. Rules: docs/DESIGN.md.
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

namespace llvm::omp::target::plugin {

/// Why a launch with a KLE takes upstream's copy path instead of a slot.
enum class KLEFallbackReasonTy : uint8_t {
  PoolExhausted = 0, ///< Every slot is in use and MaxSlots is reached.
  AllocationFailed,  ///< A slab allocation failed, or is backed off.
  RecordReplay,      ///< Recording: a host slot address would dangle.
  ImageABI,          ///< The image does not read the fork's KLE layout.
  TransportDisabled, ///< Unsupported by the device, or after deinit().
};
inline constexpr size_t KLENumFallbackReasons = 5;

/// Stable name of \p Reason ("PoolExhausted", ...) for the stats report.
llvm::StringRef toString(KLEFallbackReasonTy Reason);

/// Where slabs come from; sizes in bytes. Called only under the pool's growth
/// mutex, so an implementation may block but must not call the pool. Pinned
/// memory must be device-accessible at its host address and every allocation
/// 128-byte aligned (else the growth fails with AllocationFailed).
struct KLESlabAllocatorTy {
  virtual ~KLESlabAllocatorTy() = default;
  virtual llvm::Expected<void *> allocatePinned(size_t Size) = 0;
  virtual llvm::Error freePinned(void *HostPtr) = 0;
  /// Counter blocks; contents unspecified (see KLESlotTy::DeviceCounters).
  virtual llvm::Expected<void *> allocateDevice(size_t Size) = 0;
  virtual llvm::Error freeDevice(void *DevPtr) = 0;
};

/// Slab geometry: FirstSlabSlots, then twice the previous slab up to
/// MaxSlabSlots, the last one shrunk so the pool never exceeds MaxSlots.
struct KLESlotPoolConfigTy {
  uint32_t MaxSlots = 12224; ///< 1 to 2^24; the default is 8 slabs.
  uint32_t FirstSlabSlots = 64;
  uint32_t MaxSlabSlots = 4096; ///< At least FirstSlabSlots.
};

/// A slot handed out by take(): a plain value, valid until its Id is
/// recycled or the pool is deinitialized.
struct KLESlotTy {
  /// SlotSize bytes, 128-byte aligned, read by the device at this address.
  /// Zero when the slab is created, then whatever the last holder left.
  void *HostPtr = nullptr;
  /// CounterBlockSize device bytes, 128-byte aligned within a slab's first
  /// block. Unspecified at creation: the first holder zeroes it.
  void *DeviceCounters = nullptr;
  /// Slot index and a per-take generation starting at a per-pool seed: ids
  /// of two takes differ; ids of two pools differ but with ~2^-32 chance.
  uint64_t Id = InvalidId;

  static constexpr uint64_t InvalidId = ~uint64_t(0);
  bool isValid() const { return Id != InvalidId; }
};

/// Counters, each read atomically; exact once the threads using the pool
/// are synchronized with.
struct KLESlotPoolStatsTy {
  uint64_t SlotsInUse = 0;          ///< Taken, not recycled; 0 after deinit.
  uint64_t PeakSlotsInUse = 0;      ///< Maximum of SlotsInUse.
  uint64_t SlabsAllocated = 0;      ///< Over the pool's life.
  uint64_t OutstandingAtDeinit = 0; ///< SlotsInUse when deinit() ran.
  /// Fallbacks by reason, noteFallback()'s included.
  std::array<uint64_t, KLENumFallbackReasons> Fallbacks = {};

  uint64_t getFallbacks(KLEFallbackReasonTy Reason) const {
    return Fallbacks[static_cast<size_t>(Reason)];
  }
};

/// Slabs grow by KLESlotPoolConfigTy's rule and are freed only by deinit().
/// A slot is handed out again only after recycle(), which the caller calls
/// once the work that reads the slot completed.
///
/// Thread-safety: take(), recycle(), noteFallback(), forEachFreeSlot() and
/// getStats() may run concurrently; take() of a free slot and recycle() are
/// lock-free. Growth runs under a mutex; a take() finding no free slot while
/// another thread grows waits for it. A holder's writes to a slot happen
/// before its next holder's take(). deinit() must not race with the others.
class KLESlotPoolTy {
public:
  static constexpr size_t SlotSize = 128;
  static constexpr size_t CounterBlockSize = 64;
  static constexpr uint32_t MaxSlotsLimit = uint32_t(1) << 24;

  /// An empty pool; nothing is allocated before the first take(). Returns an
  /// Error (invalid_argument) naming the first invalid field of \p Config.
  static llvm::Expected<std::unique_ptr<KLESlotPoolTy>>
  create(KLESlabAllocatorTy &Allocator, const KLESlotPoolConfigTy &Config);

  /// Calls deinit() and drops its Error; the allocator must still live.
  ~KLESlotPoolTy();
  KLESlotPoolTy(const KLESlotPoolTy &) = delete;
  KLESlotPoolTy &operator=(const KLESlotPoolTy &) = delete;

  /// A free slot, growing the pool by one slab if none is free. Never fails
  /// with an Error: returns an invalid slot and counts the reason
  /// (PoolExhausted, AllocationFailed, TransportDisabled after deinit()).
  /// After a failed growth the next 64 growing takes fall back without
  /// allocating, a window that doubles per consecutive failure up to 65536.
  KLESlotTy take();

  /// Put the slot \p SlotId back. Returns an Error (invalid_argument), and
  /// changes nothing, for an id this pool did not hand out, one already
  /// recycled (double or stale), or after deinit().
  llvm::Error recycle(uint64_t SlotId);

  /// Count a fallback the caller decided on.
  void noteFallback(KLEFallbackReasonTy Reason);

  /// Free every slab, with slots outstanding or not; returns the failed
  /// frees, joined. Afterwards take() and recycle() fail as above. Idempotent.
  llvm::Error deinit();

  /// Call \p Fn for each slot free when the call starts, held exclusively
  /// meanwhile (a concurrent take() may grow the pool instead). The slot's Id
  /// is invalid. \p Fn must not call take() or recycle(). Returns the number
  /// of slots visited (0 after deinit()). For rare paths.
  size_t forEachFreeSlot(llvm::function_ref<void(const KLESlotTy &)> Fn);

  KLESlotPoolStatsTy getStats() const;

private:
  KLESlotPoolTy(KLESlabAllocatorTy &Allocator,
                const KLESlotPoolConfigTy &Config);

  // Published by the grower before the slot is reachable; then only State
  // and Next change. State is (generation << 32) | in-use bit; Next is the
  // free-stack link, index + 1 of the slot below (0: bottom).
  struct SlotInfoTy {
    void *HostPtr = nullptr;
    void *DeviceCounters = nullptr;
    std::atomic<uint64_t> State{0};
    std::atomic<uint32_t> Next{0};
  };
  struct SlabTy {
    void *Pinned;
    void *Counters;
  };
  // Chunk K holds the slots with Index + 1 in [2^K, 2^(K+1)).
  static constexpr unsigned NumSlotChunks = 25;

  SlotInfoTy &slotInfo(uint32_t Index) const;
  bool popFree(uint32_t &Index);
  void pushFree(uint32_t First, uint32_t Last);
  bool consumeBackoff();
  KLESlotTy handOut(uint32_t Index);
  KLESlotTy takeSlow();
  bool growLocked(uint32_t &Reserved);
  uint32_t nextSlabSlotsLocked() const;
  KLESlotTy fallback(KLEFallbackReasonTy Reason);
  void count(std::atomic<uint64_t> &Counter, uint64_t N = 1) {
    Counter.fetch_add(N, std::memory_order_relaxed);
  }

  KLESlabAllocatorTy &Allocator;
  const KLESlotPoolConfigTy Config;
  const uint32_t GenerationSeed;

  // (ABA tag << 32) | (top index + 1); the tag changes on every push and pop.
  alignas(64) std::atomic<uint64_t> FreeHead{0};
  alignas(64) std::atomic<uint32_t> NumSlotsPublished{0};
  std::atomic<uint32_t> BackoffRemaining{0};
  std::atomic<bool> CapReached{false};
  std::atomic<bool> Deinitialized{false};
  std::array<std::atomic<SlotInfoTy *>, NumSlotChunks> SlotChunks{};

  alignas(64) std::atomic<uint64_t> SlotsInUse{0};
  std::atomic<uint64_t> PeakSlotsInUse{0};
  std::atomic<uint64_t> SlabsAllocated{0};
  std::atomic<uint64_t> OutstandingAtDeinit{0};
  std::array<std::atomic<uint64_t>, KLENumFallbackReasons> Fallbacks{};

  // Under GrowMutex.
  alignas(64) mutable std::mutex GrowMutex;
  std::array<std::unique_ptr<SlotInfoTy[]>, NumSlotChunks> ChunkOwners;
  llvm::SmallVector<SlabTy, 8> Slabs;
  uint32_t TotalSlots = 0;
  uint32_t LastSlabSlots = 0;
  uint32_t NextBackoff;
};

} // namespace llvm::omp::target::plugin

#endif // KLE_OFFLOAD_PLUGINS_COMMON_KLESLOTPOOL_H
