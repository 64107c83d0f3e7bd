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
// A helper idle in the hidden helper team (not the primary thread of a team
// of its own, whose barrier nobody posts for) that finds no task queued on
// any helper's deque sleeps instead. Nothing is missed: a task queued by a
// thread that is not a hidden helper posts the semaphore, as do
// __kmpc_target_task_completed, a re-queued target task and a hidden helper
// that queues one on its own deque (its dependent successors, say, which
// the other helpers then share). Included by kmp_wait_release.h only.
//
//===----------------------------------------------------------------------===//

#ifndef KMP_HIDDEN_HELPER_IDLE_H
#define KMP_HIDDEN_HELPER_IDLE_H

#include "kmp.h"

/// Whether a task is queued for the hidden helper team of \p task_team (on a
/// thread's deque or as a priority task). Reads each deque's count without
/// its lock: a task queued after the read posts the semaphore the caller then
/// waits on.
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

/// Whether hidden helper worker \p thr, waiting with \p task_team, may sleep
/// on the semaphore although hidden helper tasks are unexecuted: it waits in
/// the hidden helper team's own barrier, running no task, and none is queued.
static inline bool __kmp_hidden_helper_idle(kmp_info_t *thr,
                                            kmp_task_team_t *task_team) {
  kmp_team_t *team = thr->th.th_team;
  kmp_taskdata_t *current = thr->th.th_current_task;
  return team != NULL && KMP_HIDDEN_HELPER_TEAM(team) && current != NULL &&
         current->td_flags.tasktype == TASK_IMPLICIT &&
         !__kmp_hidden_helper_task_queued(task_team);
}

#endif // KMP_HIDDEN_HELPER_IDLE_H
