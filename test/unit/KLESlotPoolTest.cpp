//===- KLESlotPoolTest.cpp - Unit tests for the KLE slot pool -------------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLESlotPool.h"
#include "FakeSlabAllocator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace llvm::omp::target::plugin;
using test::FakeSlabAllocatorTy;

namespace {

using KindTy = FakeSlabAllocatorTy::KindTy;

constexpr size_t Align = 128;
constexpr size_t SlotSize = KLESlotPoolTy::SlotSize;
constexpr size_t BlockSize = KLESlotPoolTy::CounterBlockSize;

std::unique_ptr<KLESlotPoolTy> makePool(FakeSlabAllocatorTy &Alloc,
                                        const KLESlotPoolConfigTy &Config) {
  auto PoolOrErr = KLESlotPoolTy::create(Alloc, Config);
  if (!PoolOrErr) {
    ADD_FAILURE() << "create failed: " << llvm::toString(PoolOrErr.takeError());
    return nullptr;
  }
  return std::move(*PoolOrErr);
}

/// "" on success, else the error message (the Error is consumed).
std::string errorMessage(llvm::Error Err) {
  if (!Err)
    return "";
  std::string Msg = llvm::toString(std::move(Err));
  return Msg.empty() ? "<empty error message>" : Msg;
}

uintptr_t addr(const void *P) { return reinterpret_cast<uintptr_t>(P); }

/// Slabs of \p First, 2 * \p First, ... up to \p MaxSlab slots, \p Max in
/// all.
KLESlotPoolConfigTy geometry(uint32_t First, uint32_t MaxSlab, uint32_t Max) {
  KLESlotPoolConfigTy C;
  C.FirstSlabSlots = First;
  C.MaxSlabSlots = MaxSlab;
  C.MaxSlots = Max;
  return C;
}

/// A config with one slab of \p N slots and no growth.
KLESlotPoolConfigTy singleSlab(uint32_t N) { return geometry(N, N, N); }

uint64_t fallbacks(const KLESlotPoolTy &Pool, KLEFallbackReasonTy Reason) {
  return Pool.getStats().getFallbacks(Reason);
}

uint64_t totalFallbacks(const KLESlotPoolTy &Pool) {
  uint64_t Sum = 0;
  for (uint64_t N : Pool.getStats().Fallbacks)
    Sum += N;
  return Sum;
}

TEST(KLESlotPoolTest, ConfigValidation) {
  FakeSlabAllocatorTy Alloc;
  struct CaseTy {
    const char *Field;
    KLESlotPoolConfigTy Config;
  };
  const CaseTy Cases[] = {
      {"MaxSlots", geometry(64, 4096, 0)},
      {"MaxSlots", geometry(64, 4096, (1u << 24) + 1)},
      {"FirstSlabSlots", geometry(0, 4096, 100)},
      {"MaxSlabSlots", geometry(64, 32, 100)},
  };
  for (const CaseTy &Case : Cases) {
    auto PoolOrErr = KLESlotPoolTy::create(Alloc, Case.Config);
    ASSERT_FALSE(static_cast<bool>(PoolOrErr)) << Case.Field;
    std::string Msg = errorMessage(PoolOrErr.takeError());
    EXPECT_NE(Msg.find(Case.Field), std::string::npos) << Msg;
  }
  EXPECT_TRUE(makePool(Alloc, KLESlotPoolConfigTy()) != nullptr);
  EXPECT_TRUE(makePool(Alloc, geometry(1, 1, 1u << 24)) != nullptr);
  // Creation allocates nothing.
  EXPECT_EQ(Alloc.PinnedCalls + Alloc.DeviceCalls, 0u);
}

TEST(KLESlotPoolTest, FallbackReasonNamesAndCallerFallbacks) {
  EXPECT_EQ(toString(KLEFallbackReasonTy::PoolExhausted), "PoolExhausted");
  EXPECT_EQ(toString(KLEFallbackReasonTy::AllocationFailed),
            "AllocationFailed");
  EXPECT_EQ(toString(KLEFallbackReasonTy::RecordReplay), "RecordReplay");
  EXPECT_EQ(toString(KLEFallbackReasonTy::ImageABI), "ImageABI");
  EXPECT_EQ(toString(KLEFallbackReasonTy::TransportDisabled),
            "TransportDisabled");

  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, singleSlab(4));
  ASSERT_TRUE(Pool);
  Pool->noteFallback(KLEFallbackReasonTy::RecordReplay);
  Pool->noteFallback(KLEFallbackReasonTy::ImageABI);
  Pool->noteFallback(KLEFallbackReasonTy::ImageABI);
  Pool->noteFallback(KLEFallbackReasonTy::TransportDisabled);
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::RecordReplay), 1u);
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::ImageABI), 2u);
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::TransportDisabled), 1u);
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::PoolExhausted), 0u);
  EXPECT_EQ(totalFallbacks(*Pool), 4u);
  EXPECT_EQ(Alloc.PinnedCalls, 0u) << "noteFallback must not allocate";
}

// Every slot and counter block is 128-byte aligned (the first block of a
// slab) or 64-byte apart, inside a live allocation, and distinct; each slab
// is exactly its slots' bytes.
TEST(KLESlotPoolTest, SlotsAlignedInsideTheirSlabs) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(3, 8, 25));
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  // Bounded so a pool that never runs out fails instead of hanging.
  for (int I = 0; I < 100; ++I) {
    KLESlotTy S = Pool->take();
    if (!S.isValid())
      break;
    Taken.push_back(S);
  }
  ASSERT_EQ(Taken.size(), 3u + 6u + 8u + 8u);
  std::set<uintptr_t> Hosts, Counters;
  for (const KLESlotTy &S : Taken) {
    EXPECT_EQ(addr(S.HostPtr) % Align, 0u);
    EXPECT_EQ(addr(S.DeviceCounters) % BlockSize, 0u);
    EXPECT_TRUE(Alloc.findContaining(S.HostPtr, SlotSize, KindTy::Pinned))
        << "slot not inside a live pinned allocation";
    EXPECT_TRUE(
        Alloc.findContaining(S.DeviceCounters, BlockSize, KindTy::Device))
        << "counter block not inside a live device allocation";
    Hosts.insert(addr(S.HostPtr));
    Counters.insert(addr(S.DeviceCounters));
  }
  // Distinct and non-overlapping: sorted neighbours are >= size apart.
  ASSERT_EQ(Hosts.size(), Taken.size());
  ASSERT_EQ(Counters.size(), Taken.size());
  for (auto It = Hosts.begin(), Next = std::next(It); Next != Hosts.end();
       ++It, ++Next)
    EXPECT_GE(*Next - *It, SlotSize);
  for (auto It = Counters.begin(), Next = std::next(It);
       Next != Counters.end(); ++It, ++Next)
    EXPECT_GE(*Next - *It, BlockSize);
  EXPECT_EQ(Alloc.PinnedSizes,
            (std::vector<size_t>{3 * SlotSize, 6 * SlotSize, 8 * SlotSize,
                                 8 * SlotSize}));
  EXPECT_EQ(Alloc.DeviceSizes[0], 3 * BlockSize);
  EXPECT_FALSE(static_cast<bool>(Pool->deinit()));
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
}

// An allocator that returns memory less than 128-byte aligned gets its slab
// back and the take falls back, counted as AllocationFailed.
TEST(KLESlotPoolTest, MisalignedAllocatorFallsBack) {
  for (size_t Misalign : {size_t(16), size_t(64)}) {
    SCOPED_TRACE("Misalign " + std::to_string(Misalign));
    FakeSlabAllocatorTy Alloc;
    Alloc.Misalign = Misalign;
    auto Pool = makePool(Alloc, singleSlab(4));
    ASSERT_TRUE(Pool);
    EXPECT_FALSE(Pool->take().isValid());
    EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::AllocationFailed), 1u);
    EXPECT_EQ(Alloc.PinnedCalls, 1u);
    EXPECT_EQ(Alloc.liveCount(), 0u);
    EXPECT_EQ(Alloc.BadFrees, 0u);
    EXPECT_EQ(Pool->getStats().SlabsAllocated, 0u);
  }
}

TEST(KLESlotPoolTest, GeometricGrowthRespectsCaps) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(2, 8, 20));
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 20; ++I) {
    KLESlotTy S = Pool->take();
    ASSERT_TRUE(S.isValid()) << "take " << I;
    Taken.push_back(S);
  }
  // 2 + 4 + 8 + (20 - 14) slots.
  EXPECT_EQ(Alloc.PinnedSizes,
            (std::vector<size_t>{2 * SlotSize, 4 * SlotSize, 8 * SlotSize,
                                 6 * SlotSize}));
  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::PoolExhausted), 1u);
  EXPECT_EQ(Pool->getStats().SlabsAllocated, 4u);
  EXPECT_EQ(Alloc.liveBytes(KindTy::Pinned), 20 * SlotSize);
  EXPECT_EQ(Alloc.liveBytes(KindTy::Device), 20 * BlockSize);
  for (const KLESlotTy &Slot : Taken)
    EXPECT_EQ(errorMessage(Pool->recycle(Slot.Id)), "");
}

TEST(KLESlotPoolTest, ExhaustionWithCap) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(4, 4096, 8)); // Two slabs of 4.
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 8; ++I) {
    Taken.push_back(Pool->take());
    ASSERT_TRUE(Taken.back().isValid());
  }
  for (int I = 1; I <= 2; ++I) {
    EXPECT_FALSE(Pool->take().isValid()); // The (cap+1)-th take.
    EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::PoolExhausted),
              uint64_t(I));
  }
  EXPECT_EQ(Alloc.PinnedCalls, 2u) << "exhaustion must not call the allocator";

  KLESlotTy Freed = Taken[5];
  ASSERT_EQ(errorMessage(Pool->recycle(Freed.Id)), "");
  KLESlotTy S = Pool->take();
  ASSERT_TRUE(S.isValid());
  EXPECT_EQ(S.HostPtr, Freed.HostPtr);
  EXPECT_NE(S.Id, Freed.Id) << "a new take must get a new id";

  KLESlotPoolStatsTy Stats = Pool->getStats();
  EXPECT_EQ(Stats.SlotsInUse, 8u);
  EXPECT_EQ(Stats.PeakSlotsInUse, 8u);
  EXPECT_EQ(totalFallbacks(*Pool), 2u);
}

TEST(KLESlotPoolTest, InjectedPinnedAllocationFailure) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailPinnedOnCall = 2;
  auto Pool = makePool(Alloc, geometry(1, 1, 4)); // Slabs of one slot.
  ASSERT_TRUE(Pool);

  ASSERT_TRUE(Pool->take().isValid());
  // Needs slab 2; its allocatePinned fails.
  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  EXPECT_EQ(Alloc.DeviceCalls, 1u) << "no device block for a failed slab";
  EXPECT_EQ(Alloc.liveCount(), 2u) << "only slab 1 and its counters live";

  // Backoff: the next 64 growth-needing takes do not call the allocator.
  for (int I = 0; I < 64; ++I)
    ASSERT_FALSE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  // The next growth-needing take retries the allocator and succeeds.
  ASSERT_TRUE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, 3u);

  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::AllocationFailed), 65u);
  EXPECT_EQ(Pool->getStats().SlabsAllocated, 2u);
  EXPECT_EQ(Pool->getStats().SlotsInUse, 2u);
  EXPECT_FALSE(static_cast<bool>(Pool->deinit()));
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
}

TEST(KLESlotPoolTest, InjectedDeviceAllocationFailureFreesPinnedSlab) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailDeviceOnCall = 1;
  auto Pool = makePool(Alloc, singleSlab(4));
  ASSERT_TRUE(Pool);

  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::AllocationFailed), 1u);
  EXPECT_EQ(Alloc.PinnedCalls, 1u);
  EXPECT_EQ(Alloc.PinnedFrees, 1u) << "the pinned slab must be freed";
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
  EXPECT_EQ(Pool->getStats().SlabsAllocated, 0u);

  // After the backoff window, a take retries and gets the slab.
  for (int I = 0; I < 64; ++I)
    ASSERT_FALSE(Pool->take().isValid());
  ASSERT_TRUE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  EXPECT_EQ(Alloc.DeviceCalls, 2u);
  EXPECT_EQ(Alloc.liveCount(), 2u);
}

// The takes that reach a failing allocator are 1, then one after a window of
// 64, 128, ... skipped takes, the window capped at 65536; a success resets it.
TEST(KLESlotPoolTest, BackoffDoublesAndResets) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailAllPinned = true;
  auto Pool = makePool(Alloc, geometry(1, 1, 16));
  ASSERT_TRUE(Pool);

  std::vector<uint64_t> Expected = {1};
  for (uint64_t Window = 64; Expected.size() < 14;
       Window = std::min<uint64_t>(Window * 2, 65536))
    Expected.push_back(Expected.back() + Window + 1);
  std::vector<uint64_t> CallingTakes;
  for (uint64_t T = 1; T <= Expected.back(); ++T) {
    unsigned Before = Alloc.PinnedCalls;
    ASSERT_FALSE(Pool->take().isValid());
    if (Alloc.PinnedCalls != Before)
      CallingTakes.push_back(T);
  }
  EXPECT_EQ(CallingTakes, Expected);
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::AllocationFailed),
            Expected.back());
  EXPECT_EQ(Alloc.liveCount(), 0u);

  // Recovery after the 65536-take window; then a failure opens 64 again.
  Alloc.FailAllPinned = false;
  unsigned Skipped = 0;
  while (!Pool->take().isValid() && Skipped < 70000)
    ++Skipped;
  EXPECT_EQ(Skipped, 65536u);
  Alloc.FailAllPinned = true;
  EXPECT_FALSE(Pool->take().isValid()); // Calls, fails.
  unsigned Calls = Alloc.PinnedCalls;
  for (int I = 0; I < 64; ++I)
    EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, Calls);
  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(Alloc.PinnedCalls, Calls + 1);
}

TEST(KLESlotPoolTest, DeinitWithOutstandingSlots) {
  auto Alloc = std::make_unique<FakeSlabAllocatorTy>();
  auto Pool = makePool(*Alloc, geometry(2, 4096, 30));
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 10; ++I) {
    Taken.push_back(Pool->take());
    ASSERT_TRUE(Taken.back().isValid());
  }
  for (int I = 0; I < 3; ++I)
    ASSERT_EQ(errorMessage(Pool->recycle(Taken[I].Id)), "");
  EXPECT_GT(Alloc->liveCount(), 0u);

  EXPECT_EQ(errorMessage(Pool->deinit()), "");
  EXPECT_EQ(Alloc->liveCount(), 0u) << "all slabs must be returned";
  EXPECT_EQ(Alloc->PinnedCalls, Alloc->PinnedFrees);
  EXPECT_EQ(Alloc->DeviceCalls, Alloc->DeviceFrees);
  EXPECT_EQ(Alloc->BadFrees, 0u);

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.OutstandingAtDeinit, 7u);
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.SlabsAllocated, 3u); // 2 + 4 + 8 slots.

  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::TransportDisabled), 1u);
  for (int I : {5, 0, 6})
    EXPECT_NE(errorMessage(Pool->recycle(Taken[I].Id)), "");
  EXPECT_EQ(errorMessage(Pool->deinit()), "") << "second deinit is a no-op";
  unsigned Frees = Alloc->PinnedFrees;
  Pool.reset(); // The destructor must not free again.
  EXPECT_EQ(Alloc->PinnedFrees, Frees);
  EXPECT_EQ(Alloc->BadFrees, 0u);
}

TEST(KLESlotPoolTest, DestructorFreesEverything) {
  FakeSlabAllocatorTy Alloc;
  {
    auto Pool = makePool(Alloc, singleSlab(4));
    ASSERT_TRUE(Pool);
    ASSERT_TRUE(Pool->take().isValid());
    EXPECT_EQ(Alloc.liveCount(), 2u);
  }
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
}

// A slot is handed out again only after it was released, and then in LIFO
// order; a held slot is never handed out.
TEST(KLESlotPoolTest, NoReuseBeforeRelease) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, singleSlab(8));
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Held;
  for (int I = 0; I < 8; ++I) {
    Held.push_back(Pool->take());
    ASSERT_TRUE(Held.back().isValid());
  }
  std::set<void *> Distinct;
  for (const KLESlotTy &S : Held)
    Distinct.insert(S.HostPtr);
  ASSERT_EQ(Distinct.size(), 8u);
  ASSERT_FALSE(Pool->take().isValid());

  // "Completion observed" for slots 5, 2, 7, in that order.
  for (int I : {5, 2, 7})
    ASSERT_EQ(errorMessage(Pool->recycle(Held[I].Id)), "");
  for (int I : {7, 2, 5}) {
    KLESlotTy S = Pool->take();
    ASSERT_TRUE(S.isValid());
    EXPECT_EQ(S.HostPtr, Held[I].HostPtr);
    EXPECT_EQ(S.DeviceCounters, Held[I].DeviceCounters);
    EXPECT_NE(S.Id, Held[I].Id);
    Held[I] = S;
  }
  ASSERT_FALSE(Pool->take().isValid());

  // Randomised: track which slots are held; a take must never return one.
  std::mt19937 Rng(12345);
  std::map<void *, KLESlotTy> Owned;
  for (const KLESlotTy &S : Held)
    Owned[S.HostPtr] = S;
  for (int Step = 0; Step < 20000; ++Step) {
    if (!Owned.empty() && (Rng() % 2 || Owned.size() == 8)) {
      auto It = Owned.begin();
      std::advance(It, Rng() % Owned.size());
      ASSERT_EQ(errorMessage(Pool->recycle(It->second.Id)), "");
      Owned.erase(It);
    } else {
      KLESlotTy S = Pool->take();
      ASSERT_TRUE(S.isValid()) << "a slot was free";
      ASSERT_EQ(Owned.count(S.HostPtr), 0u)
          << "slot handed out while still held";
      Owned[S.HostPtr] = S;
    }
  }
  EXPECT_EQ(Pool->getStats().SlotsInUse, Owned.size());
}

// A new slab's slots read zero even when the allocator returns garbage, and
// bytes a holder writes are still there for the next holder of the slot (the
// transport keeps its per-slot reduction buffer there).
TEST(KLESlotPoolTest, NewSlotsZeroedAndStateCarried) {
  FakeSlabAllocatorTy Alloc;
  Alloc.PoisonPinned = true;
  auto Pool = makePool(Alloc, singleSlab(4));
  ASSERT_TRUE(Pool);
  KLESlotTy S = Pool->take();
  ASSERT_TRUE(S.isValid());
  const unsigned char *Bytes = static_cast<unsigned char *>(S.HostPtr);
  for (size_t I = 0; I < SlotSize; ++I)
    ASSERT_EQ(Bytes[I], 0u) << "byte " << I << " of a new slot";
  std::memset(static_cast<char *>(S.HostPtr) + 64, 0x5C, 16);
  ASSERT_EQ(errorMessage(Pool->recycle(S.Id)), "");
  KLESlotTy Again = Pool->take();
  ASSERT_TRUE(Again.isValid());
  ASSERT_EQ(Again.HostPtr, S.HostPtr);
  for (size_t I = 64; I < 80; ++I)
    EXPECT_EQ(static_cast<unsigned char *>(Again.HostPtr)[I], 0x5Cu);
}

// forEachFreeSlot visits exactly the free slots, each once, never one that is
// held; what it writes into a slot is there for the slot's next holder; the
// free stack keeps its order; it is not counted as a take and does nothing
// after deinit (the transport gives slot-kept reduction buffers back through
// it when a device allocation fails).
TEST(KLESlotPoolTest, ForEachFreeSlotVisitsOnlyFreeSlotsOnce) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, singleSlab(8));
  ASSERT_TRUE(Pool);
  EXPECT_EQ(Pool->forEachFreeSlot([](const KLESlotTy &) {
    ADD_FAILURE() << "a slot visited before the pool grew";
  }),
            0u);
  std::vector<KLESlotTy> Held;
  for (int I = 0; I < 8; ++I) {
    Held.push_back(Pool->take());
    ASSERT_TRUE(Held.back().isValid());
  }
  for (int I : {1, 4, 6})
    ASSERT_EQ(errorMessage(Pool->recycle(Held[I].Id)), "");
  std::multiset<void *> Visited;
  size_t N = Pool->forEachFreeSlot([&](const KLESlotTy &S) {
    Visited.insert(S.HostPtr);
    EXPECT_FALSE(S.isValid()) << "a visit is not a handle";
    std::memset(static_cast<char *>(S.HostPtr) + 64, 0xA7, 16);
  });
  EXPECT_EQ(N, 3u);
  EXPECT_EQ(Visited, (std::multiset<void *>{Held[1].HostPtr, Held[4].HostPtr,
                                            Held[6].HostPtr}));
  EXPECT_EQ(Pool->getStats().SlotsInUse, 5u);
  EXPECT_EQ(Pool->getStats().PeakSlotsInUse, 8u);
  // Same order as before the visit (last released on top), with the bytes.
  for (int I : {6, 4, 1}) {
    KLESlotTy S = Pool->take();
    ASSERT_TRUE(S.isValid());
    EXPECT_EQ(S.HostPtr, Held[I].HostPtr);
    for (size_t B = 64; B < 80; ++B)
      EXPECT_EQ(static_cast<unsigned char *>(S.HostPtr)[B], 0xA7u);
    Held[I] = S;
  }
  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(Pool->forEachFreeSlot([](const KLESlotTy &) {
    ADD_FAILURE() << "visited a held slot";
  }),
            0u);
  for (const KLESlotTy &S : Held)
    ASSERT_EQ(errorMessage(Pool->recycle(S.Id)), "");
  ASSERT_EQ(errorMessage(Pool->deinit()), "");
  EXPECT_EQ(Pool->forEachFreeSlot([](const KLESlotTy &) {
    ADD_FAILURE() << "visited after deinit";
  }),
            0u);
}

// 1e6 take/release cycles with 20 slots in flight: the pool grows to exactly
// the slabs needed for the peak and never again.
TEST(KLESlotPoolTest, BoundedMemoryOverMillionCycles) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(4, 16, 116));
  ASSERT_TRUE(Pool);

  constexpr unsigned Window = 20;
  constexpr unsigned Cycles = 1000000;
  std::deque<KLESlotTy> InFlight;
  for (unsigned I = 0; I < Window; ++I) {
    InFlight.push_back(Pool->take());
    ASSERT_TRUE(InFlight.back().isValid());
  }
  unsigned Failures = 0;
  for (unsigned I = 0; I < Cycles; ++I) {
    KLESlotTy S = Pool->take(); // Window + 1 in flight at the peak.
    if (!S.isValid()) {
      ++Failures;
      break;
    }
    InFlight.push_back(S);
    // Completion of the oldest launch observed.
    if (Pool->recycle(InFlight.front().Id))
      ++Failures;
    InFlight.pop_front();
  }
  ASSERT_EQ(Failures, 0u);

  // Peak 21 slots -> slabs of 4 + 8 + 16 = 28 slots.
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.PeakSlotsInUse, Window + 1);
  EXPECT_EQ(S.SlabsAllocated, 3u);
  EXPECT_EQ(Alloc.PinnedCalls, 3u);
  EXPECT_EQ(Alloc.liveBytes(KindTy::Pinned), 28 * SlotSize);
  EXPECT_EQ(Alloc.liveBytes(KindTy::Device), 28 * BlockSize);
  EXPECT_EQ(S.SlotsInUse, uint64_t(Window));
  EXPECT_EQ(totalFallbacks(*Pool), 0u);
}

TEST(KLESlotPoolTest, DoubleStaleAndForeignRecyclesAreErrors) {
  FakeSlabAllocatorTy Alloc, OtherAlloc;
  auto Pool = makePool(Alloc, singleSlab(4));
  auto Other = makePool(OtherAlloc, singleSlab(4));
  ASSERT_TRUE(Pool && Other);

  KLESlotTy A = Pool->take();
  ASSERT_TRUE(A.isValid());
  ASSERT_EQ(errorMessage(Pool->recycle(A.Id)), "");
  std::string Msg = errorMessage(Pool->recycle(A.Id)); // Double recycle.
  EXPECT_NE(Msg.find("not in use"), std::string::npos) << Msg;

  // The slot is taken again; a stale copy of the old id must not free it.
  KLESlotTy B = Pool->take();
  ASSERT_EQ(B.HostPtr, A.HostPtr);
  EXPECT_NE(errorMessage(Pool->recycle(A.Id)), "");
  EXPECT_EQ(Pool->getStats().SlotsInUse, 1u) << "stale recycle freed a slot";

  // A slot of another pool with the same index and take count: rejected by
  // the per-pool generation seed.
  ASSERT_EQ(errorMessage(Other->recycle(Other->take().Id)), "");
  KLESlotTy Foreign = Other->take(); // Index 0, second take, as B.
  ASSERT_EQ(Foreign.Id & 0xffffffffu, B.Id & 0xffffffffu);
  EXPECT_NE(Foreign.Id, B.Id) << "pools must not share id spaces";
  EXPECT_NE(errorMessage(Pool->recycle(Foreign.Id)), "");
  // Forged ids.
  Msg = errorMessage(Pool->recycle((B.Id & ~uint64_t(0xffffffff)) | 1000));
  EXPECT_NE(Msg.find("does not belong"), std::string::npos) << Msg;
  EXPECT_NE(errorMessage(Pool->recycle(KLESlotTy::InvalidId)), "");
  EXPECT_EQ(Pool->getStats().SlotsInUse, 1u);

  // Still consistent: the remaining 3 slots are distinct from B and each
  // other, then the pool is exhausted; recycling everything works once.
  std::vector<KLESlotTy> All = {B};
  for (int I = 0; I < 3; ++I) {
    All.push_back(Pool->take());
    ASSERT_TRUE(All.back().isValid());
  }
  std::set<void *> Distinct;
  for (const KLESlotTy &Slot : All)
    Distinct.insert(Slot.HostPtr);
  EXPECT_EQ(Distinct.size(), 4u);
  EXPECT_FALSE(Pool->take().isValid());
  for (const KLESlotTy &Slot : All)
    EXPECT_EQ(errorMessage(Pool->recycle(Slot.Id)), "");
  EXPECT_EQ(Pool->getStats().SlotsInUse, 0u);
  EXPECT_EQ(errorMessage(Other->recycle(Foreign.Id)), "");
}

// 16 threads take and release concurrently, each holding up to 3 slots, with
// a cap of 12 slots so that exhaustion happens under contention. A slot
// held by two threads at once is detected by an owner word (atomic CAS) and
// by a per-thread pattern written into the whole slot and checked before the
// release.
TEST(KLESlotPoolTest, ConcurrentTakeRelease16Threads) {
  FakeSlabAllocatorTy Alloc;
  // Slabs of 4 + 8; 4 threads holding 3 each exhaust it.
  auto Pool = makePool(Alloc, geometry(4, 16, 12));
  ASSERT_TRUE(Pool);

  constexpr unsigned NumThreads = 16;
  constexpr unsigned Iterations = 20000;
  constexpr unsigned HoldMax = 3;
  constexpr size_t Words = SlotSize / sizeof(uint64_t);
  std::atomic<uint64_t> Takes{0}, Fallbacks{0}, OwnerConflicts{0},
      PatternMismatches{0}, RecycleErrors{0};

  auto Worker = [&](unsigned Tid) {
    std::deque<KLESlotTy> Held;
    auto ReleaseOldest = [&] {
      KLESlotTy S = Held.front();
      Held.pop_front();
      uint64_t *W = static_cast<uint64_t *>(S.HostPtr);
      for (size_t I = 1; I < Words; ++I)
        if (W[I] != (uint64_t(Tid) << 32 | S.Id >> 32))
          ++PatternMismatches;
      uint64_t Expected = Tid + 1;
      if (!__atomic_compare_exchange_n(&W[0], &Expected, 0, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ++OwnerConflicts;
      if (llvm::Error Err = Pool->recycle(S.Id)) {
        llvm::consumeError(std::move(Err));
        ++RecycleErrors;
      }
    };
    for (unsigned It = 0; It < Iterations; ++It) {
      if (Held.size() == HoldMax || (!Held.empty() && (It + Tid) % 3 == 0))
        ReleaseOldest();
      KLESlotTy S = Pool->take();
      if (!S.isValid()) {
        ++Fallbacks;
        continue;
      }
      ++Takes;
      uint64_t *W = static_cast<uint64_t *>(S.HostPtr);
      uint64_t Expected = 0;
      if (!__atomic_compare_exchange_n(&W[0], &Expected, Tid + 1, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ++OwnerConflicts;
      for (size_t I = 1; I < Words; ++I)
        W[I] = uint64_t(Tid) << 32 | S.Id >> 32;
      Held.push_back(S);
    }
    while (!Held.empty())
      ReleaseOldest();
  };

  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back(Worker, T);
  for (std::thread &T : Threads)
    T.join();

  EXPECT_EQ(OwnerConflicts.load(), 0u);
  EXPECT_EQ(PatternMismatches.load(), 0u);
  EXPECT_EQ(RecycleErrors.load(), 0u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            Fallbacks.load());
  EXPECT_EQ(totalFallbacks(*Pool), Fallbacks.load());
  EXPECT_EQ(Takes.load() + Fallbacks.load(), uint64_t(NumThreads) * Iterations);
  EXPECT_LE(S.PeakSlotsInUse, 12u);
  EXPECT_LE(S.SlabsAllocated, 2u);
  std::printf("[ info ] takes %llu, PoolExhausted fallbacks %llu, peak %llu, "
              "slabs %llu\n",
              (unsigned long long)Takes.load(),
              (unsigned long long)Fallbacks.load(),
              (unsigned long long)S.PeakSlotsInUse,
              (unsigned long long)S.SlabsAllocated);
  EXPECT_EQ(errorMessage(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
}

// A LIBOMPTARGET_KLE_MAX_SLOTS cap far above the growth's first slabs is
// reached exactly, however many slabs it takes, and not exceeded.
TEST(KLESlotPoolTest, LargeMaxSlotsIsReachable) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(1, 4, 50)); // 1+2+4+4*10+3: 14 slabs
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Held;
  for (int I = 0; I < 50; ++I) {
    Held.push_back(Pool->take());
    ASSERT_TRUE(Held.back().isValid()) << "take " << I;
  }
  EXPECT_FALSE(Pool->take().isValid());
  EXPECT_EQ(fallbacks(*Pool, KLEFallbackReasonTy::PoolExhausted), 1u);
  EXPECT_EQ(Pool->getStats().SlabsAllocated, 14u);
  for (const KLESlotTy &S : Held)
    EXPECT_EQ(errorMessage(Pool->recycle(S.Id)), "");
}

} // namespace
