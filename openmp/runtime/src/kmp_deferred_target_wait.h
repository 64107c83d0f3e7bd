//===- kmp_deferred_target_wait.h - Sleep while target tasks run -*- C++ -*-===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A thread alone in its team that waits for child tasks (taskwait, a
// dependence wait) while hidden helper tasks are pending (target tasks queued
// for the hidden helper threads, or handed to libomptarget to complete:
// __tgt_target_nowait_defer) sleeps until a hidden helper task completes,
// instead of spinning over its empty queue; and a hard pause lets the hidden
// helper team finish that work before it ends the team. Included by
// kmp_tasking.cpp only.
//
//===----------------------------------------------------------------------===//

#ifndef KMP_DEFERRED_TARGET_WAIT_H
#define KMP_DEFERRED_TARGET_WAIT_H

#include "kmp.h"

#include <atomic>
#include <climits>

#if KMP_OS_LINUX
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

// Hidden helper target tasks handed to libomptarget to complete and not yet
// completed; libomptarget's exit path waits for them.
static std::atomic<kmp_int32> __kmp_deferred_target_tasks;

// Set once libomptarget has taken a target task over: until then (and with
// LIBOMPTARGET_NOWAIT_DEFER=0) a waiting thread spins as upstream's does.
static std::atomic<bool> __kmp_deferred_target_seen;

/// Notes that libomptarget took a target task over.
static inline void __kmp_deferred_target_handed_over() {
  if (!__kmp_deferred_target_seen.load(std::memory_order_relaxed))
    __kmp_deferred_target_seen.store(true, std::memory_order_relaxed);
}

#if KMP_OS_LINUX
// Bumped by every completion a sleeper may wait for; sleepers wait on it.
static std::atomic<kmp_uint32> __kmp_deferred_target_seq;
static std::atomic<kmp_int32> __kmp_deferred_target_sleepers;

static inline kmp_uint64 __kmp_deferred_target_now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (kmp_uint64)ts.tv_sec * 1000000000ull + (kmp_uint64)ts.tv_nsec;
}
#endif

/// Hidden helper tasks allocated and not completed: queued, running, waiting
/// for dependences, or handed to libomptarget.
static inline bool __kmp_hidden_helper_tasks_unfinished() {
  return __kmp_deferred_target_tasks.load(std::memory_order_acquire) != 0 ||
         __kmp_unexecuted_hidden_helper_tasks.load(std::memory_order_acquire) !=
             0;
}

/// Hidden helper tasks unfinished in a process where libomptarget takes
/// target tasks over.
static inline bool __kmp_hidden_helper_work_pending() {
  return __kmp_deferred_target_seen.load(std::memory_order_relaxed) &&
         __kmp_hidden_helper_tasks_unfinished();
}

/// Called after a hidden helper task's completion or a detached task's fulfill
/// from outside the team: wakes the threads sleeping in
/// __kmp_deferred_target_idle if \p MayEndWait, that is if it left its
/// parent with no incomplete children, ended a taskgroup member, released
/// dependences (a successor or a dependence wait), or left no hidden helper
/// work (a fulfill always may). Any other completion changes nothing a
/// sleeper waits for, so it sleeps on. A fence and a load when nobody sleeps.
static inline void __kmp_deferred_target_progress(bool MayEndWait) {
#if KMP_OS_LINUX
  if (!MayEndWait)
    return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (__kmp_deferred_target_sleepers.load(std::memory_order_relaxed) == 0)
    return;
  __kmp_deferred_target_seq.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, &__kmp_deferred_target_seq, FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
#else
  (void)MayEndWait;
#endif
}

/// A fork()ed child has none of its parent's sleepers.
static inline void __kmp_deferred_target_reset_sleepers() {
#if KMP_OS_LINUX
  __kmp_deferred_target_sleepers.store(0, std::memory_order_release);
#endif
}

#if KMP_OS_LINUX
/// Sleeps until __kmp_deferred_target_progress or for \p TimeoutNs (under 1 s),
/// unless \p Pending() is false once the caller is registered as a sleeper
/// (so that no wake-up is missed). Returns whether progress was made.
template <typename PendingTy>
static inline bool __kmp_deferred_target_sleep(kmp_uint64 TimeoutNs,
                                               PendingTy Pending) {
  kmp_uint32 Seq = __kmp_deferred_target_seq.load(std::memory_order_seq_cst);
  __kmp_deferred_target_sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (Pending()) {
    struct timespec Timeout = {0, (long)TimeoutNs};
    syscall(SYS_futex, &__kmp_deferred_target_seq, FUTEX_WAIT_PRIVATE, Seq,
            &Timeout, nullptr, 0);
  }
  __kmp_deferred_target_sleepers.fetch_sub(1, std::memory_order_seq_cst);
  return __kmp_deferred_target_seq.load(std::memory_order_acquire) != Seq;
}
#endif

/// Called by a thread that found no task to run while \p Children (its
/// current task's incomplete children) is not zero. While hidden helper work
/// is pending, sleeps until __kmp_deferred_target_progress or for an eighth of
/// the time this wait has lasted (\p IdleSinceNs, 0 when it starts; reset on
/// progress), 10 us to 1 ms; otherwise returns at once, as upstream spins.
/// \p Done() says whether what the caller waits for (a taskgroup, a
/// dependence) has happened: checked once the caller counts as a sleeper, so
/// that a completion just before is not slept through. Hidden helper threads
/// never sleep here.
template <typename DoneTy>
static inline void
__kmp_deferred_target_idle(kmp_int32 gtid, std::atomic<kmp_int32> *Children,
                           kmp_uint64 *IdleSinceNs, DoneTy Done) {
#if KMP_OS_LINUX
  if (KMP_HIDDEN_HELPER_THREAD(gtid) || !__kmp_hidden_helper_work_pending())
    return;
  kmp_uint64 Now = __kmp_deferred_target_now_ns();
  if (*IdleSinceNs == 0)
    *IdleSinceNs = Now;
  kmp_uint64 WaitNs = (Now - *IdleSinceNs) / 8;
  if (WaitNs < 10000)
    WaitNs = 10000;
  if (WaitNs > 1000000)
    WaitNs = 1000000;
  if (__kmp_deferred_target_sleep(WaitNs, [Children, &Done] {
        return Children->load(std::memory_order_acquire) != 0 && !Done() &&
               __kmp_hidden_helper_work_pending();
      }))
    *IdleSinceNs = 0;
#else
  (void)gtid;
  (void)Children;
  (void)IdleSinceNs;
  (void)Done;
#endif
}

/// Waits until no hidden helper task is unfinished, sleeping 1 ms at most at
/// a time. No time limit, as at exit: a target task the program did not wait
/// for may run for minutes. Called before a hard pause ends the hidden helper
/// team, which must still run every task allocated for it (whether or not
/// libomptarget takes target tasks over: the team's end runs only the tasks
/// its threads still find).
static inline void __kmp_deferred_target_drain() {
  while (__kmp_hidden_helper_tasks_unfinished()) {
#if KMP_OS_LINUX
    __kmp_deferred_target_sleep(1000000, __kmp_hidden_helper_tasks_unfinished);
#else
    KMP_YIELD(TRUE);
#endif
  }
}

#endif // KMP_DEFERRED_TARGET_WAIT_H
