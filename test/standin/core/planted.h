//===- planted.h - Planted timing for benchmark-method tests ----*- C++ -*-===//
//
// TEST ONLY.  Two knobs that plant known timing into a stand-in, so a test
// can check that a benchmark method recovers a difference under noise
// (test/bench/interleave-planted.test):
//   <PREFIX>COPY_US=n    each host-to-device copy holds its stream n
//                        microseconds longer (0 .. 10000000)
//   <PREFIX>SYNC_NOISE=LOW:HIGH:PERIOD_MS
//                        each stream synchronize waits an extra LOW or HIGH
//                        microseconds (LOW <= HIGH, each at most 10000000;
//                        PERIOD_MS from 1 to 10000000); the choice is
//                        redrawn at random (even odds) about every PERIOD_MS
//                        milliseconds (uniform in
//                        [PERIOD_MS/2, 3*PERIOD_MS/2]): a bimodal host, like
//                        the H200 VM of docs/results/2026-11-30-h200-1b0682d.md
// A malformed value ends the process (exit status 2) with one line naming
// the variable and the expected form, at the front's initialisation: a
// method test must never run with its plant silently missing.
// Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_PLANTED_H
#define KLE_STANDIN_PLANTED_H

namespace standin {

/// Reads and checks both knobs (core::init must have run); idempotent.
void plantedInit();
/// Called by the front when a host-to-device copy ran: sleeps COPY_US.
void plantedCopyHold();
/// Called by the front after a stream synchronize: sleeps the noise.
void plantedSyncNoise();

} // namespace standin

#endif
