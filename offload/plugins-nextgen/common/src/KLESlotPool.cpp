//===- KLESlotPool.cpp - Pool of pinned kernel launch environment slots ---===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLESlotPool.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <system_error>

using namespace llvm;

namespace llvm::omp::target::plugin {

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

/// Alignment of slots and counter blocks: the GPU coherence granule.
static constexpr size_t SlotAlignment = 128;
static_assert(KLESlotPoolTy::SlotSize % SlotAlignment == 0);
/// Growth-needing takes skipped after a failed growth, and the window's cap.
static constexpr uint32_t FirstBackoff = 64, MaxBackoff = 65536;

static Error invalidArgument(const Twine &Msg) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           Msg);
}

static void *addBytes(void *Ptr, size_t Bytes) {
  return static_cast<char *>(Ptr) + Bytes;
}

/// A different generation seed per pool (Fibonacci hashing of a serial).
static uint32_t nextPoolSeed() {
  static std::atomic<uint32_t> Serial{0};
  return (Serial.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B9u;
}

Expected<std::unique_ptr<KLESlotPoolTy>>
KLESlotPoolTy::create(KLESlabAllocatorTy &Allocator,
                      const KLESlotPoolConfigTy &Config) {
  auto Invalid = [](const Twine &Msg) {
    return invalidArgument("invalid KLE slot pool configuration: " + Msg);
  };
  if (Config.MaxSlots == 0 || Config.MaxSlots > MaxSlotsLimit)
    return Invalid("MaxSlots " + Twine(Config.MaxSlots) + " is not in [1, " +
                   Twine(MaxSlotsLimit) + "]");
  if (Config.FirstSlabSlots == 0)
    return Invalid("FirstSlabSlots is 0");
  if (Config.MaxSlabSlots < Config.FirstSlabSlots)
    return Invalid("MaxSlabSlots " + Twine(Config.MaxSlabSlots) +
                   " is below FirstSlabSlots " + Twine(Config.FirstSlabSlots));
  return std::unique_ptr<KLESlotPoolTy>(new KLESlotPoolTy(Allocator, Config));
}

KLESlotPoolTy::KLESlotPoolTy(KLESlabAllocatorTy &Allocator,
                             const KLESlotPoolConfigTy &Config)
    : Allocator(Allocator), Config(Config), GenerationSeed(nextPoolSeed()),
      NextBackoff(FirstBackoff) {}

KLESlotPoolTy::~KLESlotPoolTy() { consumeError(deinit()); }

// Free-stack head: (tag << 32) | (index + 1); low half 0 = empty.
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
  const uint32_t N = Index + 1;
  const unsigned Chunk = Log2_32(N);
  SlotInfoTy *Infos = SlotChunks[Chunk].load(std::memory_order_acquire);
  assert(Infos && "slot index not published");
  return Infos[N - (uint32_t(1) << Chunk)];
}

bool KLESlotPoolTy::popFree(uint32_t &Index) {
  // Acquire: the slot's bookkeeping and its last holder's writes (released
  // by pushFree) happen before our use.
  uint64_t Head = FreeHead.load(std::memory_order_acquire);
  while (Head & TopMask) {
    const uint32_t Top = static_cast<uint32_t>(Head & TopMask) - 1;
    // If Top is popped (and pushed back) meanwhile, the tag changed and the
    // CAS fails, discarding this read.
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
    // Release; later pushes and pops, all RMWs, extend the release sequence.
  } while (!FreeHead.compare_exchange_weak(Head, nextHead(Head, First + 1),
                                           std::memory_order_release,
                                           std::memory_order_relaxed));
}

size_t
KLESlotPoolTy::forEachFreeSlot(llvm::function_ref<void(const KLESlotTy &)> Fn) {
  if (Deinitialized.load(std::memory_order_acquire))
    return 0;
  // Popped slots are ours, as after take(); their state words stay free, so
  // a stale recycle() still fails.
  SmallVector<uint32_t, 64> Held;
  uint32_t Index;
  while (popFree(Index))
    Held.push_back(Index);
  if (Held.empty())
    return 0;
  for (uint32_t I : Held) {
    const SlotInfoTy &Info = slotInfo(I);
    Fn(KLESlotTy{Info.HostPtr, Info.DeviceCounters, KLESlotTy::InvalidId});
  }
  // Back as one chain in the same order.
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
  uint64_t N = LastSlabSlots ? uint64_t(LastSlabSlots) * 2
                             : uint64_t(Config.FirstSlabSlots);
  N = std::min<uint64_t>(N, Config.MaxSlabSlots);
  return static_cast<uint32_t>(std::min<uint64_t>(N, Config.MaxSlots - TotalSlots));
}

bool KLESlotPoolTy::growLocked(uint32_t &Reserved) {
  const uint32_t NumSlots = nextSlabSlotsLocked();
  assert(NumSlots && "growLocked called with growth forbidden");
  auto Fail = [&](Error Err) {
    // The caller falls back to copy; the failure is counted, not reported.
    consumeError(std::move(Err));
    BackoffRemaining.store(NextBackoff, std::memory_order_relaxed);
    NextBackoff = std::min(NextBackoff * 2, MaxBackoff);
    return false;
  };

  Expected<void *> Pinned = Allocator.allocatePinned(NumSlots * SlotSize);
  if (!Pinned)
    return Fail(Pinned.takeError());
  Expected<void *> Counters =
      Allocator.allocateDevice(NumSlots * CounterBlockSize);
  auto Misaligned = [](void *P) {
    return !P || reinterpret_cast<uintptr_t>(P) % SlotAlignment;
  };
  if (!Counters || Misaligned(*Pinned) || Misaligned(*Counters)) {
    Error Err = Counters ? createStringError("allocator returned memory that "
                                             "is not 128-byte aligned")
                         : Counters.takeError();
    if (Counters && *Counters)
      Err = joinErrors(std::move(Err), Allocator.freeDevice(*Counters));
    if (*Pinned)
      Err = joinErrors(std::move(Err), Allocator.freePinned(*Pinned));
    return Fail(std::move(Err));
  }
  // Slots start zeroed, so a holder's per-slot state starts empty.
  std::memset(*Pinned, 0, NumSlots * SlotSize);

  // Publish (release) the bookkeeping chunks for the new indices before any
  // of their slots is reachable.
  const uint32_t First = TotalSlots, Last = First + NumSlots - 1;
  for (unsigned C = Log2_32(First + 1); C <= Log2_32(Last + 1); ++C) {
    if (ChunkOwners[C])
      continue;
    const uint32_t Begin = (uint32_t(1) << C) - 1;
    ChunkOwners[C].reset(new SlotInfoTy[std::min<uint32_t>(
        uint32_t(1) << C, Config.MaxSlots - Begin)]);
    SlotChunks[C].store(ChunkOwners[C].get(), std::memory_order_release);
  }
  for (uint32_t I = 0; I < NumSlots; ++I) {
    SlotInfoTy &Info = slotInfo(First + I);
    Info.HostPtr = addBytes(*Pinned, I * SlotSize);
    Info.DeviceCounters = addBytes(*Counters, I * CounterBlockSize);
    Info.State.store(stateWord(GenerationSeed, false),
                     std::memory_order_relaxed);
    // Lowest address on top; pushFree() links Last to the old top.
    Info.Next.store(First + I + 2, std::memory_order_relaxed);
  }
  Slabs.push_back({*Pinned, *Counters});
  TotalSlots += NumSlots;
  LastSlabSlots = NumSlots;
  BackoffRemaining.store(0, std::memory_order_relaxed);
  NextBackoff = FirstBackoff;
  count(SlabsAllocated);

  // Release: recycle() may now look these indices up.
  NumSlotsPublished.store(TotalSlots, std::memory_order_release);
  Reserved = First;
  if (NumSlots > 1)
    pushFree(First + 1, Last);
  return true;
}

KLESlotTy KLESlotPoolTy::fallback(KLEFallbackReasonTy Reason) {
  noteFallback(Reason);
  return KLESlotTy();
}

KLESlotTy KLESlotPoolTy::handOut(uint32_t Index) {
  SlotInfoTy &Info = slotInfo(Index);
  // Only the thread that popped a free slot writes its state; a stale
  // recycle() compares against an in-use word and fails.
  const uint64_t Old = Info.State.load(std::memory_order_relaxed);
  assert(!(Old & InUseBit) && "free list holds a slot in use");
  const uint32_t Generation = static_cast<uint32_t>(Old >> 32) + 1;
  Info.State.store(stateWord(Generation, true), std::memory_order_relaxed);

  const uint64_t InUse =
      SlotsInUse.fetch_add(1, std::memory_order_relaxed) + 1;
  uint64_t Peak = PeakSlotsInUse.load(std::memory_order_relaxed);
  while (Peak < InUse && !PeakSlotsInUse.compare_exchange_weak(
                             Peak, InUse, std::memory_order_relaxed))
    ;
  return KLESlotTy{Info.HostPtr, Info.DeviceCounters,
                   (uint64_t(Generation) << 32) | Index};
}

KLESlotTy KLESlotPoolTy::take() {
  if (Deinitialized.load(std::memory_order_acquire))
    return fallback(KLEFallbackReasonTy::TransportDisabled);
  uint32_t Index;
  if (popFree(Index))
    return handOut(Index);
  return takeSlow();
}

KLESlotTy KLESlotPoolTy::takeSlow() {
  // Lock-free answers first: the cap (set only by a successful growth, which
  // also clears the backoff), then the failure backoff.
  if (CapReached.load(std::memory_order_relaxed))
    return fallback(KLEFallbackReasonTy::PoolExhausted);
  if (consumeBackoff())
    return fallback(KLEFallbackReasonTy::AllocationFailed);

  std::unique_lock<std::mutex> Lock(GrowMutex, std::try_to_lock);
  uint32_t Index;
  if (!Lock.owns_lock()) {
    // Another thread grows: take a slot freed meanwhile, else wait for it.
    if (popFree(Index))
      return handOut(Index);
    Lock.lock();
  }
  if (Deinitialized.load(std::memory_order_relaxed))
    return fallback(KLEFallbackReasonTy::TransportDisabled);
  // A growth that ended before we got the lock may have left slots.
  if (popFree(Index))
    return handOut(Index);
  if (nextSlabSlotsLocked() == 0) {
    CapReached.store(true, std::memory_order_relaxed);
    return fallback(KLEFallbackReasonTy::PoolExhausted);
  }
  // A failure just before we got the lock opened a backoff window.
  if (consumeBackoff() || !growLocked(Index))
    return fallback(KLEFallbackReasonTy::AllocationFailed);
  return handOut(Index);
}

Error KLESlotPoolTy::recycle(uint64_t SlotId) {
  auto Reject = [](const Twine &Msg) {
    return invalidArgument("invalid KLE slot recycle: " + Msg);
  };
  if (Deinitialized.load(std::memory_order_acquire))
    return Reject("the pool was deinitialized");
  if (SlotId == KLESlotTy::InvalidId)
    return Reject("invalid slot handle");
  const uint64_t Index = SlotId & TopMask;
  const uint32_t Generation = static_cast<uint32_t>(SlotId >> 32);
  if (Index >= NumSlotsPublished.load(std::memory_order_acquire))
    return Reject("slot " + Twine(Index) + " does not belong to this pool");
  // One recycle of a given take wins; double, stale and (almost surely)
  // foreign ids find another generation or a free slot.
  uint64_t Expected = stateWord(Generation, true);
  if (!slotInfo(Index).State.compare_exchange_strong(
          Expected, stateWord(Generation, false), std::memory_order_acq_rel,
          std::memory_order_relaxed))
    return Reject("slot " + Twine(Index) +
                  " is not in use under this id (double, stale or foreign "
                  "release)");
  // Before the push, so SlotsInUse never exceeds the slots held.
  SlotsInUse.fetch_sub(1, std::memory_order_relaxed);
  pushFree(static_cast<uint32_t>(Index), static_cast<uint32_t>(Index));
  return Error::success();
}

void KLESlotPoolTy::noteFallback(KLEFallbackReasonTy Reason) {
  count(Fallbacks[static_cast<size_t>(Reason)]);
}

Error KLESlotPoolTy::deinit() {
  std::lock_guard<std::mutex> Lock(GrowMutex);
  if (Deinitialized.exchange(true, std::memory_order_acq_rel))
    return Error::success();
  Error Err = Error::success();
  for (const SlabTy &Slab : Slabs) {
    Err = joinErrors(std::move(Err), Allocator.freeDevice(Slab.Counters));
    Err = joinErrors(std::move(Err), Allocator.freePinned(Slab.Pinned));
  }
  Slabs.clear();
  // The bookkeeping stays until the destructor; nothing reachable refers to
  // the freed slabs.
  FreeHead.store(0, std::memory_order_relaxed);
  OutstandingAtDeinit.store(SlotsInUse.exchange(0, std::memory_order_relaxed),
                            std::memory_order_relaxed);
  return Err;
}

KLESlotPoolStatsTy KLESlotPoolTy::getStats() const {
  KLESlotPoolStatsTy S;
  S.SlotsInUse = SlotsInUse.load(std::memory_order_relaxed);
  S.PeakSlotsInUse = PeakSlotsInUse.load(std::memory_order_relaxed);
  S.SlabsAllocated = SlabsAllocated.load(std::memory_order_relaxed);
  S.OutstandingAtDeinit = OutstandingAtDeinit.load(std::memory_order_relaxed);
  for (size_t I = 0; I < KLENumFallbackReasons; ++I)
    S.Fallbacks[I] = Fallbacks[I].load(std::memory_order_relaxed);
  return S;
}

} // namespace llvm::omp::target::plugin
