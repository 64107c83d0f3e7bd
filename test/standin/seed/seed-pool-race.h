// Force-included (-include) into every C++ file of the seeded TSan
// libomptarget (CMakeLists.txt, offload-thread-seeded; scripts/
// sanitizer-check.sh, KLE_SANITIZERS=seeded), which is also compiled with
// -DKLE_SEED_POOL_RACE: the plain, unsynchronised counter that
// KLETransport.cpp increments next to the slot pool's take (prepare) and
// release (releaseCompleted). Concurrent launches and completions race on it,
// which the sanitizer job must report. Never part of a real build.
#ifndef KLE_SEED_POOL_RACE_H
#define KLE_SEED_POOL_RACE_H
inline long kle_seed_pool_race = 0;
#endif
