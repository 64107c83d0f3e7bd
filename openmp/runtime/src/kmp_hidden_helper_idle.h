//===- kmp_hidden_helper_idle.h - When a hidden helper may sleep -*- C++ -*-===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Upstream's hidden helper threads sleep on their semaphore only while no
// hidden helper task is unexecuted, and a task waiting for a dependence (the
// successor of a target region still running) counts as unexecuted: every
// helper spins, each a core, for as long as the predecessor's kernel runs.
// A helper that finds no task queued on any helper's deque sleeps instead.
// Nothing is missed: a task queued by a thread that is not a hidden helper
// posts the semaphore (so do __kmpc_target_task_completed and a re-queued
// target task), and one a helper queues on its own deque is run by that
// helper, awake. Included by kmp_wait_release.h only.
//
//===----------------------------------------------------------------------===//

#ifndef KMP_HIDDEN_HELPER_IDLE_H
#define KMP_HIDDEN_HELPER_IDLE_H

#include "kmp.h"

/// Whether a task is queued for the hidden helper team of \p task_team (on a
/// thread's deque or as a priority task). Reads each deque's count without
/// its lock: a task queued after the read posts the semaphore the caller then
/// waits on, or is run by the helper that queued it.
static inline bool __kmp_hidden_helper_task_queued(kmp_task_team_t *task_team) {
  if (TCR_4(task_team->tt.tt_num_task_pri))
    return true;
  kmp_thread_data_t *threads_data =
      (kmp_thread_data_t *)TCR_PTR(task_team->tt.tt_threads_data);
  if (threads_data == NULL)
    return true; // not set up yet: keep upstream's behaviour
  for (kmp_int32 i = 0, n = task_team->tt.tt_nproc; i < n; ++i)
    if (TCR_4(threads_data[i].td.td_deque_ntasks) != 0)
      return true;
  return false;
}

#endif // KMP_HIDDEN_HELPER_IDLE_H
