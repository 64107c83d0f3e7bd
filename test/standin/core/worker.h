//===- worker.h - Delayed workers of the CPU driver stand-ins ---*- C++ -*-===//
//
// TEST ONLY.  What every front's delayed workers share (CUDA: one in-order
// worker per stream; HSA: one per AQL queue, the DMA engine and the
// async-handler thread): the random delay an operation waits before it runs
// and the simulated kernel time, a wake-up channel on which a worker waits
// until its next operation is due and its dependencies are met, and a worker
// thread that can be stopped and joined.  What an operation is, when it is
// ready and in which order operations run (stream order, events, barrier-AND
// packets, copy dependencies, async handlers) stays in the front.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_WORKER_H
#define KLE_STANDIN_WORKER_H

#include "core.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>

namespace standin {

/// The random delay before a queued operation runs: uniform in
/// [DelayMin, DelayMax] microseconds, from the core's shared generator.
uint64_t randomDelayUs();
/// The same from a worker's own generator (seeded per worker, so that its
/// delays do not depend on other threads' draws); nothing is drawn when
/// DelayMin == DelayMax.  Only the worker that owns \p Rng may call this.
uint64_t randomDelayUs(std::mt19937_64 &Rng);
/// Sleeps randomDelayUs() microseconds.
void randomDelay();
/// Sleeps \p Us microseconds; returns at once when 0 (KERNEL_US=0, the
/// default, makes no system call per launch).
void sleepUs(uint64_t Us);

/// A wake-up channel.  Whoever changes state a waiter may wait for (an
/// operation queued or retired, a signal's value) calls notify() after the
/// change; each waiter then re-checks its own predicate, which takes the
/// front's locks, never the channel's.  A notify that lands between a
/// waiter's check and its sleep is not lost: the waiter reads epoch() before
/// it checks and sleeps only while the epoch is unchanged.
class Waker {
public:
  static constexpr uint64_t Forever = ~0ull;

  /// \p PollNs: the longest waitUntil sleeps before it re-checks its
  /// predicate without a notify (Forever: only a notify wakes it).
  explicit Waker(uint64_t PollNs = Forever) : PollNs(PollNs) {}

  /// Wakes every waiter.  Call it after the state change, with no lock held
  /// that a waiter's predicate takes.
  void notify();

  /// The number of notifies so far; read it before checking state.
  uint64_t epoch();

  /// Sleeps until a notify after epoch() returned \p Seen, or \p MaxNs
  /// nanoseconds at most (Forever: no limit).
  void waitChange(uint64_t Seen, uint64_t MaxNs = Forever);

  /// Waits until Pred() holds or \p TimeoutNs passed (Forever: no limit);
  /// returns Pred().  Pred runs without the channel's lock.
  template <typename P> bool waitUntil(P Pred, uint64_t TimeoutNs = Forever) {
    uint64_t End = TimeoutNs == Forever ? Forever : nowNs() + TimeoutNs;
    while (true) {
      uint64_t Seen = epoch();
      if (Pred())
        return true;
      uint64_t Now = nowNs();
      if (Now >= End)
        return false;
      waitChange(Seen, End == Forever ? PollNs : std::min(End - Now, PollNs));
    }
  }

  /// fork.cpp: the mutex the forking thread holds across fork(), and, in the
  /// child, a fresh mutex and condition variable (no waiter exists there).
  std::mutex &forkMutex() { return M; }
  void resetAfterFork();

private:
  std::mutex M;
  std::condition_variable Cv;
  uint64_t Epoch = 0;
  const uint64_t PollNs;
};

/// A front's worker thread: it runs the front's loop until asked to stop.
/// The loop's waits test stopping() in their predicates.
class Worker {
public:
  template <typename Fn> void start(Fn F) { T = std::thread(std::move(F)); }
  bool stopping() const { return Stop.load(); }
  /// Asks the loop to return and wakes it through the channel it waits on.
  /// Several workers stopped together: request each stop, then join each.
  void requestStop(Waker &W);
  /// Waits until the loop returned.  On the worker thread itself (a callback
  /// it runs ends the process, so the library unloads there) it detaches
  /// instead: a thread cannot join itself.
  void join();
  /// In a forked child: forgets the parent's thread (it does not exist here;
  /// never joined) and clears the stop request, so start() may run again.
  void forget();

private:
  std::thread T;
  std::atomic<bool> Stop{false};
};

} // namespace standin

#endif
