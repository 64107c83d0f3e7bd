//===- KLEWaitTest.cpp - The plugin waits' driver-neutral parts ------------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// KLEWait.h without a driver: pollThenBlock's budget, and the staged copies
// back (bound, pinned destinations, delivery order, a failed queue, the
// back-off after a failed pinned allocation, teardown).
//
//===----------------------------------------------------------------------===//

#include "KLEWait.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace llvm::omp::target::plugin;

namespace {

constexpr int NotReady = 600, Done = 0;

TEST(KLEWaitTest, ZeroBudgetBlocksAtOnce) {
  int Queries = 0, Blocks = 0;
  int R = pollThenBlock(
      0, NotReady, [&] { return ++Queries, Done; },
      [&] { return ++Blocks, Done; });
  EXPECT_EQ(R, Done);
  EXPECT_EQ(Queries, 0);
  EXPECT_EQ(Blocks, 1);
}

TEST(KLEWaitTest, PollReturnsWithoutBlocking) {
  int Queries = 0, Blocks = 0;
  int R = pollThenBlock(
      10000000, NotReady, [&] { return ++Queries < 5 ? NotReady : Done; },
      [&] { return ++Blocks, Done; });
  EXPECT_EQ(R, Done);
  EXPECT_EQ(Queries, 5);
  EXPECT_EQ(Blocks, 0);
}

TEST(KLEWaitTest, PollErrorIsReturned) {
  int Blocks = 0;
  int R = pollThenBlock(
      10000000, NotReady, [&] { return 719; }, [&] { return ++Blocks, Done; });
  EXPECT_EQ(R, 719);
  EXPECT_EQ(Blocks, 0);
}

TEST(KLEWaitTest, BudgetSpentThenBlocks) {
  int Queries = 0, Blocks = 0;
  int R = pollThenBlock(
      100, NotReady, [&] { return ++Queries, NotReady; },
      [&] { return ++Blocks, 42; });
  EXPECT_EQ(R, 42);
  EXPECT_GE(Queries, 1);
  EXPECT_EQ(Blocks, 1);
}

/// What KLECopyBackTy needs of an async info (__tgt_async_info's fields).
struct AsyncInfo {
  struct KLEStagedCopyTy {
    void *Block;
    void *Dst;
    size_t Size;
  };
  std::mutex Mutex;
  llvm::SmallVector<KLEStagedCopyTy, 1> KLEStagedCopies;
};

struct Slabs {
  std::vector<void *> Live;
  int Calls = 0;
  bool Fail = false;
  void *alloc(size_t N) {
    ++Calls;
    if (Fail)
      return nullptr;
    void *P = std::malloc(N);
    Live.push_back(P);
    return P;
  }
};

TEST(KLEWaitTest, CopyBackStagesSmallPageableOnly) {
  KLECopyBackTy C;
  Slabs S;
  auto A = [&](size_t N) { return S.alloc(N); };
  C.setMaxBytes(4096);
  int Pinned[4] = {};
  C.notePinned(Pinned, sizeof(Pinned));
  int X = 0;
  static char Big[8192];
  EXPECT_EQ(C.take(&X, 0, A), nullptr);
  EXPECT_EQ(C.take(Big, sizeof(Big), A), nullptr);
  EXPECT_EQ(C.take(&Pinned[1], 4, A), nullptr); // inside a pinned range
  EXPECT_EQ(S.Calls, 0);
  void *B = C.take(&X, 4, A);
  ASSERT_NE(B, nullptr);
  C.release(B, 4);
  C.forgetPinned(Pinned);
  void *B2 = C.take(&Pinned[1], 4, A); // no longer pinned
  EXPECT_EQ(B2, B);                     // the released block, reused
  C.release(B2, 4);
  auto St = C.stats();
  EXPECT_EQ(St.Staged, 2u);
  EXPECT_EQ(St.Direct, 1u);
  EXPECT_EQ(S.Calls, 1);
  C.deinit([&](void *P) { std::free(P); });
}

TEST(KLEWaitTest, CompleteDeliversInEnqueueOrderPerQueue) {
  KLECopyBackTy C;
  Slabs S;
  auto A = [&](size_t N) { return S.alloc(N); };
  int X = 0, Y = 0;
  AsyncInfo QA, QB; // two queues
  // Two copies into X on queue A (the later one wins), one into Y on B.
  void *B1 = C.take(&X, 4, A), *B2 = C.take(&X, 4, A), *B3 = C.take(&Y, 4, A);
  *static_cast<int *>(B1) = 1;
  *static_cast<int *>(B2) = 2;
  *static_cast<int *>(B3) = 3;
  C.enqueued(QA, B1, &X, 4);
  C.enqueued(QA, B2, &X, 4);
  C.enqueued(QB, B3, &Y, 4);
  C.complete(QB.KLEStagedCopies, /*Ok=*/false); // failed queue: dropped
  EXPECT_EQ(Y, 0);
  EXPECT_EQ(X, 0);
  EXPECT_TRUE(QB.KLEStagedCopies.empty());
  C.complete(QA.KLEStagedCopies, /*Ok=*/true);
  EXPECT_EQ(X, 2);
  C.complete(QA.KLEStagedCopies, true); // nothing left
  EXPECT_EQ(X, 2);
  // All three blocks are back: three more takes need no new slab.
  void *R[3] = {C.take(&X, 4, A), C.take(&X, 4, A), C.take(&X, 4, A)};
  EXPECT_EQ(S.Calls, 1);
  for (void *B : R)
    C.release(B, 4);
  C.deinit([&](void *P) { std::free(P); });
}

TEST(KLEWaitTest, ConcurrentCopiesBackOwnTheirBlocks) {
  // Threads stage, complete and reuse blocks at once (spares and the free
  // list): a block shared by two copies would deliver another's bytes.
  KLECopyBackTy C;
  Slabs S;
  std::mutex AllocLock;
  auto A = [&](size_t N) {
    std::lock_guard<std::mutex> L(AllocLock);
    return S.alloc(N);
  };
  constexpr unsigned NumThreads = 8, Rounds = 2000;
  std::vector<std::thread> Threads;
  std::atomic<unsigned> Wrong{0};
  for (unsigned T = 0; T < NumThreads; ++T)
    Threads.emplace_back([&, T] {
      AsyncInfo Q;
      for (unsigned R = 0; R < Rounds; ++R) {
        unsigned X = 0, Want = T * Rounds + R;
        size_t Size = R % 3 ? sizeof(X) : 100; // two size classes
        unsigned Buf[25] = {};
        void *Dst = Size == sizeof(X) ? static_cast<void *>(&X) : Buf;
        void *B = C.take(Dst, Size, A);
        if (!B) {
          ++Wrong;
          continue;
        }
        std::memcpy(B, &Want, sizeof(Want)); // what the device copy lands
        std::this_thread::yield();
        C.enqueued(Q, B, Dst, Size);
        {
          std::lock_guard<std::mutex> L(Q.Mutex);
          C.complete(Q.KLEStagedCopies, true);
        }
        unsigned Got;
        std::memcpy(&Got, Dst, sizeof(Got));
        if (Got != Want)
          ++Wrong;
      }
    });
  for (auto &Th : Threads)
    Th.join();
  EXPECT_EQ(Wrong.load(), 0u);
  EXPECT_EQ(C.stats().Staged, uint64_t(NumThreads) * Rounds);
  C.deinit([&](void *P) { std::free(P); });
}

TEST(KLEWaitTest, FailedAllocationBacksOff) {
  KLECopyBackTy C;
  Slabs S;
  S.Fail = true;
  auto A = [&](size_t N) { return S.alloc(N); };
  int X = 0;
  for (int I = 0; I < 5; ++I)
    EXPECT_EQ(C.take(&X, 4, A), nullptr);
  EXPECT_EQ(S.Calls, 1);
  EXPECT_EQ(C.stats().NoMemory, 5u);
}

TEST(KLEWaitTest, DeinitFreesNoBlockWhileACopyIsStaged) {
  KLECopyBackTy C;
  Slabs S;
  auto A = [&](size_t N) { return S.alloc(N); };
  int X = 0;
  AsyncInfo Q;
  void *B = C.take(&X, 4, A);
  C.enqueued(Q, B, &X, 4);
  int Freed = 0;
  // Q never completed: its copy may still land in the block.
  C.deinit([&](void *) { ++Freed; });
  EXPECT_EQ(Freed, 0);
  EXPECT_EQ(X, 0);
  std::free(S.Live.at(0)); // the test's own teardown

  KLECopyBackTy D;
  Slabs T;
  auto AT = [&](size_t N) { return T.alloc(N); };
  AsyncInfo R;
  D.enqueued(R, D.take(&X, 4, AT), &X, 4);
  D.complete(R.KLEStagedCopies, true);
  D.deinit([&](void *P) { ++Freed, std::free(P); });
  EXPECT_EQ(Freed, 1);
}

TEST(KLEWaitTest, ForkedChildFreesSlabsOfTheParentsPendingCopies) {
  // A copy staged before fork() never completes in the child: the child's
  // deinit frees the slabs all the same (its own pending copies would keep
  // them).
  KLECopyBackTy C;
  Slabs S;
  auto A = [&](size_t N) { return S.alloc(N); };
  int X = 0;
  AsyncInfo Q;
  C.enqueued(Q, C.take(&X, 4, A), &X, 4);
  pid_t Pid = fork();
  ASSERT_GE(Pid, 0);
  if (Pid == 0) {
    int Freed = 0;
    C.deinit([&](void *) { ++Freed; });
    _exit(Freed == 1 ? 0 : 1);
  }
  int Status = 0;
  ASSERT_EQ(waitpid(Pid, &Status, 0), Pid);
  EXPECT_TRUE(WIFEXITED(Status) && WEXITSTATUS(Status) == 0) << Status;
  C.complete(Q.KLEStagedCopies, true);
  C.deinit([&](void *P) { std::free(P); });
}

TEST(KLEWaitTest, SizeClassesUpToTheMaximum) {
  KLECopyBackTy C;
  Slabs S;
  auto A = [&](size_t N) { return S.alloc(N); };
  C.setMaxBytes(MaxCopyBackStagingMax);
  static char Dst[MaxCopyBackStagingMax];
  void *B = C.take(Dst, sizeof(Dst), A);
  ASSERT_NE(B, nullptr);
  std::memset(B, 0x5a, sizeof(Dst)); // the whole block is usable
  AsyncInfo Q;
  C.enqueued(Q, B, Dst, sizeof(Dst));
  C.complete(Q.KLEStagedCopies, true);
  EXPECT_EQ(Dst[sizeof(Dst) - 1], 0x5a);
  EXPECT_EQ(C.take(Dst, sizeof(Dst) + 1, A), nullptr);
  C.deinit([&](void *P) { std::free(P); });
}

} // namespace
