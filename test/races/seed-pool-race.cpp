//===- seed-pool-race.cpp - A data race seeded around the slot pool -------===//
//
// The sanitizer job's negative control for ThreadSanitizer (scripts/
// sanitizer-check.sh, KLE_SANITIZERS=seeded). Preloaded (LD_PRELOAD, after
// the TSan runtime) into programs that run against the ThreadSanitizer build
// of libomptarget (test/offload-thread). libomptarget calls the slot pool's
// take() (launch path) and recycle() (launch path, synchronize, queryAsync)
// through its PLT, so these definitions interpose: each increments the plain,
// unsynchronised counter kle_seed_pool_race, then calls libomptarget's own
// definition (dlsym(RTLD_NEXT)). Concurrent launches and completions race on
// the counter, which TSan must report. Built with -fsanitize=thread; the
// runtime comes from the preload. Production code holds no hook for it.
//
//===----------------------------------------------------------------------===//

#include "KLESlotPool.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

using namespace llvm::omp::target::plugin;

extern "C" {
/// The seeded race: read and written by every take() and recycle() without
/// synchronisation. Named in TSan's report ("Location is global ...").
long kle_seed_pool_race = 0;
}

namespace {
constexpr const char *TakeName =
    "_ZN4llvm3omp6target6plugin13KLESlotPoolTy4takeEv";
constexpr const char *RecycleName =
    "_ZN4llvm3omp6target6plugin13KLESlotPoolTy7recycleEm";

/// libomptarget's definition of \p Name, or exit(2) with a message: a control
/// that does not reach the pool must not pass silently.
void *real(const char *Name) {
  void *Fn = dlsym(RTLD_NEXT, Name);
  if (!Fn) {
    fprintf(stderr, "seed-pool-race: %s not found after the preload: %s\n",
            Name, dlerror());
    exit(2);
  }
  return Fn;
}
} // namespace

// The member functions' Itanium ABI: a free function taking `this` first has
// the same calling convention (the hidden return pointer, if any, precedes
// both).
using TakeFnTy = KLESlotTy (*)(KLESlotPoolTy *);
using RecycleFnTy = llvm::Error (*)(KLESlotPoolTy *, uint64_t);

KLESlotTy seedTake(KLESlotPoolTy *Pool) asm(
    "_ZN4llvm3omp6target6plugin13KLESlotPoolTy4takeEv");
KLESlotTy seedTake(KLESlotPoolTy *Pool) {
  static TakeFnTy Real = reinterpret_cast<TakeFnTy>(real(TakeName));
  ++kle_seed_pool_race;
  return Real(Pool);
}

llvm::Error seedRecycle(KLESlotPoolTy *Pool, uint64_t Id) asm(
    "_ZN4llvm3omp6target6plugin13KLESlotPoolTy7recycleEm");
llvm::Error seedRecycle(KLESlotPoolTy *Pool, uint64_t Id) {
  static RecycleFnTy Real = reinterpret_cast<RecycleFnTy>(real(RecycleName));
  ++kle_seed_pool_race;
  return Real(Pool, Id);
}
