//===- KLEMapOrderTest.cpp - Ordering a map entry's transfers across queues ===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// OpenMP/KLEMapOrder.h without libomptarget: which user of an entry waits for
// its last transfer, and the table of completed transfer ids (its slots, the
// overflow past them, concurrent completions).
//
//===----------------------------------------------------------------------===//

#include "OpenMP/KLEMapOrder.h"

#include "gtest/gtest.h"

#include <thread>
#include <vector>

using namespace llvm::omp::target::maporder;

namespace {

void *queue(uintptr_t N) { return reinterpret_cast<void *>(N << 4); }

TEST(KLEMapOrderTest, SameQueueAndCompletedTransfersNeedNoWait) {
  uint64_t AsyncId = 0;
  LastTransferTy T;
  void *QA = queue(0x1001), *QB = queue(0x1002);
  noteTransfer(T, QA, AsyncId);
  ASSERT_NE(AsyncId, 0u);
  EXPECT_FALSE(needsWait(T, QA)); // stream order
  EXPECT_TRUE(needsWait(T, QB));  // pending on another queue
  EXPECT_TRUE(needsWait(T, nullptr));
  asyncInfoCompleted(QA, AsyncId);
  EXPECT_EQ(AsyncId, 0u);
  EXPECT_FALSE(needsWait(T, QB)); // completed: cleared
  EXPECT_EQ(T.Queue, nullptr);
}

TEST(KLEMapOrderTest, ALaterHolderOfTheQueueIsNotComplete) {
  uint64_t First = 0, Second = 0;
  LastTransferTy T;
  void *QA = queue(0x2001), *QB = queue(0x2002);
  LastTransferTy Old;
  noteTransfer(Old, QA, First);
  asyncInfoCompleted(QA, First); // QA back in its pool, then reused
  noteTransfer(T, QA, Second);
  EXPECT_TRUE(needsWait(T, QB)); // Second has not completed
  asyncInfoCompleted(QA, Second);
  EXPECT_FALSE(needsWait(T, QB));
}

TEST(KLEMapOrderTest, CompletedIdsKeepTheLargestPastTheSlots) {
  TransfersTy Table;
  // More queues than the table has slots: the rest overflow to the map.
  constexpr uintptr_t NumQueues = 1000;
  for (uintptr_t I = 1; I <= NumQueues; ++I) {
    Table.completed(queue(I), 10 * I);
    Table.completed(queue(I), 10 * I - 5); // smaller: ignored
  }
  for (uintptr_t I = 1; I <= NumQueues; ++I)
    ASSERT_EQ(Table.completedId(queue(I)), 10 * I) << I;
  EXPECT_EQ(Table.completedId(queue(NumQueues + 1)), 0u);
}

TEST(KLEMapOrderTest, ConcurrentCompletionsKeepTheLargest) {
  TransfersTy Table;
  constexpr uintptr_t NumQueues = 300; // some in slots, some in the map
  constexpr unsigned NumThreads = 8, PerThread = 2000;
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back([&, T] {
      for (unsigned I = 0; I < PerThread; ++I)
        Table.completed(queue(1 + (I + T) % NumQueues),
                        uint64_t(I) * NumThreads + T + 1);
    });
  for (auto &Th : Threads)
    Th.join();
  // Queue q's largest id: the last (I, T) with (I + T) % NumQueues == q - 1.
  for (uintptr_t Q = 1; Q <= NumQueues; ++Q) {
    uint64_t Want = 0;
    for (unsigned T = 0; T < NumThreads; ++T)
      for (unsigned I = 0; I < PerThread; ++I)
        if ((I + T) % NumQueues == Q - 1)
          Want = std::max<uint64_t>(Want, uint64_t(I) * NumThreads + T + 1);
    ASSERT_EQ(Table.completedId(queue(Q)), Want) << Q;
  }
}

} // namespace
