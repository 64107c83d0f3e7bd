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
                           "invalid KLE slot release: " + Msg);
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

KLESlotPoolTy::KLESlotPoolTy(KLESlabAllocatorTy &Allocator,
                             const KLESlotPoolConfigTy &Config)
    : Allocator(Allocator), Config(Config),
      NextBackoff(Config.AllocFailureBackoff), GenerationSeed(nextPoolSeed()) {}

KLESlotPoolTy::~KLESlotPoolTy() {
  // The allocator must still be alive here. Errors cannot be reported from a
  // destructor; callers that care call deinit() explicitly.
  consumeError(deinit());
}

size_t KLESlotPoolTy::paddingBytes() const {
  if (Config.AllocatorAlignment >= SlotAlignment)
    return 0;
  return SlotAlignment - Config.AllocatorAlignment;
}

uint32_t KLESlotPoolTy::nextSlabSlotsLocked() const {
  if (Slabs.size() >= Config.MaxSlabs)
    return 0;
  uint64_t N = LastSlabSlots == 0
                   ? uint64_t(Config.InitialSlotsPerSlab)
                   : uint64_t(LastSlabSlots) * Config.GrowthFactor;
  N = std::min<uint64_t>(N, Config.MaxSlotsPerSlab);
  if (Config.MaxSlots) {
    uint64_t Left = Config.MaxSlots > Slots.size()
                        ? uint64_t(Config.MaxSlots) - Slots.size()
                        : 0;
    N = std::min(N, Left);
  }
  return static_cast<uint32_t>(N);
}

bool KLESlotPoolTy::growLocked() {
  uint32_t NumSlots = nextSlabSlotsLocked();
  assert(NumSlots && "growLocked called with growth forbidden");

  auto Fail = [&](Error Err) {
    // A failed allocation is not an error for the caller: it falls back to
    // the copy path. Drop the detail; the failure is counted.
    consumeError(std::move(Err));
    ++Stats.AllocationFailures;
    // Skip the allocator for the next NextBackoff growth-needing takes, and
    // double the window for the next consecutive failure.
    BackoffRemaining = NextBackoff;
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

  Expected<void *> CountersOrErr = Allocator.allocateDeviceZeroed(DeviceBytes);
  if (!CountersOrErr || !*CountersOrErr) {
    // Do not leak the pinned slab.
    Error Err = CountersOrErr ? createStringError("allocateDeviceZeroed "
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

  Slabs.push_back({PinnedBase, CounterBase, PinnedBytes, DeviceBytes});
  const uint32_t First = static_cast<uint32_t>(Slots.size());
  Slots.reserve(Slots.size() + NumSlots);
  FreeList.reserve(Slots.size() + NumSlots);
  for (uint32_t I = 0; I < NumSlots; ++I)
    Slots.push_back(
        {addBytes(HostAligned, size_t(I) * Config.SlotSize),
         addBytes(DevAligned, size_t(I) * Config.SlotSize),
         addBytes(CountersAligned, size_t(I) * Config.CounterBlockSize),
         /*Generation=*/GenerationSeed, /*InUse=*/false});
  // Push in reverse so the LIFO hands out the lowest address first.
  for (uint32_t I = NumSlots; I > 0; --I)
    FreeList.push_back(First + I - 1);

  LastSlabSlots = NumSlots;
  BackoffRemaining = 0;
  NextBackoff = Config.AllocFailureBackoff;
  ++Stats.SlabsAllocated;
  ++Stats.SlabsLive;
  Stats.SlotCapacity += NumSlots;
  Stats.BytesPinned += PinnedBytes;
  Stats.BytesDevice += DeviceBytes;
  return true;
}

KLETakeResultTy KLESlotPoolTy::fallbackLocked(KLEFallbackReasonTy Reason) {
  ++Stats.Fallbacks[static_cast<size_t>(Reason)];
  return KLETakeResultTy(Reason);
}

KLETakeResultTy KLESlotPoolTy::take() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Deinitialized)
    return fallbackLocked(KLEFallbackReasonTy::TransportDisabled);

  if (FreeList.empty()) {
    if (nextSlabSlotsLocked() == 0)
      return fallbackLocked(KLEFallbackReasonTy::PoolExhausted);
    if (BackoffRemaining) {
      --BackoffRemaining;
      return fallbackLocked(KLEFallbackReasonTy::AllocationFailed);
    }
    if (!growLocked())
      return fallbackLocked(KLEFallbackReasonTy::AllocationFailed);
  }

  const uint32_t Index = FreeList.pop_back_val();
  SlotInfoTy &Info = Slots[Index];
  assert(!Info.InUse && "free list holds a slot in use");
  Info.InUse = true;
  ++Info.Generation;

  ++Stats.SlotsTaken;
  ++Stats.SlotsInUse;
  Stats.PeakSlotsInUse = std::max(Stats.PeakSlotsInUse, Stats.SlotsInUse);

  KLESlotTy Slot;
  Slot.HostPtr = Info.HostPtr;
  Slot.DevicePtr = Info.DevicePtr;
  Slot.DeviceCounters = Info.DeviceCounters;
  Slot.Id = (uint64_t(Info.Generation) << 32) | Index;
  return KLETakeResultTy(Slot);
}

Error KLESlotPoolTy::release(const KLESlotTy &Slot) {
  std::lock_guard<std::mutex> Lock(Mutex);
  return releaseLocked(Slot.Id, &Slot);
}

Error KLESlotPoolTy::release(uint64_t SlotId) {
  std::lock_guard<std::mutex> Lock(Mutex);
  return releaseLocked(SlotId, nullptr);
}

Error KLESlotPoolTy::releaseLocked(uint64_t SlotId, const KLESlotTy *Slot) {
  auto Reject = [&](const Twine &Msg) {
    ++Stats.ReleaseErrors;
    return invalidRelease(Msg);
  };

  if (Deinitialized)
    return Reject("the pool was deinitialized");
  if (SlotId == KLESlotTy::InvalidId)
    return Reject("invalid slot handle");

  const uint64_t Index = SlotId & 0xffffffffu;
  const uint32_t Generation = static_cast<uint32_t>(SlotId >> 32);
  if (Index >= Slots.size())
    return Reject("slot " + Twine(Index) + " does not belong to this pool");
  SlotInfoTy &Info = Slots[Index];
  if (Slot &&
      (Info.HostPtr != Slot->HostPtr || Info.DevicePtr != Slot->DevicePtr ||
       Info.DeviceCounters != Slot->DeviceCounters))
    return Reject("slot " + Twine(Index) + " does not belong to this pool");
  if (!Info.InUse || Info.Generation != Generation)
    return Reject("slot " + Twine(Index) +
                  " is not in use under this id (double, stale or foreign "
                  "release)");

  Info.InUse = false;
  FreeList.push_back(static_cast<uint32_t>(Index));
  ++Stats.SlotsReleased;
  --Stats.SlotsInUse;
  return Error::success();
}

void KLESlotPoolTy::noteFallback(KLEFallbackReasonTy Reason) {
  std::lock_guard<std::mutex> Lock(Mutex);
  ++Stats.Fallbacks[static_cast<size_t>(Reason)];
}

Error KLESlotPoolTy::deinit() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Deinitialized)
    return Error::success();
  Deinitialized = true;

  Error Err = Error::success();
  for (const SlabTy &Slab : Slabs) {
    Err = joinErrors(std::move(Err), Allocator.freeDevice(Slab.CounterBase));
    Err = joinErrors(std::move(Err), Allocator.freePinned(Slab.PinnedBase));
  }

  Stats.OutstandingAtDeinit = Stats.SlotsInUse;
  Stats.SlotsInUse = 0;
  Stats.SlotCapacity = 0;
  Stats.SlabsLive = 0;
  Stats.BytesPinned = 0;
  Stats.BytesDevice = 0;
  Slabs.clear();
  Slots.clear();
  FreeList.clear();
  return Err;
}

KLESlotPoolStatsTy KLESlotPoolTy::getStats() const {
  std::lock_guard<std::mutex> Lock(Mutex);
  return Stats;
}

} // namespace kle
