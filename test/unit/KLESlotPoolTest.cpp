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

using namespace kle;
using kle::test::FakeSlabAllocatorTy;

namespace {

using KindTy = FakeSlabAllocatorTy::KindTy;

constexpr size_t Align = KLESlotPoolTy::SlotAlignment;

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

/// A config with one slab of \p N slots and no growth.
KLESlotPoolConfigTy singleSlab(uint32_t N) {
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = N;
  C.MaxSlotsPerSlab = N;
  C.MaxSlabs = 1;
  return C;
}

TEST(KLESlotPoolTest, ConfigValidation) {
  FakeSlabAllocatorTy Alloc;
  struct CaseTy {
    const char *Field;
    void (*Mutate)(KLESlotPoolConfigTy &);
  };
  const CaseTy Cases[] = {
      {"SlotSize", [](KLESlotPoolConfigTy &C) { C.SlotSize = 0; }},
      {"SlotSize", [](KLESlotPoolConfigTy &C) { C.SlotSize = 64; }},
      {"SlotSize", [](KLESlotPoolConfigTy &C) { C.SlotSize = 200; }},
      {"CounterBlockSize",
       [](KLESlotPoolConfigTy &C) { C.CounterBlockSize = 0; }},
      {"CounterBlockSize",
       [](KLESlotPoolConfigTy &C) { C.CounterBlockSize = 12; }},
      {"CounterBlockSize",
       [](KLESlotPoolConfigTy &C) { C.CounterBlockSize = 8192; }},
      {"InitialSlotsPerSlab",
       [](KLESlotPoolConfigTy &C) { C.InitialSlotsPerSlab = 0; }},
      {"GrowthFactor", [](KLESlotPoolConfigTy &C) { C.GrowthFactor = 0; }},
      {"MaxSlotsPerSlab",
       [](KLESlotPoolConfigTy &C) {
         C.InitialSlotsPerSlab = 64;
         C.MaxSlotsPerSlab = 32;
       }},
      {"MaxSlabs", [](KLESlotPoolConfigTy &C) { C.MaxSlabs = 0; }},
      {"AllocatorAlignment",
       [](KLESlotPoolConfigTy &C) { C.AllocatorAlignment = 0; }},
      {"AllocatorAlignment",
       [](KLESlotPoolConfigTy &C) { C.AllocatorAlignment = 48; }},
      {"MaxAllocFailureBackoff",
       [](KLESlotPoolConfigTy &C) {
         C.AllocFailureBackoff = 10;
         C.MaxAllocFailureBackoff = 5;
       }},
      {"slots",
       [](KLESlotPoolConfigTy &C) {
         C.MaxSlotsPerSlab = 1u << 30;
         C.MaxSlabs = 4;
       }},
      {"overflows",
       [](KLESlotPoolConfigTy &C) {
         C.SlotSize = size_t(1) << 50;
         C.MaxSlotsPerSlab = 1u << 20;
         C.MaxSlabs = 1;
       }},
  };
  for (const CaseTy &Case : Cases) {
    KLESlotPoolConfigTy C;
    Case.Mutate(C);
    auto PoolOrErr = KLESlotPoolTy::create(Alloc, C);
    ASSERT_FALSE(static_cast<bool>(PoolOrErr)) << Case.Field;
    std::string Msg = errorMessage(PoolOrErr.takeError());
    EXPECT_NE(Msg.find(Case.Field), std::string::npos) << Msg;
  }

  // Valid configurations, including the defaults and a MaxSlots cap that
  // makes an otherwise too large pool acceptable.
  KLESlotPoolConfigTy Defaults;
  EXPECT_TRUE(makePool(Alloc, Defaults) != nullptr);
  KLESlotPoolConfigTy Capped;
  Capped.MaxSlotsPerSlab = 1u << 30;
  Capped.MaxSlabs = 4;
  Capped.MaxSlots = 1024;
  Capped.SlotSize = 256;
  Capped.AllocatorAlignment = 4096;
  EXPECT_TRUE(makePool(Alloc, Capped) != nullptr);
  // Creation allocates nothing.
  EXPECT_EQ(Alloc.PinnedCalls + Alloc.DeviceCalls, 0u);
}

TEST(KLESlotPoolTest, FallbackReasonNamesAndCallerFallbacks) {
  EXPECT_EQ(kle::toString(KLEFallbackReasonTy::PoolExhausted), "PoolExhausted");
  EXPECT_EQ(kle::toString(KLEFallbackReasonTy::AllocationFailed),
            "AllocationFailed");
  EXPECT_EQ(kle::toString(KLEFallbackReasonTy::RecordReplay), "RecordReplay");
  EXPECT_EQ(kle::toString(KLEFallbackReasonTy::ImageABI), "ImageABI");
  EXPECT_EQ(kle::toString(KLEFallbackReasonTy::TransportDisabled),
            "TransportDisabled");

  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, singleSlab(4));
  ASSERT_TRUE(Pool);
  Pool->noteFallback(KLEFallbackReasonTy::RecordReplay);
  Pool->noteFallback(KLEFallbackReasonTy::ImageABI);
  Pool->noteFallback(KLEFallbackReasonTy::ImageABI);
  Pool->noteFallback(KLEFallbackReasonTy::TransportDisabled);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::RecordReplay), 1u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::ImageABI), 2u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::TransportDisabled), 1u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted), 0u);
  EXPECT_EQ(S.getTotalFallbacks(), 4u);
  EXPECT_EQ(Alloc.PinnedCalls, 0u) << "noteFallback must not allocate";
}

// Every HostPtr / DevicePtr is 128-byte aligned and every counter block is
// inside its allocation even though the allocator returns pointers that are
// only 16 (or 32, 64, 112) bytes past a 128-byte boundary, and the device
// mapping is not the identity.
TEST(KLESlotPoolTest, AlignmentWithMisalignedAllocator) {
  for (size_t Misalign :
       {size_t(0), size_t(16), size_t(32), size_t(64), size_t(112)}) {
    SCOPED_TRACE("Misalign " + std::to_string(Misalign));
    FakeSlabAllocatorTy Alloc;
    Alloc.Misalign = Misalign;
    Alloc.DeviceOffset = uintptr_t(1) << 44;
    KLESlotPoolConfigTy C;
    C.SlotSize = 256;
    C.CounterBlockSize = 24;
    C.InitialSlotsPerSlab = 3;
    C.GrowthFactor = 2;
    C.MaxSlotsPerSlab = 8;
    C.MaxSlabs = 4;
    C.AllocatorAlignment = 16; // What the fake guarantees.
    auto Pool = makePool(Alloc, C);
    ASSERT_TRUE(Pool);

    std::vector<KLESlotTy> Taken;
    // Bounded so a pool that never runs out fails instead of hanging.
    for (int I = 0; I < 100; ++I) {
      KLETakeResultTy R = Pool->take();
      if (!R)
        break;
      Taken.push_back(*R);
    }
    ASSERT_EQ(Taken.size(), 3u + 6u + 8u + 8u);

    std::set<uintptr_t> Hosts, Counters;
    for (const KLESlotTy &S : Taken) {
      EXPECT_EQ(addr(S.HostPtr) % Align, 0u);
      EXPECT_EQ(addr(S.DevicePtr) % Align, 0u);
      EXPECT_EQ(addr(S.DeviceCounters) % 8, 0u);
      EXPECT_EQ(addr(S.DevicePtr) - addr(S.HostPtr), Alloc.DeviceOffset);
      EXPECT_TRUE(Alloc.findContaining(S.HostPtr, C.SlotSize, KindTy::Pinned))
          << "slot not inside a live pinned allocation";
      EXPECT_TRUE(Alloc.findContaining(S.DeviceCounters, C.CounterBlockSize,
                                       KindTy::Device))
          << "counter block not inside a live device allocation";
      // The fake's "device" memory is host memory: the block must be zero.
      const unsigned char *Cnt =
          static_cast<const unsigned char *>(S.DeviceCounters);
      EXPECT_TRUE(std::all_of(Cnt, Cnt + C.CounterBlockSize,
                              [](unsigned char B) { return B == 0; }));
      Hosts.insert(addr(S.HostPtr));
      Counters.insert(addr(S.DeviceCounters));
    }
    // Distinct and non-overlapping: sorted neighbours are >= size apart.
    ASSERT_EQ(Hosts.size(), Taken.size());
    ASSERT_EQ(Counters.size(), Taken.size());
    for (auto It = Hosts.begin(), Next = std::next(It); Next != Hosts.end();
         ++It, ++Next)
      EXPECT_GE(*Next - *It, C.SlotSize);
    for (auto It = Counters.begin(), Next = std::next(It);
         Next != Counters.end(); ++It, ++Next)
      EXPECT_GE(*Next - *It, C.CounterBlockSize);

    // Padding is 128 - AllocatorAlignment bytes per allocation.
    ASSERT_EQ(Alloc.PinnedSizes.size(), 4u);
    EXPECT_EQ(Alloc.PinnedSizes[0], 3 * 256 + 112u);
    EXPECT_EQ(Alloc.DeviceSizes[0], 3 * 24 + 112u);
    EXPECT_FALSE(static_cast<bool>(Pool->deinit()));
    EXPECT_EQ(Alloc.liveCount(), 0u);
    EXPECT_EQ(Alloc.BadFrees, 0u);
  }
}

// An allocator that promises 128-byte alignment gets exact-size requests; if
// it breaks the promise the slab is returned and the take falls back.
TEST(KLESlotPoolTest, AllocatorAlignmentPromise) {
  {
    FakeSlabAllocatorTy Alloc;
    Alloc.Misalign = 0;
    KLESlotPoolConfigTy C = singleSlab(4);
    C.AllocatorAlignment = 128;
    auto Pool = makePool(Alloc, C);
    ASSERT_TRUE(Pool);
    ASSERT_TRUE(static_cast<bool>(Pool->take()));
    EXPECT_EQ(Pool->getStats().BytesPinned, 4 * 128u);
    EXPECT_EQ(Pool->getStats().BytesDevice, 4 * 64u);
  }
  {
    FakeSlabAllocatorTy Alloc;
    Alloc.Misalign = 16; // Breaks the promise below.
    KLESlotPoolConfigTy C = singleSlab(4);
    C.AllocatorAlignment = 4096;
    C.AllocFailureBackoff = 0;
    C.MaxAllocFailureBackoff = 0;
    auto Pool = makePool(Alloc, C);
    ASSERT_TRUE(Pool);
    KLETakeResultTy R = Pool->take();
    ASSERT_FALSE(static_cast<bool>(R));
    EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
    EXPECT_EQ(Alloc.liveCount(), 0u);
    EXPECT_EQ(Alloc.BadFrees, 0u);
    KLESlotPoolStatsTy S = Pool->getStats();
    EXPECT_EQ(S.AllocationFailures, 1u);
    EXPECT_EQ(S.SlabsAllocated, 0u);
    EXPECT_EQ(S.BytesPinned, 0u);
  }
  {
    // Host pointer aligned but the device mapping shifts it by 64 bytes.
    FakeSlabAllocatorTy Alloc;
    Alloc.Misalign = 0;
    Alloc.DeviceOffset = 64;
    auto Pool = makePool(Alloc, singleSlab(4));
    ASSERT_TRUE(Pool);
    KLETakeResultTy R = Pool->take();
    ASSERT_FALSE(static_cast<bool>(R));
    EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
    EXPECT_EQ(Alloc.liveCount(), 0u);
  }
}

TEST(KLESlotPoolTest, GeometricGrowthRespectsCaps) {
  FakeSlabAllocatorTy Alloc;
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 2;
  C.GrowthFactor = 2;
  C.MaxSlotsPerSlab = 8;
  C.MaxSlabs = 5;
  C.MaxSlots = 20;
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 20; ++I) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R)) << "take " << I;
    Taken.push_back(*R);
  }
  // 2 + 4 + 8 + (20 - 14) slots; default AllocatorAlignment pads 127 bytes.
  const std::vector<size_t> Expected = {2 * 128 + 127, 4 * 128 + 127,
                                        8 * 128 + 127, 6 * 128 + 127};
  EXPECT_EQ(Alloc.PinnedSizes, Expected);
  KLETakeResultTy R = Pool->take();
  ASSERT_FALSE(static_cast<bool>(R));
  EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::PoolExhausted);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlabsAllocated, 4u);
  EXPECT_EQ(S.SlotCapacity, 20u);
  EXPECT_EQ(S.BytesPinned, 20 * 128 + 4 * 127u);
  EXPECT_EQ(S.BytesDevice, 20 * 64 + 4 * 127u);
  EXPECT_EQ(S.BytesPinned, Alloc.liveBytes(KindTy::Pinned));
  EXPECT_EQ(S.BytesDevice, Alloc.liveBytes(KindTy::Device));
  for (const KLESlotTy &Slot : Taken)
    EXPECT_EQ(errorMessage(Pool->recycle(Slot)), "");
}

TEST(KLESlotPoolTest, ExhaustionWithCap) {
  FakeSlabAllocatorTy Alloc;
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 4;
  C.MaxSlots = 8; // Cap: two slabs of 4.
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 8; ++I) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    Taken.push_back(*R);
  }
  for (int I = 1; I <= 2; ++I) {
    KLETakeResultTy R = Pool->take(); // The (cap+1)-th take.
    ASSERT_FALSE(static_cast<bool>(R));
    EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::PoolExhausted);
    EXPECT_EQ(Pool->getStats().getFallbacks(KLEFallbackReasonTy::PoolExhausted),
              uint64_t(I));
  }
  EXPECT_EQ(Alloc.PinnedCalls, 2u) << "exhaustion must not call the allocator";

  KLESlotTy Freed = Taken[5];
  ASSERT_EQ(errorMessage(Pool->recycle(Freed)), "");
  KLETakeResultTy R = Pool->take();
  ASSERT_TRUE(static_cast<bool>(R));
  EXPECT_EQ(R->HostPtr, Freed.HostPtr);
  EXPECT_NE(R->Id, Freed.Id) << "a new take must get a new id";

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsTaken, 9u);
  EXPECT_EQ(S.SlotsRecycled, 1u);
  EXPECT_EQ(S.SlotsInUse, 8u);
  EXPECT_EQ(S.PeakSlotsInUse, 8u);
  EXPECT_EQ(S.getTotalFallbacks(), 2u);
}

TEST(KLESlotPoolTest, InjectedPinnedAllocationFailure) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailPinnedOnCall = 2;
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 1;
  C.GrowthFactor = 1;
  C.MaxSlabs = 4;
  C.AllocFailureBackoff = 3;
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);

  KLETakeResultTy First = Pool->take();
  ASSERT_TRUE(static_cast<bool>(First));
  KLETakeResultTy R = Pool->take(); // Needs slab 2; its allocatePinned fails.
  ASSERT_FALSE(static_cast<bool>(R));
  EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  EXPECT_EQ(Alloc.DeviceCalls, 1u) << "no device block for a failed slab";
  EXPECT_EQ(Alloc.liveCount(), 2u) << "only slab 1 and its counters live";

  // Backoff: the next 3 growth-needing takes do not call the allocator.
  for (int I = 0; I < 3; ++I) {
    KLETakeResultTy B = Pool->take();
    ASSERT_FALSE(static_cast<bool>(B));
    EXPECT_EQ(B.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
  }
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  // The next growth-needing take retries the allocator and succeeds.
  KLETakeResultTy Retry = Pool->take();
  ASSERT_TRUE(static_cast<bool>(Retry));
  EXPECT_EQ(Alloc.PinnedCalls, 3u);

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::AllocationFailed), 4u);
  EXPECT_EQ(S.AllocationFailures, 1u);
  EXPECT_EQ(S.SlabsAllocated, 2u);
  EXPECT_EQ(S.SlotsTaken, 2u);
  EXPECT_EQ(S.BytesPinned, Alloc.liveBytes(KindTy::Pinned));
  EXPECT_EQ(S.BytesDevice, Alloc.liveBytes(KindTy::Device));

  EXPECT_FALSE(static_cast<bool>(Pool->deinit()));
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
}

TEST(KLESlotPoolTest, InjectedDeviceAllocationFailureFreesPinnedSlab) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailDeviceOnCall = 1;
  KLESlotPoolConfigTy C = singleSlab(4);
  C.AllocFailureBackoff = 0; // Retry on the very next take.
  C.MaxAllocFailureBackoff = 0;
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);

  KLETakeResultTy R = Pool->take();
  ASSERT_FALSE(static_cast<bool>(R));
  EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
  EXPECT_EQ(Alloc.PinnedCalls, 1u);
  EXPECT_EQ(Alloc.PinnedFrees, 1u) << "the pinned slab must be freed";
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Alloc.BadFrees, 0u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.BytesPinned, 0u);
  EXPECT_EQ(S.SlabsAllocated, 0u);

  KLETakeResultTy Retry = Pool->take();
  ASSERT_TRUE(static_cast<bool>(Retry));
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  EXPECT_EQ(Alloc.DeviceCalls, 2u);
  EXPECT_EQ(Alloc.liveCount(), 2u);
}

TEST(KLESlotPoolTest, BackoffDoublesAndResets) {
  FakeSlabAllocatorTy Alloc;
  Alloc.FailAllPinned = true;
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 1;
  C.GrowthFactor = 1;
  C.MaxSlabs = 8;
  C.AllocFailureBackoff = 2;
  C.MaxAllocFailureBackoff = 8;
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);

  // Takes that reach the allocator (1-based): 1, then skip 2, -> 4, skip 4
  // -> 9, skip 8 -> 18, skip 8 (capped) -> 27.
  std::vector<unsigned> CallingTakes;
  for (unsigned T = 1; T <= 30; ++T) {
    unsigned Before = Alloc.PinnedCalls;
    KLETakeResultTy R = Pool->take();
    ASSERT_FALSE(static_cast<bool>(R));
    ASSERT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::AllocationFailed);
    if (Alloc.PinnedCalls != Before)
      CallingTakes.push_back(T);
  }
  EXPECT_EQ(CallingTakes, (std::vector<unsigned>{1, 4, 9, 18, 27}));
  EXPECT_EQ(Pool->getStats().AllocationFailures, 5u);
  EXPECT_EQ(Alloc.liveCount(), 0u);

  // Recovery: the window left after take 27 is 8; takes 28-30 used 3.
  Alloc.FailAllPinned = false;
  unsigned Skipped = 0;
  KLETakeResultTy R = Pool->take();
  while (!R && Skipped < 100) {
    ++Skipped;
    R = Pool->take();
  }
  ASSERT_TRUE(static_cast<bool>(R));
  EXPECT_EQ(Skipped, 5u);
  // Success resets the window to AllocFailureBackoff.
  Alloc.FailAllPinned = true;
  EXPECT_FALSE(static_cast<bool>(Pool->take())); // Calls, fails.
  unsigned Calls = Alloc.PinnedCalls;
  EXPECT_FALSE(static_cast<bool>(Pool->take()));
  EXPECT_FALSE(static_cast<bool>(Pool->take()));
  EXPECT_EQ(Alloc.PinnedCalls, Calls);
  EXPECT_FALSE(static_cast<bool>(Pool->take()));
  EXPECT_EQ(Alloc.PinnedCalls, Calls + 1);
}

TEST(KLESlotPoolTest, DeinitWithOutstandingSlots) {
  auto Alloc = std::make_unique<FakeSlabAllocatorTy>();
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 2;
  C.MaxSlabs = 4;
  auto Pool = makePool(*Alloc, C);
  ASSERT_TRUE(Pool);
  std::vector<KLESlotTy> Taken;
  for (int I = 0; I < 10; ++I) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    Taken.push_back(*R);
  }
  for (int I = 0; I < 3; ++I)
    ASSERT_EQ(errorMessage(Pool->recycle(Taken[I])), "");
  EXPECT_GT(Alloc->liveCount(), 0u);

  EXPECT_EQ(errorMessage(Pool->deinit()), "");
  EXPECT_EQ(Alloc->liveCount(), 0u) << "all slabs must be returned";
  EXPECT_EQ(Alloc->PinnedCalls, Alloc->PinnedFrees);
  EXPECT_EQ(Alloc->DeviceCalls, Alloc->DeviceFrees);
  EXPECT_EQ(Alloc->BadFrees, 0u);

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.OutstandingAtDeinit, 7u);
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.SlabsLive, 0u);
  EXPECT_EQ(S.SlabsAllocated, 3u); // 2 + 4 + 8 slots.
  EXPECT_EQ(S.BytesPinned, 0u);
  EXPECT_EQ(S.BytesDevice, 0u);

  KLETakeResultTy R = Pool->take();
  ASSERT_FALSE(static_cast<bool>(R));
  EXPECT_EQ(R.getFallbackReason(), KLEFallbackReasonTy::TransportDisabled);
  EXPECT_NE(errorMessage(Pool->recycle(Taken[5])), "");
  EXPECT_NE(errorMessage(Pool->recycle(Taken[0])), "");
  EXPECT_NE(errorMessage(Pool->recycle(Taken[6].Id)), "");
  EXPECT_EQ(Pool->getStats().RecycleErrors, 3u);
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
    ASSERT_TRUE(static_cast<bool>(Pool->take()));
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
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    Held.push_back(*R);
  }
  std::set<void *> Distinct;
  for (const KLESlotTy &S : Held)
    Distinct.insert(S.HostPtr);
  ASSERT_EQ(Distinct.size(), 8u);
  ASSERT_FALSE(static_cast<bool>(Pool->take()));

  // "Completion observed" for slots 5, 2, 7, in that order.
  for (int I : {5, 2, 7})
    ASSERT_EQ(errorMessage(Pool->recycle(Held[I])), "");
  for (int I : {7, 2, 5}) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    EXPECT_EQ(R->HostPtr, Held[I].HostPtr);
    EXPECT_EQ(R->DevicePtr, Held[I].DevicePtr);
    EXPECT_EQ(R->DeviceCounters, Held[I].DeviceCounters);
    EXPECT_NE(R->Id, Held[I].Id);
    Held[I] = *R;
  }
  ASSERT_FALSE(static_cast<bool>(Pool->take()));

  // Randomised: track which slots are held; a take must never return one.
  std::mt19937 Rng(12345);
  std::map<void *, KLESlotTy> Owned;
  for (const KLESlotTy &S : Held)
    Owned[S.HostPtr] = S;
  for (int Step = 0; Step < 20000; ++Step) {
    if (!Owned.empty() && (Rng() % 2 || Owned.size() == 8)) {
      auto It = Owned.begin();
      std::advance(It, Rng() % Owned.size());
      ASSERT_EQ(errorMessage(Pool->recycle(It->second)), "");
      Owned.erase(It);
    } else {
      KLETakeResultTy R = Pool->take();
      ASSERT_TRUE(static_cast<bool>(R)) << "a slot was free";
      ASSERT_EQ(Owned.count(R->HostPtr), 0u)
          << "slot handed out while still held";
      Owned[R->HostPtr] = *R;
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
  KLESlotPoolConfigTy Config = singleSlab(4);
  auto Pool = makePool(Alloc, Config);
  ASSERT_TRUE(Pool);
  KLETakeResultTy R = Pool->take();
  ASSERT_TRUE(static_cast<bool>(R));
  const unsigned char *Bytes = static_cast<unsigned char *>(R->HostPtr);
  for (size_t I = 0; I < Config.SlotSize; ++I)
    ASSERT_EQ(Bytes[I], 0u) << "byte " << I << " of a new slot";
  std::memset(static_cast<char *>(R->HostPtr) + 64, 0x5C, 16);
  void *Host = R->HostPtr;
  ASSERT_EQ(errorMessage(Pool->recycle(*R)), "");
  KLETakeResultTy Again = Pool->take();
  ASSERT_TRUE(static_cast<bool>(Again));
  ASSERT_EQ(Again->HostPtr, Host);
  for (size_t I = 64; I < 80; ++I)
    EXPECT_EQ(static_cast<unsigned char *>(Again->HostPtr)[I], 0x5Cu);
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
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    Held.push_back(*R);
  }
  for (int I : {1, 4, 6})
    ASSERT_EQ(errorMessage(Pool->recycle(Held[I])), "");
  const uint64_t TakenBefore = Pool->getStats().SlotsTaken;
  std::multiset<void *> Visited;
  size_t N = Pool->forEachFreeSlot([&](const KLESlotTy &S) {
    Visited.insert(S.HostPtr);
    EXPECT_FALSE(S.isValid()) << "a visit is not a handle";
    std::memset(static_cast<char *>(S.HostPtr) + 64, 0xA7, 16);
  });
  EXPECT_EQ(N, 3u);
  EXPECT_EQ(Visited, (std::multiset<void *>{Held[1].HostPtr, Held[4].HostPtr,
                                            Held[6].HostPtr}));
  EXPECT_EQ(Pool->getStats().SlotsTaken, TakenBefore);
  EXPECT_EQ(Pool->getStats().SlotsInUse, 5u);
  // Same order as before the visit (last released on top), with the bytes.
  for (int I : {6, 4, 1}) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    EXPECT_EQ(R->HostPtr, Held[I].HostPtr);
    for (size_t B = 64; B < 80; ++B)
      EXPECT_EQ(static_cast<unsigned char *>(R->HostPtr)[B], 0xA7u);
    Held[I] = *R;
  }
  EXPECT_FALSE(static_cast<bool>(Pool->take()));
  EXPECT_EQ(Pool->forEachFreeSlot([](const KLESlotTy &) {
    ADD_FAILURE() << "visited a held slot";
  }),
            0u);
  for (const KLESlotTy &S : Held)
    ASSERT_EQ(errorMessage(Pool->recycle(S)), "");
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
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 4;
  C.GrowthFactor = 2;
  C.MaxSlotsPerSlab = 16;
  C.MaxSlabs = 8;
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);

  constexpr unsigned Window = 20;
  constexpr unsigned Cycles = 1000000;
  std::deque<KLESlotTy> InFlight;
  for (unsigned I = 0; I < Window; ++I) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    InFlight.push_back(*R);
  }
  unsigned Failures = 0;
  for (unsigned I = 0; I < Cycles; ++I) {
    KLETakeResultTy R = Pool->take(); // Window + 1 in flight at the peak.
    if (!R) {
      ++Failures;
      break;
    }
    InFlight.push_back(*R);
    // Completion of the oldest launch observed.
    if (Pool->recycle(InFlight.front()))
      ++Failures;
    InFlight.pop_front();
  }
  ASSERT_EQ(Failures, 0u);

  // Peak 21 slots -> slabs of 4 + 8 + 16 = 28 slots.
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.PeakSlotsInUse, Window + 1);
  EXPECT_EQ(S.SlabsAllocated, 3u);
  EXPECT_EQ(S.SlotCapacity, 28u);
  EXPECT_EQ(S.BytesPinned, 28 * 128 + 3 * 127u);
  EXPECT_EQ(S.BytesDevice, 28 * 64 + 3 * 127u);
  EXPECT_EQ(Alloc.PinnedCalls, 3u);
  EXPECT_EQ(Alloc.liveBytes(KindTy::Pinned), S.BytesPinned);
  EXPECT_EQ(S.SlotsTaken, uint64_t(Window) + Cycles);
  EXPECT_EQ(S.SlotsRecycled, uint64_t(Cycles));
  EXPECT_EQ(S.SlotsInUse, uint64_t(Window));
  EXPECT_EQ(S.getTotalFallbacks(), 0u);
}

TEST(KLESlotPoolTest, DoubleAndForeignReleaseAreErrors) {
  FakeSlabAllocatorTy Alloc, OtherAlloc;
  auto Pool = makePool(Alloc, singleSlab(4));
  auto Other = makePool(OtherAlloc, singleSlab(4));
  ASSERT_TRUE(Pool && Other);

  KLESlotTy A = *Pool->take();
  ASSERT_TRUE(A.isValid());
  ASSERT_EQ(errorMessage(Pool->recycle(A)), "");
  std::string Msg = errorMessage(Pool->recycle(A)); // Double release.
  EXPECT_NE(Msg.find("not in use"), std::string::npos) << Msg;
  EXPECT_NE(errorMessage(Pool->recycle(A.Id)), ""); // Double, by id.

  // The slot is taken again; a stale copy of the old handle (or id) must not
  // free it.
  KLESlotTy B = *Pool->take();
  ASSERT_EQ(B.HostPtr, A.HostPtr);
  EXPECT_NE(errorMessage(Pool->recycle(A)), "");
  EXPECT_NE(errorMessage(Pool->recycle(A.Id)), "");
  EXPECT_EQ(Pool->getStats().SlotsInUse, 1u) << "stale release freed a slot";

  // A slot of another pool with the same index and take count: rejected by
  // the pointer check (handle) and by the per-pool generation seed (id).
  ASSERT_EQ(errorMessage(Other->recycle(*Other->take())), "");
  KLESlotTy Foreign = *Other->take(); // Index 0, second take, as B.
  ASSERT_EQ(Foreign.Id & 0xffffffffu, B.Id & 0xffffffffu);
  EXPECT_NE(Foreign.Id, B.Id) << "pools must not share id spaces";
  Msg = errorMessage(Pool->recycle(Foreign));
  EXPECT_NE(Msg.find("does not belong"), std::string::npos) << Msg;
  EXPECT_NE(errorMessage(Pool->recycle(Foreign.Id)), "");
  // Forged handles and ids.
  KLESlotTy Forged = B;
  Forged.HostPtr = static_cast<char *>(Forged.HostPtr) + 128;
  EXPECT_NE(errorMessage(Pool->recycle(Forged)), "");
  Forged = B;
  Forged.Id = (B.Id & ~uint64_t(0xffffffff)) | 1000;
  EXPECT_NE(errorMessage(Pool->recycle(Forged)), "");
  EXPECT_NE(errorMessage(Pool->recycle(Forged.Id)), "");
  EXPECT_NE(errorMessage(Pool->recycle(KLESlotTy())), "");
  EXPECT_NE(errorMessage(Pool->recycle(KLESlotTy::InvalidId)), "");

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.RecycleErrors, 11u);
  EXPECT_EQ(S.SlotsInUse, 1u);
  EXPECT_EQ(S.SlotsRecycled, 1u);

  // Still consistent: the remaining 3 slots are distinct from B and each
  // other, then the pool is exhausted; releasing everything works once,
  // half of them by id.
  std::vector<KLESlotTy> All = {B};
  for (int I = 0; I < 3; ++I) {
    KLETakeResultTy R = Pool->take();
    ASSERT_TRUE(static_cast<bool>(R));
    All.push_back(*R);
  }
  std::set<void *> Distinct;
  for (const KLESlotTy &Slot : All)
    Distinct.insert(Slot.HostPtr);
  EXPECT_EQ(Distinct.size(), 4u);
  EXPECT_FALSE(static_cast<bool>(Pool->take()));
  for (size_t I = 0; I < All.size(); ++I)
    EXPECT_EQ(
        errorMessage(I % 2 ? Pool->recycle(All[I].Id) : Pool->recycle(All[I])),
        "");
  EXPECT_EQ(Pool->getStats().SlotsInUse, 0u);
  EXPECT_EQ(Pool->getStats().SlotsRecycled, 5u);
  EXPECT_EQ(errorMessage(Other->recycle(Foreign.Id)), "");
}

// 16 threads take and release concurrently, each holding up to 3 slots, with
// a cap of 12 slots so that exhaustion happens under contention. A slot
// held by two threads at once is detected by an owner word (atomic CAS) and
// by a per-thread pattern written into the whole slot and checked before the
// release.
TEST(KLESlotPoolTest, ConcurrentTakeRelease16Threads) {
  FakeSlabAllocatorTy Alloc;
  KLESlotPoolConfigTy C;
  C.InitialSlotsPerSlab = 4;
  C.GrowthFactor = 2;
  C.MaxSlotsPerSlab = 16;
  C.MaxSlabs = 8;
  C.MaxSlots = 12; // Slabs of 4 + 8; 4 threads holding 3 each exhaust it.
  auto Pool = makePool(Alloc, C);
  ASSERT_TRUE(Pool);

  constexpr unsigned NumThreads = 16;
  constexpr unsigned Iterations = 20000;
  constexpr unsigned HoldMax = 3;
  constexpr size_t Words = 128 / sizeof(uint64_t);
  std::atomic<uint64_t> Takes{0}, Fallbacks{0}, OtherFallbacks{0},
      OwnerConflicts{0}, PatternMismatches{0}, RecycleErrors{0};

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
      // Exercise both overloads.
      llvm::Error Err =
          (S.Id >> 32) % 2 ? Pool->recycle(S.Id) : Pool->recycle(S);
      if (Err) {
        llvm::consumeError(std::move(Err));
        ++RecycleErrors;
      }
    };
    for (unsigned It = 0; It < Iterations; ++It) {
      if (Held.size() == HoldMax || (!Held.empty() && (It + Tid) % 3 == 0))
        ReleaseOldest();
      KLETakeResultTy R = Pool->take();
      if (!R) {
        if (R.getFallbackReason() == KLEFallbackReasonTy::PoolExhausted)
          ++Fallbacks;
        else
          ++OtherFallbacks;
        continue;
      }
      ++Takes;
      KLESlotTy S = *R;
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
  EXPECT_EQ(OtherFallbacks.load(), 0u);

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsTaken, Takes.load());
  EXPECT_EQ(S.SlotsRecycled, Takes.load());
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            Fallbacks.load());
  EXPECT_EQ(S.getTotalFallbacks(), Fallbacks.load());
  EXPECT_EQ(S.SlotsTaken + S.getTotalFallbacks(),
            uint64_t(NumThreads) * Iterations);
  EXPECT_LE(S.PeakSlotsInUse, 12u);
  EXPECT_LE(S.SlabsAllocated, 2u);
  EXPECT_EQ(S.RecycleErrors, 0u);
  std::printf("[ info ] takes %llu, PoolExhausted fallbacks %llu, peak %llu, "
              "slabs %llu\n",
              (unsigned long long)S.SlotsTaken,
              (unsigned long long)Fallbacks.load(),
              (unsigned long long)S.PeakSlotsInUse,
              (unsigned long long)S.SlabsAllocated);
  EXPECT_EQ(errorMessage(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
}

} // namespace

namespace {

TEST(KLESlotPoolConfig, SlabsToReachFollowsTheGrowthRule) {
  KLESlotPoolConfigTy C; // 64, 128, ..., 4096, then 4096 per slab
  EXPECT_EQ(slabsToReach(C, 0), 1u);
  EXPECT_EQ(slabsToReach(C, 64), 1u);
  EXPECT_EQ(slabsToReach(C, 65), 2u);
  EXPECT_EQ(slabsToReach(C, 8128), 7u); // 64 + ... + 4096
  EXPECT_EQ(slabsToReach(C, 8129), 8u);
  EXPECT_EQ(slabsToReach(C, 110528), 32u); // 8128 + 25 * 4096
  EXPECT_EQ(slabsToReach(C, 110529), 33u);
  EXPECT_EQ(slabsToReach(C, uint64_t(1) << 24), 7u + 4095u);
  C.GrowthFactor = 1;
  C.InitialSlotsPerSlab = 3;
  EXPECT_EQ(slabsToReach(C, 10), 4u);
}

// A LIBOMPTARGET_KLE_MAX_SLOTS cap above what the default MaxSlabs can hold
// is reachable once MaxSlabs comes from slabsToReach (as KLETransportTy does).
TEST(KLESlotPoolConfig, LargeMaxSlotsIsReachable) {
  FakeSlabAllocatorTy Alloc;
  KLESlotPoolConfigTy Config;
  Config.InitialSlotsPerSlab = 1;
  Config.MaxSlotsPerSlab = 4;
  Config.MaxSlots = 50; // 1 + 2 + 4 + 4 * 11 = 51 >= 50: 14 slabs
  Config.MaxSlabs = std::max<uint32_t>(Config.MaxSlabs,
                                       slabsToReach(Config, Config.MaxSlots));
  EXPECT_EQ(Config.MaxSlabs, 14u);
  auto Pool = makePool(Alloc, Config);
  std::vector<KLESlotTy> Held;
  for (int I = 0; I < 50; ++I) {
    KLETakeResultTy T = Pool->take();
    ASSERT_TRUE(T) << "take " << I;
    Held.push_back(*T);
  }
  EXPECT_FALSE(Pool->take()); // the cap, not the slab count, stops it
  EXPECT_EQ(Pool->getStats().getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            1u);
  EXPECT_EQ(Pool->getStats().SlabsAllocated, 14u);
  for (const KLESlotTy &S : Held)
    EXPECT_EQ(errorMessage(Pool->recycle(S)), "");
}

} // namespace
