//===- KLENowaitCompleterTest.cpp - Completing deferred target tasks ------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// OpenMP/KLENowaitCompleter.h without a driver or libomp: each handed-over
// task completes once, after its queue reports done; tasks from many threads;
// a queue that stays busy is polled with back-off, not in a loop; stop
// completes what was handed over before it returns, and a later task starts
// the thread again.
//
//===----------------------------------------------------------------------===//

#include "OpenMP/KLENowaitCompleter.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace {

// A fake queue: done once Ready is set; Polls counts the completer's queries.
struct FakeTaskTy {
  std::atomic<bool> Ready{false};
  std::atomic<int> Polls{0};
  std::atomic<int> Completions{0};
  std::atomic<bool> HandleClearedFirst{false};
  void *Handle = this;
};

std::atomic<long> TotalPolls{0};

bool pollFake(void **Handle) {
  auto *T = static_cast<FakeTaskTy *>(*Handle);
  T->Polls.fetch_add(1);
  TotalPolls.fetch_add(1);
  if (!T->Ready.load())
    return false;
  *Handle = nullptr;
  return true;
}

void completeFake(void *Task) {
  auto *T = static_cast<FakeTaskTy *>(Task);
  T->HandleClearedFirst = T->Handle == nullptr;
  T->Completions.fetch_add(1);
}

bool waitFor(const std::function<bool()> &Cond, int Ms = 5000) {
  auto End = std::chrono::steady_clock::now() + std::chrono::milliseconds(Ms);
  while (!Cond()) {
    if (std::chrono::steady_clock::now() > End)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

TEST(KLENowaitCompleterTest, CompletesOnceAfterTheQueueIsDone) {
  llvm::omp::target::NowaitCompleterTy C(pollFake, completeFake, 2000);
  FakeTaskTy T;
  C.defer(&T.Handle, &T);
  ASSERT_TRUE(waitFor([&] { return T.Polls.load() >= 3; }));
  EXPECT_EQ(T.Completions.load(), 0);
  T.Ready = true;
  ASSERT_TRUE(waitFor([&] { return T.Completions.load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(T.Completions.load(), 1);
  EXPECT_TRUE(T.HandleClearedFirst.load());
}

TEST(KLENowaitCompleterTest, TasksFromManyThreads) {
  llvm::omp::target::NowaitCompleterTy C(pollFake, completeFake, 2000);
  constexpr int Threads = 8, PerThread = 200;
  std::vector<FakeTaskTy> Tasks(Threads * PerThread);
  std::vector<std::thread> Ts;
  for (int I = 0; I < Threads; ++I)
    Ts.emplace_back([&, I] {
      for (int J = 0; J < PerThread; ++J) {
        FakeTaskTy &T = Tasks[I * PerThread + J];
        T.Ready = J % 2; // half done at once, half later
        C.defer(&T.Handle, &T);
      }
    });
  for (auto &T : Ts)
    T.join();
  for (auto &T : Tasks)
    T.Ready = true;
  ASSERT_TRUE(waitFor([&] {
    for (auto &T : Tasks)
      if (T.Completions.load() != 1)
        return false;
    return true;
  }));
  for (auto &T : Tasks) {
    EXPECT_EQ(T.Completions.load(), 1);
    EXPECT_EQ(T.Handle, nullptr);
  }
}

double cpuMs() {
  rusage U;
  getrusage(RUSAGE_SELF, &U);
  return (U.ru_utime.tv_sec + U.ru_stime.tv_sec) * 1e3 +
         (U.ru_utime.tv_usec + U.ru_stime.tv_usec) / 1e3;
}

// With no busy wait, a queue that stays busy for 200 ms is polled after
// sleeps of an eighth of the time waited (about 70 polls), not in a loop: the
// process uses a few ms of CPU, where a polling loop would use its share of
// a core (even one that yields between polls gets it on a loaded machine).
// A new task still ends the sleep at once.
TEST(KLENowaitCompleterTest, BusyQueueBacksOff) {
  llvm::omp::target::NowaitCompleterTy C(pollFake, completeFake, 0);
  FakeTaskTy Slow;
  C.defer(&Slow.Handle, &Slow);
  ASSERT_TRUE(waitFor([&] { return Slow.Polls.load() >= 1; }));
  double Cpu0 = cpuMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double Cpu = cpuMs() - Cpu0;
  int Polls = Slow.Polls.load();
  EXPECT_GE(Polls, 5);
  EXPECT_LE(Polls, 400);
  EXPECT_LT(Cpu, 10.0) << Polls << " polls";
  FakeTaskTy Fast;
  Fast.Ready = true;
  auto Start = std::chrono::steady_clock::now();
  C.defer(&Fast.Handle, &Fast);
  ASSERT_TRUE(waitFor([&] { return Fast.Completions.load() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - Start,
            std::chrono::milliseconds(500));
  Slow.Ready = true;
  ASSERT_TRUE(waitFor([&] { return Slow.Completions.load() == 1; }));
}

// LIBOMPTARGET_NOWAIT_BUSYWAIT's largest values busy-wait: a bound above what
// the clock's nanoseconds hold overflowed in the comparison and made the
// completer sleep between passes, as 0 does.
TEST(KLENowaitCompleterTest, HugeBusyWaitPollsBackToBack) {
  llvm::omp::target::NowaitCompleterTy C(pollFake, completeFake, UINT64_MAX);
  FakeTaskTy Slow;
  C.defer(&Slow.Handle, &Slow);
  ASSERT_TRUE(waitFor([&] { return Slow.Polls.load() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GE(Slow.Polls.load(), 2000); // BusyQueueBacksOff: at most 400
  Slow.Ready = true;
  ASSERT_TRUE(waitFor([&] { return Slow.Completions.load() == 1; }));
}

// deinitRuntime stops the completer before it tears the devices down: stop
// must return only after every handed-over task completed (its queue polled
// until done), and the completer must take tasks again afterwards.
TEST(KLENowaitCompleterTest, StopCompletesHandedOverTasks) {
  llvm::omp::target::NowaitCompleterTy C(pollFake, completeFake, 0);
  FakeTaskTy Slow, Ready;
  Ready.Ready = true;
  C.defer(&Slow.Handle, &Slow);
  C.defer(&Ready.Handle, &Ready);
  ASSERT_TRUE(waitFor([&] { return Slow.Polls.load() >= 1; }));
  std::thread Finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Slow.Ready = true;
  });
  C.stop();
  EXPECT_EQ(Slow.Completions.load(), 1);
  EXPECT_EQ(Ready.Completions.load(), 1);
  Finisher.join();
  C.stop(); // nothing handed over: returns at once
  FakeTaskTy Later;
  Later.Ready = true;
  C.defer(&Later.Handle, &Later);
  ASSERT_TRUE(waitFor([&] { return Later.Completions.load() == 1; }));
}

// A queue whose poll blocks while Hold is set, as a plugin query that waits
// for a lock of the queue.
struct HeldTaskTy {
  std::atomic<bool> Hold{true}, InPoll{false}, PollReturned{false},
      Ready{false};
  void *Handle = this;
};

bool pollHeld(void **Handle) {
  auto *T = static_cast<HeldTaskTy *>(*Handle);
  T->InPoll = true;
  while (T->Hold.load())
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  T->PollReturned = true;
  if (!T->Ready.load())
    return false;
  *Handle = nullptr;
  return true;
}

void completeNothing(void *) {}

TEST(KLENowaitCompleterTest, ForkPrepareWaitsForAPass) {
  llvm::omp::target::NowaitCompleterTy C(pollHeld, completeNothing, 0);
  HeldTaskTy T;
  C.defer(&T.Handle, &T);
  ASSERT_TRUE(waitFor([&] { return T.InPoll.load(); }));
  std::atomic<bool> Prepared{false}, ReturnedFirst{false}, Resume{false};
  // The handlers run on one thread, as fork() runs them.
  std::thread Forker([&] {
    C.forkPrepare();
    ReturnedFirst = T.PollReturned.load();
    Prepared = true;
    while (!Resume.load())
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    C.forkParent();
  });
  // The poll is still running: the prepare handler must not return.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Prepared.load());
  T.Hold = false;
  ASSERT_TRUE(waitFor([&] { return Prepared.load(); }));
  EXPECT_TRUE(ReturnedFirst.load());
  Resume = true;
  Forker.join();
  T.Ready = true;
  C.stop();
  EXPECT_EQ(T.Handle, nullptr);
}

} // namespace
