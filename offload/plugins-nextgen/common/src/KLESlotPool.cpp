//===- KLESlotPool.cpp - Pool of pinned kernel launch environment slots ---===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Implementation of the per-device KLE slot pool; see KLESlotPool.h.
//
//===----------------------------------------------------------------------===//

#include "KLESlotPool.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <limits>
#include <system_error>

using namespace llvm;

namespace kle {

static_assert(KLENumFallbackReasons ==
                  static_cast<size_t>(KLEFallbackReasonTy::TransportDisabled) +
                      1,
              "KLENumFallbackReasons out of sync with KLEFallbackReasonTy");

StringRef toString(KLEFallbackReasonTy Reason) {
  switch (Reason) {
  case KLEFallbackReasonTy::PoolExhausted:
    return "PoolExhausted";
  case KLEFallbackReasonTy::AllocationFailed:
    return "AllocationFailed";
  case KLEFallbackReasonTy::RecordReplay:
    return "RecordReplay";
  case KLEFallbackReasonTy::ImageABI:
    return "ImageABI";
  case KLEFallbackReasonTy::TransportDisabled:
    return "TransportDisabled";
  }
  return "Unknown";
}

/// Largest number of slots a pool may ever hold; keeps slot indices well
/// inside the 32 bits of KLESlotTy::Id reserved for them.
static constexpr uint64_t MaxPoolSlots = uint64_t(1) << 31;

static Error invalidConfig(const Twine &Msg) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           "invalid KLE slot pool configuration: " + Msg);
}

static Error invalidRelease(const Twine &Msg) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           "invalid KLE slot recycle: " + Msg);
}

static uintptr_t alignUpPtr(uintptr_t Ptr, size_t Align) {
  return (Ptr + Align - 1) & ~uintptr_t(Align - 1);
}

static void *addBytes(void *Ptr, size_t Bytes) {
  return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(Ptr) + Bytes);
}

static bool isAligned(const void *Ptr, size_t Align) {
  return (reinterpret_cast<uintptr_t>(Ptr) & (Align - 1)) == 0;
}

/// A different generation seed for each pool instance (Fibonacci hashing of a
/// process-wide serial number).
static uint32_t nextPoolSeed() {
  static std::atomic<uint32_t> Serial{0};
  return (Serial.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B9u;
}

uint32_t slabsToReach(const KLESlotPoolConfigTy &Config, uint64_t Slots) {
  uint64_t Total = 0, Next = std::max<uint32_t>(Config.InitialSlotsPerSlab, 1);
  uint32_t Slabs = 0;
  do {
    Total += Next;
    ++Slabs;
    Next = std::min<uint64_t>(Next * std::max<uint32_t>(Config.GrowthFactor, 1),
                              std::max(Config.MaxSlotsPerSlab,
                                       Config.InitialSlotsPerSlab));
  } while (Total < Slots);
  return Slabs;
}

Expected<std::unique_ptr<KLESlotPoolTy>>
KLESlotPoolTy::create(KLESlabAllocatorTy &Allocator,
                      const KLESlotPoolConfigTy &Config) {
  if (Config.SlotSize < SlotAlignment || Config.SlotSize % SlotAlignment)
    return invalidConfig("SlotSize " + Twine(Config.SlotSize) +
                         " is not a non-zero multiple of " +
                         Twine(SlotAlignment));
  if (Config.CounterBlockSize == 0 || Config.CounterBlockSize % 8 ||
      Config.CounterBlockSize > 4096)
    return invalidConfig("CounterBlockSize " + Twine(Config.CounterBlockSize) +
                         " is not a multiple of 8 in [8, 4096]");
  if (Config.InitialSlotsPerSlab == 0)
    return invalidConfig("InitialSlotsPerSlab is 0");
  if (Config.GrowthFactor == 0)
    return invalidConfig("GrowthFactor is 0");
  if (Config.MaxSlotsPerSlab < Config.InitialSlotsPerSlab)
    return invalidConfig("MaxSlotsPerSlab " + Twine(Config.MaxSlotsPerSlab) +
                         " is below InitialSlotsPerSlab " +
                         Twine(Config.InitialSlotsPerSlab));
  if (Config.MaxSlabs == 0)
    return invalidConfig("MaxSlabs is 0");
  if (Config.AllocatorAlignment == 0 ||
      !isPowerOf2_64(Config.AllocatorAlignment))
    return invalidConfig("AllocatorAlignment " +
                         Twine(Config.AllocatorAlignment) +
                         " is not a power of two");
  if (Config.MaxAllocFailureBackoff < Config.AllocFailureBackoff)
    return invalidConfig("MaxAllocFailureBackoff is below AllocFailureBackoff");

  // Bound the total slot count so slot indices fit their 32 bits.
  uint64_t MaxTotal = uint64_t(Config.MaxSlabs) * Config.MaxSlotsPerSlab;
  if (Config.MaxSlots)
    MaxTotal = std::min<uint64_t>(MaxTotal, Config.MaxSlots);
  if (MaxTotal > MaxPoolSlots)
    return invalidConfig("the pool could hold " + Twine(MaxTotal) +
                         " slots, more than " + Twine(MaxPoolSlots) +
                         "; lower MaxSlabs, MaxSlotsPerSlab or MaxSlots");

  // The largest slab's byte sizes must not overflow size_t.
  uint64_t MaxSlabSlots = std::min<uint64_t>(Config.MaxSlotsPerSlab, MaxTotal);
  bool Overflow = false;
  uint64_t PinnedBytes =
      SaturatingMultiply<uint64_t>(MaxSlabSlots, Config.SlotSize, &Overflow);
  if (Overflow || PinnedBytes + SlotAlignment >
                      uint64_t(std::numeric_limits<size_t>::max()) / 2)
    return invalidConfig("MaxSlotsPerSlab * SlotSize overflows");

  return std::unique_ptr<KLESlotPoolTy>(new KLESlotPoolTy(Allocator, Config));
}

/// Most slots a pool with \p Config can ever hold.
static uint64_t maxTotalSlots(const KLESlotPoolConfigTy &Config) {
  uint64_t MaxTotal = uint64_t(Config.MaxSlabs) * Config.MaxSlotsPerSlab;
  if (Config.MaxSlots)
    MaxTotal = std::min<uint64_t>(MaxTotal, Config.MaxSlots);
  return MaxTotal;
}

KLESlotPoolTy::KLESlotPoolTy(KLESlabAllocatorTy &Allocator,
                             const KLESlotPoolConfigTy &Config)
    : Allocator(Allocator), Config(Config),
      MaxTotalSlots(maxTotalSlots(Config)), GenerationSeed(nextPoolSeed()),
      NextBackoff(Config.AllocFailureBackoff) {
  assert(MaxTotalSlots <= MaxPoolSlots && "create() bounds the pool");
}

KLESlotPoolTy::~KLESlotPoolTy() {
  // The allocator must still be alive here. Errors cannot be reported from a
  // destructor; callers that care call deinit() explicitly. The slot
  // bookkeeping chunks are freed with ChunkOwners.
  consumeError(deinit());
}

size_t KLESlotPoolTy::paddingBytes() const {
  if (Config.AllocatorAlignment >= SlotAlignment)
    return 0;
  return SlotAlignment - Config.AllocatorAlignment;
}

// Free-stack head encoding: (tag << 32) | (index + 1); low half 0 = empty.
static constexpr uint64_t TopMask = 0xffffffffu;
static uint64_t nextHead(uint64_t Head, uint32_t TopPlusOne) {
  return ((Head >> 32) + 1) << 32 | TopPlusOne;
}

// Slot state word: (generation << 32) | in-use bit.
static constexpr uint64_t InUseBit = 1;
static uint64_t stateWord(uint32_t Generation, bool InUse) {
  return uint64_t(Generation) << 32 | (InUse ? InUseBit : 0);
}

KLESlotPoolTy::SlotInfoTy &KLESlotPoolTy::slotInfo(uint32_t Index) const {
  const uint32_t N = Index + 1; // Index < 2^31, so no overflow.
  const unsigned Chunk = Log2_32(N);
  SlotInfoTy *Infos = SlotChunks[Chunk].load(std::memory_order_acquire);
  assert(Infos && "slot index not published");
  return Infos[N - (uint32_t(1) << Chunk)];
}

bool KLESlotPoolTy::popFree(uint32_t &Index) {
  // Acquire: the popped slot's bookkeeping (and its chunk pointer) and the
  // bytes its previous holder wrote before recycle() happen-before our use.
  uint64_t Head = FreeHead.load(std::memory_order_acquire);
  while (Head & TopMask) {
    const uint32_t Top = static_cast<uint32_t>(Head & TopMask) - 1;
    // If another thread pops Top (and maybe pushes it back with a different
    // Next) between this load and the CAS, the tag in FreeHead has changed
    // and the CAS fails; the value read here is then discarded.
    const uint32_t Next = slotInfo(Top).Next.load(std::memory_order_relaxed);
    if (FreeHead.compare_exchange_weak(Head, nextHead(Head, Next),
                                       std::memory_order_acquire,
                                       std::memory_order_acquire)) {
      Index = Top;
      return true;
    }
  }
  return false;
}

void KLESlotPoolTy::pushFree(uint32_t First, uint32_t Last) {
  SlotInfoTy &Bottom = slotInfo(Last);
  uint64_t Head = FreeHead.load(std::memory_order_relaxed);
  do {
    Bottom.Next.store(static_cast<uint32_t>(Head & TopMask),
                      std::memory_order_relaxed);
    // Release: everything written to the slots (their bookkeeping, their
    // bytes by the last holder) happens-before a later pop's acquire. Every
    // later push and pop is a read-modify-write of FreeHead, so they extend
    // this release sequence.
  } while (!FreeHead.compare_exchange_weak(Head, nextHead(Head, First + 1),
                                           std::memory_order_release,
                                           std::memory_order_relaxed));
}

size_t
KLESlotPoolTy::forEachFreeSlot(llvm::function_ref<void(const KLESlotTy &)> Fn) {
  if (Deinitialized.load(std::memory_order_acquire))
    return 0;
  // Popping gives exclusive ownership, as for take(); the state word is left
  // free, so a stale recycle() still fails its compare-and-swap.
  llvm::SmallVector<uint32_t, 64> Held;
  uint32_t Index;
  while (popFree(Index))
    Held.push_back(Index);
  for (uint32_t I : Held) {
    const SlotInfoTy &Info = slotInfo(I);
    KLESlotTy Slot;
    Slot.HostPtr = Info.HostPtr;
    Slot.DevicePtr = Info.DevicePtr;
    Slot.DeviceCounters = Info.DeviceCounters;
    Fn(Slot);
  }
  if (Held.empty())
    return 0;
  // Back as one chain, top first, so the stack keeps its order.
  for (size_t K = 0; K + 1 < Held.size(); ++K)
    slotInfo(Held[K]).Next.store(Held[K + 1] + 1, std::memory_order_relaxed);
  pushFree(Held.front(), Held.back());
  return Held.size();
}

bool KLESlotPoolTy::consumeBackoff() {
  uint32_t Left = BackoffRemaining.load(std::memory_order_relaxed);
  while (Left)
    if (BackoffRemaining.compare_exchange_weak(Left, Left - 1,
                                               std::memory_order_relaxed))
      return true;
  return false;
}

uint32_t KLESlotPoolTy::nextSlabSlotsLocked() const {
  if (Slabs.size() >= Config.MaxSlabs)
    return 0;
  uint64_t N = LastSlabSlots == 0
                   ? uint64_t(Config.InitialSlotsPerSlab)
                   : uint64_t(LastSlabSlots) * Config.GrowthFactor;
  N = std::min<uint64_t>(N, Config.MaxSlotsPerSlab);
  if (Config.MaxSlots) {
    uint64_t Left = Config.MaxSlots > TotalSlots
                        ? uint64_t(Config.MaxSlots) - TotalSlots
                        : 0;
    N = std::min(N, Left);
  }
  return static_cast<uint32_t>(N);
}

bool KLESlotPoolTy::growLocked(uint32_t &Reserved) {
  uint32_t NumSlots = nextSlabSlotsLocked();
  assert(NumSlots && "growLocked called with growth forbidden");

  auto Fail = [&](Error Err) {
    // A failed allocation is not an error for the caller: it falls back to
    // the copy path. Drop the detail; the failure is counted.
    consumeError(std::move(Err));
    Stats.AllocationFailures.fetch_add(1, std::memory_order_relaxed);
    // Skip the allocator for the next NextBackoff growth-needing takes, and
    // double the window for the next consecutive failure.
    BackoffRemaining.store(NextBackoff, std::memory_order_relaxed);
    NextBackoff = static_cast<uint32_t>(std::min<uint64_t>(
        uint64_t(NextBackoff) * 2, Config.MaxAllocFailureBackoff));
    return false;
  };

  const size_t Padding = paddingBytes();
  const size_t PinnedBytes = size_t(NumSlots) * Config.SlotSize + Padding;
  const size_t DeviceBytes =
      size_t(NumSlots) * Config.CounterBlockSize + Padding;

  Expected<void *> PinnedOrErr = Allocator.allocatePinned(PinnedBytes);
  if (!PinnedOrErr)
    return Fail(PinnedOrErr.takeError());
  void *PinnedBase = *PinnedOrErr;
  if (!PinnedBase)
    return Fail(createStringError("allocatePinned returned null"));

  Expected<void *> CountersOrErr = Allocator.allocateDevice(DeviceBytes);
  if (!CountersOrErr || !*CountersOrErr) {
    // Do not leak the pinned slab.
    Error Err = CountersOrErr ? createStringError("allocateDevice "
                                                  "returned null")
                              : CountersOrErr.takeError();
    Err = joinErrors(std::move(Err), Allocator.freePinned(PinnedBase));
    return Fail(std::move(Err));
  }
  void *CounterBase = *CountersOrErr;

  // Align inside the allocations. Host and device addresses of the pinned
  // slab are offset by the same amount, so the allocator's device mapping
  // must preserve alignment modulo SlotAlignment.
  uintptr_t HostRaw = reinterpret_cast<uintptr_t>(PinnedBase);
  size_t HostOffset = alignUpPtr(HostRaw, SlotAlignment) - HostRaw;
  uintptr_t CounterRaw = reinterpret_cast<uintptr_t>(CounterBase);
  size_t CounterOffset = alignUpPtr(CounterRaw, SlotAlignment) - CounterRaw;
  void *HostAligned = addBytes(PinnedBase, HostOffset);
  void *DevAligned =
      addBytes(Allocator.getDevicePointer(PinnedBase), HostOffset);
  if (HostOffset > Padding || CounterOffset > Padding ||
      !isAligned(DevAligned, SlotAlignment)) {
    Error Err = createStringError(
        "allocator memory is less aligned than AllocatorAlignment");
    Err = joinErrors(std::move(Err), Allocator.freeDevice(CounterBase));
    Err = joinErrors(std::move(Err), Allocator.freePinned(PinnedBase));
    return Fail(std::move(Err));
  }
  void *CountersAligned = addBytes(CounterBase, CounterOffset);
  // Slots start zeroed, so a holder's per-slot state starts empty.
  std::memset(HostAligned, 0, size_t(NumSlots) * Config.SlotSize);

  // Make sure the bookkeeping chunks covering the new indices exist. A chunk
  // is published (release) before any of its slots is reachable.
  const uint32_t First = TotalSlots;
  const uint32_t Last = First + NumSlots - 1;
  for (unsigned C = Log2_32(First + 1); C <= Log2_32(Last + 1); ++C) {
    if (ChunkOwners[C])
      continue;
    const uint64_t Begin = (uint64_t(1) << C) - 1;
    const uint64_t Size =
        std::min<uint64_t>(uint64_t(1) << C, MaxTotalSlots - Begin);
    ChunkOwners[C].reset(new SlotInfoTy[Size]);
    SlotChunks[C].store(ChunkOwners[C].get(), std::memory_order_release);
  }
  for (uint32_t I = 0; I < NumSlots; ++I) {
    SlotInfoTy &Info = slotInfo(First + I);
    Info.HostPtr = addBytes(HostAligned, size_t(I) * Config.SlotSize);
    Info.DevicePtr = addBytes(DevAligned, size_t(I) * Config.SlotSize);
    Info.DeviceCounters =
        addBytes(CountersAligned, size_t(I) * Config.CounterBlockSize);
    Info.State.store(stateWord(GenerationSeed, false),
                     std::memory_order_relaxed);
    // Link First + 1 -> First + 2 -> ... -> Last so the LIFO hands out the
    // lowest address first; pushFree() links Last to the old top.
    Info.Next.store(First + I + 2, std::memory_order_relaxed);
  }

  Slabs.push_back({PinnedBase, CounterBase, PinnedBytes, DeviceBytes});
  TotalSlots += NumSlots;
  LastSlabSlots = NumSlots;
  BackoffRemaining.store(0, std::memory_order_relaxed);
  NextBackoff = Config.AllocFailureBackoff;
  Stats.SlabsAllocated.fetch_add(1, std::memory_order_relaxed);
  Stats.SlabsLive.fetch_add(1, std::memory_order_relaxed);
  Stats.SlotCapacity.fetch_add(NumSlots, std::memory_order_relaxed);
  Stats.BytesPinned.fetch_add(PinnedBytes, std::memory_order_relaxed);
  Stats.BytesDevice.fetch_add(DeviceBytes, std::memory_order_relaxed);

  // Release: recycle() may now look these indices up.
  NumSlotsPublished.store(TotalSlots, std::memory_order_release);
  // The caller keeps the first slot; the others become free for everyone.
  Reserved = First;
  if (NumSlots > 1)
    pushFree(First + 1, Last);
  return true;
}

KLETakeResultTy KLESlotPoolTy::fallback(KLEFallbackReasonTy Reason) {
  Stats.Fallbacks[static_cast<size_t>(Reason)].fetch_add(
      1, std::memory_order_relaxed);
  return KLETakeResultTy(Reason);
}

KLETakeResultTy KLESlotPoolTy::handOut(uint32_t Index) {
  SlotInfoTy &Info = slotInfo(Index);
  // Only the thread that popped the slot (or created it) writes its state
  // while it is free; releasers of stale ids only compare-and-swap against
  // an in-use word, which fails.
  const uint64_t Old = Info.State.load(std::memory_order_relaxed);
  assert(!(Old & InUseBit) && "free list holds a slot in use");
  const uint32_t Generation = static_cast<uint32_t>(Old >> 32) + 1;
  Info.State.store(stateWord(Generation, true), std::memory_order_relaxed);

  Stats.SlotsTaken.fetch_add(1, std::memory_order_relaxed);
  const uint64_t InUse =
      Stats.SlotsInUse.fetch_add(1, std::memory_order_relaxed) + 1;
  uint64_t Peak = Stats.PeakSlotsInUse.load(std::memory_order_relaxed);
  while (Peak < InUse && !Stats.PeakSlotsInUse.compare_exchange_weak(
                             Peak, InUse, std::memory_order_relaxed))
    ;

  KLESlotTy Slot;
  Slot.HostPtr = Info.HostPtr;
  Slot.DevicePtr = Info.DevicePtr;
  Slot.DeviceCounters = Info.DeviceCounters;
  Slot.Id = (uint64_t(Generation) << 32) | Index;
  return KLETakeResultTy(Slot);
}

KLETakeResultTy KLESlotPoolTy::take() {
  if (Deinitialized.load(std::memory_order_acquire))
    return fallback(KLEFallbackReasonTy::TransportDisabled);
  uint32_t Index;
  if (popFree(Index))
    return handOut(Index);
  return takeSlow();
}

KLETakeResultTy KLESlotPoolTy::takeSlow() {
  // Lock-free answers first: at the cap (set once the grower saw it), or
  // inside the failure backoff window (checked in this order, as the cap is
  // only reached by a successful growth, which clears the backoff).
  if (CapReached.load(std::memory_order_relaxed))
    return fallback(KLEFallbackReasonTy::PoolExhausted);
  if (consumeBackoff())
    return fallback(KLEFallbackReasonTy::AllocationFailed);

  std::unique_lock<std::mutex> Lock(GrowMutex, std::try_to_lock);
  uint32_t Index;
  if (!Lock.owns_lock()) {
    // Another thread is growing (or about to): take a slot if one was freed
    // or published meanwhile; else wait for that growth (this take needs a
    // slot that does not exist yet, which is not the steady state) and look
    // again below. Launches whose slots exist never get here.
    if (popFree(Index))
      return handOut(Index);
    Lock.lock();
  }

  if (Deinitialized.load(std::memory_order_relaxed))
    return fallback(KLEFallbackReasonTy::TransportDisabled);
  // A growth that finished between our pop and the lock may have left
  // slots; do not grow again for nothing.
  if (popFree(Index))
    return handOut(Index);
  if (nextSlabSlotsLocked() == 0) {
    CapReached.store(true, std::memory_order_relaxed);
    return fallback(KLEFallbackReasonTy::PoolExhausted);
  }
  // A failure just before we got the lock opened a backoff window.
  if (consumeBackoff())
    return fallback(KLEFallbackReasonTy::AllocationFailed);
  if (!growLocked(Index))
    return fallback(KLEFallbackReasonTy::AllocationFailed);
  return handOut(Index);
}

Error KLESlotPoolTy::recycle(const KLESlotTy &Slot) {
  return recycleSlot(Slot.Id, &Slot);
}

Error KLESlotPoolTy::recycle(uint64_t SlotId) {
  return recycleSlot(SlotId, nullptr);
}

Error KLESlotPoolTy::recycleSlot(uint64_t SlotId, const KLESlotTy *Slot) {
  auto Reject = [&](const Twine &Msg) {
    Stats.RecycleErrors.fetch_add(1, std::memory_order_relaxed);
    return invalidRelease(Msg);
  };

  if (Deinitialized.load(std::memory_order_acquire))
    return Reject("the pool was deinitialized");
  if (SlotId == KLESlotTy::InvalidId)
    return Reject("invalid slot handle");

  const uint64_t Index = SlotId & 0xffffffffu;
  const uint32_t Generation = static_cast<uint32_t>(SlotId >> 32);
  if (Index >= NumSlotsPublished.load(std::memory_order_acquire))
    return Reject("slot " + Twine(Index) + " does not belong to this pool");
  SlotInfoTy &Info = slotInfo(static_cast<uint32_t>(Index));
  if (Slot &&
      (Info.HostPtr != Slot->HostPtr || Info.DevicePtr != Slot->DevicePtr ||
       Info.DeviceCounters != Slot->DeviceCounters))
    return Reject("slot " + Twine(Index) + " does not belong to this pool");
  // Exactly one release of a given take can win this; double, stale and
  // (almost surely) foreign ids find another generation or a free slot.
  uint64_t Expected = stateWord(Generation, true);
  if (!Info.State.compare_exchange_strong(Expected,
                                          stateWord(Generation, false),
                                          std::memory_order_acq_rel,
                                          std::memory_order_relaxed))
    return Reject("slot " + Twine(Index) +
                  " is not in use under this id (double, stale or foreign "
                  "release)");

  Stats.SlotsRecycled.fetch_add(1, std::memory_order_relaxed);
  // Before the push, so SlotsInUse never exceeds the slots actually held.
  Stats.SlotsInUse.fetch_sub(1, std::memory_order_relaxed);
  pushFree(static_cast<uint32_t>(Index), static_cast<uint32_t>(Index));
  return Error::success();
}

void KLESlotPoolTy::noteFallback(KLEFallbackReasonTy Reason) {
  Stats.Fallbacks[static_cast<size_t>(Reason)].fetch_add(
      1, std::memory_order_relaxed);
}

Error KLESlotPoolTy::deinit() {
  std::lock_guard<std::mutex> Lock(GrowMutex);
  if (Deinitialized.load(std::memory_order_relaxed))
    return Error::success();
  Deinitialized.store(true, std::memory_order_release);

  Error Err = Error::success();
  for (const SlabTy &Slab : Slabs) {
    Err = joinErrors(std::move(Err), Allocator.freeDevice(Slab.CounterBase));
    Err = joinErrors(std::move(Err), Allocator.freePinned(Slab.PinnedBase));
  }

  // The bookkeeping chunks stay until the destructor; the free stack is
  // emptied so that nothing reachable refers to freed slabs.
  FreeHead.store(0, std::memory_order_relaxed);
  Stats.OutstandingAtDeinit.store(
      Stats.SlotsInUse.load(std::memory_order_relaxed),
      std::memory_order_relaxed);
  Stats.SlotsInUse.store(0, std::memory_order_relaxed);
  Stats.SlotCapacity.store(0, std::memory_order_relaxed);
  Stats.SlabsLive.store(0, std::memory_order_relaxed);
  Stats.BytesPinned.store(0, std::memory_order_relaxed);
  Stats.BytesDevice.store(0, std::memory_order_relaxed);
  Slabs.clear();
  return Err;
}

KLESlotPoolStatsTy KLESlotPoolTy::getStats() const {
  auto Get = [](const std::atomic<uint64_t> &C) {
    return C.load(std::memory_order_relaxed);
  };
  KLESlotPoolStatsTy S;
  S.SlotsTaken = Get(Stats.SlotsTaken);
  S.SlotsRecycled = Get(Stats.SlotsRecycled);
  S.SlotsInUse = Get(Stats.SlotsInUse);
  S.PeakSlotsInUse = Get(Stats.PeakSlotsInUse);
  S.SlotCapacity = Get(Stats.SlotCapacity);
  S.SlabsAllocated = Get(Stats.SlabsAllocated);
  S.SlabsLive = Get(Stats.SlabsLive);
  for (size_t I = 0; I < KLENumFallbackReasons; ++I)
    S.Fallbacks[I] = Get(Stats.Fallbacks[I]);
  S.RecycleErrors = Get(Stats.RecycleErrors);
  S.AllocationFailures = Get(Stats.AllocationFailures);
  S.OutstandingAtDeinit = Get(Stats.OutstandingAtDeinit);
  S.BytesPinned = Get(Stats.BytesPinned);
  S.BytesDevice = Get(Stats.BytesDevice);
  return S;
}

} // namespace kle
