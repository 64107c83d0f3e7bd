//===- planted.h - Planted timing for benchmark-method tests ----*- C++ -*-===//
//
// TEST ONLY.  Knobs that plant known timing into a stand-in, so a test can
// check that a benchmark method recovers a difference under noise
// (test/bench/interleave-planted.test) or that a runtime avoids a cost:
//   KLE_STANDIN_COPY_US=n    each host-to-device copy holds its stream n
//                        microseconds longer (0 .. 10000000)
//   KLE_STANDIN_SYNC_NOISE=LOW:HIGH:PERIOD_MS
//                        each stream synchronize waits an extra LOW or HIGH
//                        microseconds (LOW <= HIGH, each at most 10000000;
//                        PERIOD_MS from 1 to 10000000); the choice is
//                        redrawn at random (even odds) about every PERIOD_MS
//                        milliseconds (uniform in
//                        [PERIOD_MS/2, 3*PERIOD_MS/2]): a bimodal host, like
//                        the H200 VM of docs/results/2026-11-30-h200-1b0682d.md
//   KLE_STANDIN_WAKEUP_US=LOW:HIGH:PERIOD_MS
//                        the wake-up of a wait that sleeps under blocking
//                        scheduling: it returns LOW or HIGH microseconds
//                        after the work it waited for completed (same form
//                        and redraw as SYNC_NOISE, its own generator). The
//                        front decides which waits sleep (cuda/README.md).
// A malformed value ends the process (exit status 2) with one line naming
// the variable and the expected form, at the front's initialisation: a
// method test must never run with its plant silently missing.
// Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_PLANTED_H
#define KLE_STANDIN_PLANTED_H

#include <cstdint>
#include <mutex>
#include <vector>

namespace standin {

/// Reads and checks the knobs (core::init must have run); idempotent.
void plantedInit();
/// Its locks, for the fork's prepare (fork.h).
void plantedForkLocks(std::vector<std::mutex *> &Locks);
/// Called by the front when a host-to-device copy ran: sleeps COPY_US.
void plantedCopyHold();
/// Called by the front after a stream synchronize: sleeps the noise.
void plantedSyncNoise();

/// True if WAKEUP_US is set.
bool plantedWakeupOn();
/// A wait that sleeps found its work complete at \p DoneNs (steady clock):
/// returns no earlier than DoneNs plus the drawn wake-up (an absolute
/// deadline: a short sleep, then yields up to it, so load does not stretch
/// it), and counts it.  Returns the realised delay (now - DoneNs) in ns;
/// 0 and nothing counted when WAKEUP_US is unset.
uint64_t plantedWakeup(uint64_t DoneNs);

/// What plantedWakeup has paid so far.
struct WakeupStats {
  uint64_t Count = 0;      ///< wake-ups paid
  uint64_t TargetNs = 0;   ///< sum of the drawn delays
  uint64_t RealisedNs = 0; ///< sum of the realised delays
  uint64_t Low = 0, High = 0, PeriodMs = 0; ///< the knob (0:0:0 when unset)
};
WakeupStats plantedWakeupStats();

} // namespace standin

#endif
