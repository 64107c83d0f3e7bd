// Force-included (-include) into every C++ file of the seeded TSan
// libomptarget (CMakeLists.txt, offload-thread-seeded; scripts/
// sanitizer-check.sh, KLE_SANITIZERS=seeded), which is also linked with
// -Wl,--wrap for the two symbols below: every call from the transport to the
// slot pool's take() (launch path) and recycle(uint64_t) (synchronize and
// queryAsync) then goes through a wrapper that increments the plain,
// unsynchronised counter kle_seed_pool_race first. Concurrent launches and
// completions race on it, which the sanitizer job must report. Production
// code holds no hook for it. Never part of a real build.
#ifndef KLE_SEED_POOL_RACE_H
#define KLE_SEED_POOL_RACE_H
// CMake's compiler checks compile a file without LLVM's headers on the
// include path: nothing is wrapped there.
#if defined(__cplusplus) && __has_include("llvm/ADT/STLFunctionalExtras.h")
#include "../../../offload/plugins-nextgen/common/include/KLESlotPool.h"

inline long kle_seed_pool_race = 0;

// The wrappers have the members' Itanium ABI: the hidden return pointer
// first, then `this`, then the arguments.
// Weak: the build's tools (offload-tblgen) get the wrappers too but not the
// pool, and never call them.
__attribute__((weak)) kle::KLETakeResultTy
kleSeedRealTake(kle::KLESlotPoolTy *Pool) asm(
    "__real__ZN3kle13KLESlotPoolTy4takeEv");
__attribute__((weak)) llvm::Error
kleSeedRealRecycle(kle::KLESlotPoolTy *Pool, uint64_t Id) asm(
    "__real__ZN3kle13KLESlotPoolTy7recycleEm");

__attribute__((weak)) kle::KLETakeResultTy
kleSeedTake(kle::KLESlotPoolTy *Pool) asm(
    "__wrap__ZN3kle13KLESlotPoolTy4takeEv");
__attribute__((weak)) kle::KLETakeResultTy
kleSeedTake(kle::KLESlotPoolTy *Pool) {
  ++kle_seed_pool_race;
  return kleSeedRealTake(Pool);
}

__attribute__((weak)) llvm::Error
kleSeedRecycle(kle::KLESlotPoolTy *Pool, uint64_t Id) asm(
    "__wrap__ZN3kle13KLESlotPoolTy7recycleEm");
__attribute__((weak)) llvm::Error kleSeedRecycle(kle::KLESlotPoolTy *Pool,
                                                 uint64_t Id) {
  ++kle_seed_pool_race;
  return kleSeedRealRecycle(Pool, Id);
}
#endif
#endif
