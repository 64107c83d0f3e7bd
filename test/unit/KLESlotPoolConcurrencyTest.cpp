//===- KLESlotPoolConcurrencyTest.cpp - Lock-free KLE slot pool tests -----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Concurrency tests of the slot pool's lock-free take() / recycle() and of
// growth outside the take/release fast path (see "Thread-safety" in
// KLESlotPool.h). Run plain and under ThreadSanitizer / AddressSanitizer.
//
//===----------------------------------------------------------------------===//

#include "KLESlotPool.h"
#include "FakeSlabAllocator.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace llvm::omp::target::plugin;
using test::FakeSlabAllocatorTy;

namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<KLESlotPoolTy> makePool(FakeSlabAllocatorTy &Alloc,
                                        const KLESlotPoolConfigTy &Config) {
  auto PoolOrErr = KLESlotPoolTy::create(Alloc, Config);
  if (!PoolOrErr) {
    ADD_FAILURE() << "create failed: " << llvm::toString(PoolOrErr.takeError());
    return nullptr;
  }
  return std::move(*PoolOrErr);
}

bool succeeded(llvm::Error Err) {
  if (!Err)
    return true;
  llvm::consumeError(std::move(Err));
  return false;
}

uint32_t indexOf(const KLESlotTy &S) {
  return static_cast<uint32_t>(S.Id & 0xffffffffu);
}

/// Checks, across threads, that no slot is held by two takers at once: an
/// owner word per slot index (claimed by compare-and-swap after take(),
/// cleared before recycle()), the slot's address per index (must never
/// change), and a per-holder pattern written into the whole slot and checked
/// before release (so slot bytes are handed over with happens-before, which
/// ThreadSanitizer checks).
class HolderCheckTy {
public:
  explicit HolderCheckTy(size_t MaxSlots)
      : Owner(MaxSlots), Host(MaxSlots) {}

  void onTake(unsigned Tid, const KLESlotTy &S) {
    uint32_t I = indexOf(S);
    if (I >= Owner.size()) {
      ++Errors;
      return;
    }
    uint32_t Expected = 0;
    if (!Owner[I].compare_exchange_strong(Expected, Tid + 1))
      ++Errors;
    uintptr_t P = reinterpret_cast<uintptr_t>(S.HostPtr), Seen = 0;
    if (!Host[I].compare_exchange_strong(Seen, P) && Seen != P)
      ++Errors;
    uint64_t *W = static_cast<uint64_t *>(S.HostPtr);
    for (size_t K = 0; K < Words; ++K)
      W[K] = pattern(Tid, S);
  }

  void beforeRelease(unsigned Tid, const KLESlotTy &S) {
    const uint64_t *W = static_cast<const uint64_t *>(S.HostPtr);
    for (size_t K = 0; K < Words; ++K)
      if (W[K] != pattern(Tid, S))
        ++Errors;
    uint32_t Expected = Tid + 1;
    if (!Owner[indexOf(S)].compare_exchange_strong(Expected, 0))
      ++Errors;
  }

  std::atomic<uint64_t> Errors{0};

  /// The index a taker recorded for \p HostPtr, or ~0 if none has yet.
  uint64_t indexOfHost(const void *HostPtr) const {
    for (size_t I = 0; I < Host.size(); ++I)
      if (Host[I].load() == reinterpret_cast<uintptr_t>(HostPtr))
        return I;
    return ~uint64_t(0);
  }

private:
  static constexpr size_t Words = 128 / sizeof(uint64_t);
  static uint64_t pattern(unsigned Tid, const KLESlotTy &S) {
    return uint64_t(Tid) << 40 ^ S.Id;
  }
  std::vector<std::atomic<uint32_t>> Owner;
  std::vector<std::atomic<uintptr_t>> Host;
};

/// After the concurrent phase: the free stack holds every slot exactly once.
/// Takes as many slots as the live slabs hold without the allocator being called (a lost slot
/// would force a growth or an exhaustion) and checks they are distinct (a
/// slot pushed twice would come out twice), then releases them.
void expectAllSlotsFreeOnce(KLESlotPoolTy &Pool, FakeSlabAllocatorTy &Alloc) {
  ASSERT_EQ(Pool.getStats().SlotsInUse, 0u);
  const uint64_t Capacity =
      Alloc.liveBytes(FakeSlabAllocatorTy::KindTy::Pinned) /
      KLESlotPoolTy::SlotSize;
  unsigned Calls = Alloc.PinnedCalls;
  std::vector<KLESlotTy> All;
  std::set<void *> Distinct;
  for (uint64_t I = 0; I < Capacity; ++I) {
    KLESlotTy R = Pool.take();
    ASSERT_TRUE(R.isValid()) << "slot " << I << " of " << Capacity
                             << " was lost";
    All.push_back(R);
    Distinct.insert(R.HostPtr);
  }
  EXPECT_EQ(Distinct.size(), All.size()) << "a slot was on the free list twice";
  EXPECT_EQ(Alloc.PinnedCalls, Calls) << "the free slots were not all there";
  for (const KLESlotTy &Slot : All)
    EXPECT_TRUE(succeeded(Pool.recycle(Slot.Id)));
}

/// Slabs of \p First, 2 * \p First, ... up to \p MaxSlab slots, \p Max in
/// all.
KLESlotPoolConfigTy geometry(uint32_t First, uint32_t MaxSlab, uint32_t Max) {
  KLESlotPoolConfigTy C;
  C.FirstSlabSlots = First;
  C.MaxSlabSlots = MaxSlab;
  C.MaxSlots = Max;
  return C;
}

/// Fallbacks for other reasons than PoolExhausted.
uint64_t otherFallbacks(const KLESlotPoolTy &Pool) {
  KLESlotPoolStatsTy S = Pool.getStats();
  uint64_t Sum = 0;
  for (uint64_t N : S.Fallbacks)
    Sum += N;
  return Sum - S.getFallbacks(KLEFallbackReasonTy::PoolExhausted);
}

// 16 threads take and release concurrently while the pool grows from 4 to
// 316 slots (no small cap, so exhaustion only happens while another thread
// grows): every slot handed out is distinct among concurrent holders, counts
// balance, and every slot ends up on the free list exactly once.
TEST(KLESlotPoolConcurrency, SixteenThreadsNoLostOrDuplicatedSlots) {
  FakeSlabAllocatorTy Alloc;
  // 4 + 8 + 16 + 32 + 4 * 64 = 316 slots
  auto Pool = makePool(Alloc, geometry(4, 64, 316));
  ASSERT_TRUE(Pool);

  constexpr unsigned NumThreads = 16, Iterations = 20000, HoldMax = 8;
  HolderCheckTy Check(316);
  std::atomic<uint64_t> Takes{0}, Exhausted{0}, RecycleErrors{0};

  std::atomic<unsigned> Ready{0};
  auto Worker = [&](unsigned Tid) {
    std::mt19937 Rng(Tid);
    ++Ready;
    while (Ready.load() < NumThreads)
      std::this_thread::yield();
    std::deque<KLESlotTy> Held;
    auto ReleaseOne = [&] {
      // Not always the oldest, so the free stack order gets shuffled.
      size_t Pick = Rng() % Held.size();
      KLESlotTy S = Held[Pick];
      Held.erase(Held.begin() + Pick);
      Check.beforeRelease(Tid, S);
      if (!succeeded(Pool->recycle(S.Id)))
        ++RecycleErrors;
    };
    for (unsigned It = 0; It < Iterations; ++It) {
      if (Held.size() == HoldMax || (!Held.empty() && Rng() % 2))
        ReleaseOne();
      KLESlotTy R = Pool->take();
      if (!R.isValid()) {
        ++Exhausted;
        continue;
      }
      ++Takes;
      Check.onTake(Tid, R);
      Held.push_back(R);
    }
    while (!Held.empty())
      ReleaseOne();
  };
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back(Worker, T);
  for (std::thread &T : Threads)
    T.join();

  EXPECT_EQ(Check.Errors.load(), 0u);
  EXPECT_EQ(RecycleErrors.load(), 0u);
  EXPECT_EQ(otherFallbacks(*Pool), 0u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            Exhausted.load());
  EXPECT_EQ(Takes.load() + Exhausted.load(), uint64_t(NumThreads) * Iterations);
  EXPECT_LE(S.PeakSlotsInUse, uint64_t(NumThreads) * HoldMax);
  EXPECT_LE(S.PeakSlotsInUse, 316u);
  EXPECT_EQ(uint64_t(Alloc.PinnedCalls), S.SlabsAllocated)
      << "every allocator call must become a slab";
  std::printf("[ info ] takes %llu, PoolExhausted %llu, peak %llu, slabs %llu\n",
              (unsigned long long)Takes.load(),
              (unsigned long long)Exhausted.load(),
              (unsigned long long)S.PeakSlotsInUse,
              (unsigned long long)S.SlabsAllocated);
  expectAllSlotsFreeOnce(*Pool, Alloc);
  EXPECT_EQ(llvm::toString(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
}

// Growth racing with takes and releases: a slow allocator (each
// allocatePinned sleeps) and a pool that starts at 1 slot and doubles up to 7
// slabs (127 slots). 16 threads first race to hold 7 slots each (112, which
// needs all 7 slabs), with growths overlapping takes of the new slabs' slots
// by other threads; then they cycle take/release while holding up to 7.
// Takes that find no free slot during a growth wait for it; only takes at the
// cap fall back (PoolExhausted, never AllocationFailed), and every allocator
// call becomes a slab.
TEST(KLESlotPoolConcurrency, GrowthRacesWithTakes) {
  FakeSlabAllocatorTy Alloc;
  Alloc.BeforeAllocatePinned = [] {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  };
  auto Pool = makePool(Alloc, geometry(1, 1024, 127)); // 7 slabs
  ASSERT_TRUE(Pool);

  // Each thread runs until it has taken TakesPerThread slots (fallbacks are
  // fast, so a fixed number of attempts would end while a grower sleeps).
  constexpr unsigned NumThreads = 16, TakesPerThread = 3000, HoldMax = 7;
  const auto Deadline = Clock::now() + std::chrono::seconds(120);
  HolderCheckTy Check(127);
  std::atomic<uint64_t> Takes{0}, Exhausted{0}, RecycleErrors{0};
  std::atomic<unsigned> Ready{0}, Holding{0};
  auto Worker = [&](unsigned Tid) {
    std::deque<KLESlotTy> Held;
    auto ReleaseOldest = [&] {
      KLESlotTy S = Held.front();
      Held.pop_front();
      Check.beforeRelease(Tid, S);
      if (!succeeded(Pool->recycle(S.Id)))
        ++RecycleErrors;
    };
    // Start together, so the first growths are contended.
    ++Ready;
    while (Ready.load() < NumThreads)
      std::this_thread::yield();
    for (unsigned Mine = 0, It = 0; Mine < TakesPerThread; ++It) {
      if (It % 1024 == 0 && Clock::now() > Deadline) {
        ADD_FAILURE() << "thread " << Tid << " took only " << Mine;
        break;
      }
      if (Held.size() == HoldMax && Mine == HoldMax) {
        // Phase 1 done: wait until every thread holds HoldMax slots.
        ++Holding;
        while (Holding.load() < NumThreads && Clock::now() < Deadline)
          std::this_thread::yield();
      }
      if (Held.size() == HoldMax || (Mine > HoldMax && !Held.empty() && It % 2))
        ReleaseOldest();
      KLESlotTy R = Pool->take();
      if (!R.isValid()) {
        ++Exhausted;
        std::this_thread::yield();
        continue;
      }
      ++Takes;
      ++Mine;
      Check.onTake(Tid, R);
      Held.push_back(R);
    }
    while (!Held.empty())
      ReleaseOldest();
  };
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back(Worker, T);
  for (std::thread &T : Threads)
    T.join();

  EXPECT_EQ(Check.Errors.load(), 0u);
  EXPECT_EQ(RecycleErrors.load(), 0u);
  EXPECT_EQ(otherFallbacks(*Pool), 0u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            Exhausted.load());
  EXPECT_EQ(Takes.load(), uint64_t(NumThreads) * TakesPerThread);
  EXPECT_EQ(S.SlabsAllocated, 7u);
  EXPECT_GE(S.PeakSlotsInUse, uint64_t(NumThreads) * HoldMax);
  EXPECT_EQ(uint64_t(Alloc.PinnedCalls), S.SlabsAllocated)
      << "every allocator call must become a slab";
  EXPECT_LE(S.PeakSlotsInUse, 127u);
  std::printf("[ info ] takes %llu, PoolExhausted %llu, peak %llu, slabs %llu\n",
              (unsigned long long)Takes.load(),
              (unsigned long long)Exhausted.load(),
              (unsigned long long)S.PeakSlotsInUse,
              (unsigned long long)S.SlabsAllocated);
  expectAllSlotsFreeOnce(*Pool, Alloc);
  EXPECT_EQ(llvm::toString(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
}

// Double release under concurrency: 8 threads recycle the same id at the
// same moment; exactly one succeeds, the others get an Error, and the slot
// is on the free list once.
TEST(KLESlotPoolConcurrency, ConcurrentDoubleReleaseExactlyOneWins) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(4, 4, 4));
  ASSERT_TRUE(Pool);

  constexpr unsigned NumThreads = 8, Rounds = 300;
  std::atomic<unsigned> Round{0}, Done{0}, Wins{0};
  std::atomic<bool> Stop{false};
  KLESlotTy Shared; // Written before Round is bumped (release/acquire).
  auto Worker = [&] {
    unsigned Seen = 0;
    while (true) {
      unsigned R;
      while ((R = Round.load()) == Seen && !Stop.load())
        std::this_thread::yield();
      if (Stop.load())
        return;
      Seen = R;
      KLESlotTy S = Shared;
      if (succeeded(Pool->recycle(S.Id)))
        ++Wins;
      ++Done;
    }
  };
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back(Worker);

  unsigned BadRounds = 0;
  for (unsigned R = 1; R <= Rounds; ++R) {
    KLESlotTy T = Pool->take();
    ASSERT_TRUE(T.isValid());
    Shared = T;
    Wins = 0;
    Done = 0;
    Round.store(R);
    while (Done.load() < NumThreads)
      std::this_thread::yield();
    if (Wins.load() != 1)
      ++BadRounds;
  }
  Stop = true;
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(BadRounds, 0u);

  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsInUse, 0u);
  expectAllSlotsFreeOnce(*Pool, Alloc);
}

// Stale releases under concurrency: while the owner cycles take / release of
// the only slot, 8 threads keep releasing ids of earlier takes of it. None
// may succeed; every release by the owner must; the slot is never handed out
// while held.
TEST(KLESlotPoolConcurrency, ConcurrentStaleReleasesRejected) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(1, 1, 1));
  ASSERT_TRUE(Pool);

  constexpr unsigned NumThreads = 8, Cycles = 5000;
  std::atomic<uint64_t> Retired{KLESlotTy::InvalidId};
  std::atomic<uint64_t> StaleAttempts{0}, StaleWins{0};
  std::atomic<bool> Stop{false};
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back([&] {
      while (!Stop.load()) {
        uint64_t Id = Retired.load();
        if (Id == KLESlotTy::InvalidId) {
          std::this_thread::yield();
          continue;
        }
        ++StaleAttempts;
        if (succeeded(Pool->recycle(Id)))
          ++StaleWins;
        std::this_thread::yield();
      }
    });

  // Also until the stale releasers got many tries in, so that they overlap
  // with the owner's cycles even on a machine with few cores.
  unsigned OwnerFailures = 0, Exhausted = 0, I = 0;
  const auto Deadline = Clock::now() + std::chrono::seconds(60);
  for (; I < Cycles || (StaleAttempts.load() < 20000 && Clock::now() < Deadline);
       ++I) {
    if (I % 64 == 0)
      std::this_thread::yield();
    KLESlotTy R = Pool->take();
    if (!R.isValid()) {
      ++Exhausted; // The only slot is free here: take() must succeed.
      continue;
    }
    if (Pool->take().isValid()) // The only slot is held: nothing else may come out.
      ++OwnerFailures;
    if (!succeeded(Pool->recycle(R.Id)))
      ++OwnerFailures;
    Retired.store(R.Id);
  }
  Stop = true;
  for (std::thread &T : Threads)
    T.join();

  EXPECT_EQ(StaleWins.load(), 0u);
  EXPECT_EQ(OwnerFailures, 0u);
  EXPECT_EQ(Exhausted, 0u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlotsInUse, 0u);
  EXPECT_EQ(S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            uint64_t(I)); // The owner's second take, each cycle.
  EXPECT_GE(StaleAttempts.load(), 20000u);
  std::printf("[ info ] owner cycles %u, stale release attempts %llu\n", I,
              (unsigned long long)StaleAttempts.load());
}

// The steady state does not touch the growth lock: one thread's take() is
// held inside allocatePinned (growing the pool) while four other threads
// each release one slot of the full first slab and then take and release
// the slots that are free, 2,000 cycles each; they must finish while the
// grower is still blocked (every pool call in this phase runs in a thread
// under a deadline, shorter than the longest the allocator blocks). A take() that then finds
// no free slot waits for the growth in progress (it needs a slot that does
// not exist yet) and, once the allocator returns, gets a slot of the new slab,
// as the grower does.
TEST(KLESlotPoolConcurrency, SteadyStateDoesNotWaitForGrowth) {
  FakeSlabAllocatorTy Alloc;
  std::mutex M;
  std::condition_variable CV;
  bool Armed = false, Entered = false, Unblock = false, Left = false;
  Alloc.BeforeAllocatePinned = [&] {
    std::unique_lock<std::mutex> Lock(M);
    if (!Armed)
      return;
    Entered = true;
    CV.notify_all();
    // Bounded, so a pool that (wrongly) blocks the other threads still lets
    // the test end and report the failure.
    CV.wait_for(Lock, std::chrono::seconds(120), [&] { return Unblock; });
    Left = true;
  };
  auto Release = [&] {
    std::lock_guard<std::mutex> Lock(M);
    Unblock = true;
    CV.notify_all();
  };

  auto Pool = makePool(Alloc, geometry(8, 8, 16));
  ASSERT_TRUE(Pool);

  // Hold the whole first slab, so the next take() has to grow.
  std::vector<KLESlotTy> FirstSlab;
  for (int I = 0; I < 8; ++I) {
    KLESlotTy R = Pool->take();
    ASSERT_TRUE(R.isValid());
    FirstSlab.push_back(R);
  }
  {
    std::lock_guard<std::mutex> Lock(M);
    Armed = true;
  }
  KLESlotTy GrowerResult;
  std::thread Grower([&] { GrowerResult = Pool->take(); });
  {
    std::unique_lock<std::mutex> Lock(M);
    ASSERT_TRUE(CV.wait_for(Lock, std::chrono::seconds(30),
                            [&] { return Entered; }))
        << "the growing take() never reached the allocator";
  }

  constexpr unsigned NumWorkers = 4, Cycles = 2000;
  HolderCheckTy Check(16);
  std::atomic<unsigned> Finished{0};
  std::atomic<uint64_t> Failures{0};
  std::atomic<bool> Stop{false};
  std::vector<std::thread> Workers;
  for (unsigned T = 0; T < NumWorkers; ++T)
    Workers.emplace_back([&, T] {
      // Four slots become free while the grower is blocked in the
      // allocator.
      if (!succeeded(Pool->recycle(FirstSlab[T].Id)))
        ++Failures;
      for (unsigned I = 0; I < Cycles && !Stop.load(); ++I) {
        // Each worker holds at most one slot and has released one: a take
        // never needs to grow.
        KLESlotTy R = Pool->take();
        if (!R.isValid()) {
          ++Failures;
          continue;
        }
        Check.onTake(T, R);
        Check.beforeRelease(T, R);
        if (!succeeded(Pool->recycle(R.Id)))
          ++Failures;
      }
      ++Finished;
    });
  const auto Deadline = Clock::now() + std::chrono::seconds(20);
  while (Finished.load() < NumWorkers && Clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool Progressed = Finished.load() == NumWorkers;
  bool GrowerStillBlocked;
  {
    std::lock_guard<std::mutex> Lock(M);
    GrowerStillBlocked = !Unblock && !Left;
  }
  EXPECT_TRUE(Progressed)
      << "take()/recycle() of free slots waited for the growing take()";
  EXPECT_TRUE(GrowerStillBlocked);

  // With the four free slots held, a take() finds none: it waits for the
  // growth in progress, then gets a slot of the new slab.
  std::vector<KLESlotTy> Rest;
  KLESlotTy Empty;
  if (Progressed) {
    for (int I = 0; I < 4; ++I) {
      KLESlotTy R = Pool->take();
      ASSERT_TRUE(R.isValid());
      Rest.push_back(R);
    }
    std::atomic<bool> Returned{false};
    std::thread Taker([&] {
      Empty = Pool->take();
      Returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(Returned.load())
        << "a take() with no free slot did not wait for the growth in progress";
    Release();
    Taker.join();
    ASSERT_TRUE(Empty.isValid());
    EXPECT_GE(indexOf(Empty), 8u);
  }
  Stop = true;
  Release();
  for (std::thread &T : Workers)
    T.join();
  Grower.join();

  EXPECT_EQ(Failures.load(), 0u);
  EXPECT_EQ(Check.Errors.load(), 0u);
  // The grower got the first slot of the new slab.
  ASSERT_TRUE(GrowerResult.isValid());
  for (const KLESlotTy &S : FirstSlab)
    EXPECT_NE(GrowerResult.HostPtr, S.HostPtr);
  EXPECT_EQ(indexOf(GrowerResult), 8u);
  KLESlotPoolStatsTy S = Pool->getStats();
  EXPECT_EQ(S.SlabsAllocated, 2u);
  EXPECT_EQ(Alloc.PinnedCalls, 2u);
  EXPECT_EQ(otherFallbacks(*Pool) +
                S.getFallbacks(KLEFallbackReasonTy::PoolExhausted),
            0u);
  EXPECT_EQ(S.SlotsInUse, 4u + 4u + 1u + (Progressed ? 1u : 0u));
  for (const KLESlotTy &Slot : Rest)
    EXPECT_TRUE(succeeded(Pool->recycle(Slot.Id)));
  if (Progressed && Empty.isValid())
    EXPECT_TRUE(succeeded(Pool->recycle(Empty.Id)));
  for (int I = 4; I < 8; ++I)
    EXPECT_TRUE(succeeded(Pool->recycle(FirstSlab[I].Id)));
  EXPECT_TRUE(succeeded(Pool->recycle(GrowerResult.Id)));
  expectAllSlotsFreeOnce(*Pool, Alloc);
  EXPECT_EQ(llvm::toString(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
}

// After deinit(), recycle() of a slot taken before it still returns an
// Error and take() falls back with TransportDisabled, also when the pool
// grew and was used from several threads first.
// forEachFreeSlot racing with 8 threads that take and release: a visited slot
// is never held by a taker at the same time (the visitor marks it through
// the same owner words), and afterwards every slot is free exactly once. The
// takers start once the visitor has, and the visitor makes one more pass
// after they finished, so that it visits slots on a loaded machine too.
TEST(KLESlotPoolConcurrency, ForEachFreeSlotRacesWithTakes) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(16, 16, 32));
  ASSERT_TRUE(Pool);
  constexpr unsigned Threads = 8, Visitor = Threads;
  HolderCheckTy Check(64);
  std::atomic<bool> Stop{false}, Started{false};
  std::atomic<uint64_t> Visits{0};
  std::vector<std::thread> Ts;
  for (unsigned T = 0; T < Threads; ++T)
    Ts.emplace_back([&, T] {
      while (!Started.load())
        std::this_thread::yield();
      for (int I = 0; I < 20000; ++I) {
        KLESlotTy R = Pool->take();
        if (!R.isValid())
          continue;
        Check.onTake(T, R);
        Check.beforeRelease(T, R);
        EXPECT_TRUE(succeeded(Pool->recycle(R.Id)));
      }
    });
  std::thread V([&] {
    Started = true;
    for (bool Last = false; !Last;) {
      Last = Stop.load();
      Pool->forEachFreeSlot([&](const KLESlotTy &S) {
        // The visit's slot has no Id: find its index by address.
        KLESlotTy Tagged = S;
        Tagged.Id = Check.indexOfHost(S.HostPtr);
        if (Tagged.Id == ~uint64_t(0))
          return; // not yet seen by a taker: nothing to check against
        Check.onTake(Visitor, Tagged);
        Check.beforeRelease(Visitor, Tagged);
        ++Visits;
      });
    }
  });
  for (auto &T : Ts)
    T.join();
  Stop = true;
  V.join();
  EXPECT_EQ(Check.Errors.load(), 0u);
  EXPECT_GT(Visits.load(), 0u);
  expectAllSlotsFreeOnce(*Pool, Alloc);
}

TEST(KLESlotPoolConcurrency, UseAfterDeinitFailsCleanly) {
  FakeSlabAllocatorTy Alloc;
  auto Pool = makePool(Alloc, geometry(2, 4096, 30));
  ASSERT_TRUE(Pool);
  std::vector<std::vector<KLESlotTy>> Held(4);
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < 4; ++T)
    Threads.emplace_back([&, T] {
      for (int I = 0; I < 100; ++I) {
        KLESlotTy R = Pool->take();
        if (R.isValid())
          Held[T].push_back(R);
        if (Held[T].size() > 3) {
          if (!succeeded(Pool->recycle(Held[T].front().Id)))
            ADD_FAILURE() << "release failed";
          Held[T].erase(Held[T].begin());
        }
      }
    });
  for (std::thread &T : Threads)
    T.join();
  const uint64_t InUse = Pool->getStats().SlotsInUse;
  EXPECT_EQ(llvm::toString(Pool->deinit()), "");
  EXPECT_EQ(Alloc.liveCount(), 0u);
  EXPECT_EQ(Pool->getStats().OutstandingAtDeinit, InUse);
  uint64_t Errors = 0;
  for (auto &V : Held)
    for (const KLESlotTy &S : V) {
      Errors += !succeeded(Pool->recycle(S.Id));
      Errors += !succeeded(Pool->recycle(S.Id));
    }
  EXPECT_EQ(Errors, 2 * InUse);
  KLESlotTy R = Pool->take();
  ASSERT_FALSE(R.isValid());
  EXPECT_EQ(Pool->getStats().getFallbacks(
                KLEFallbackReasonTy::TransportDisabled),
            1u);
  EXPECT_EQ(Pool->getStats().SlotsInUse, 0u);
}

} // namespace
