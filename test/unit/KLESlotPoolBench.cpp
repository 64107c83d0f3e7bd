//===- KLESlotPoolBench.cpp - Lock-free pool against a mutex free list ----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Steady-state take()/recycle() cycles of KLESlotPoolTy (lock-free free
// stack) against MutexPoolTy, the same contract (generation-checked ids,
// in-use and peak counters) over a std::mutex and a vector free list, at 1,
// 4 and 16 threads sharing one pool. Google Benchmark times them; with
//   --fixed=<lockfree|mutex>,<threads>,<cycles per thread>
// it runs that loop once without Google Benchmark, for callgrind. The method
// and figures: test/unit/pool-bench.py.
//
//===----------------------------------------------------------------------===//

#include "FakeSlabAllocator.h"
#include "KLESlotPool.h"

#include "benchmark/benchmark.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

using namespace llvm::omp::target::plugin;

namespace {

constexpr uint32_t Slots = 64;

/// The alternative: one mutex around a LIFO free list and the counters.
class MutexPoolTy {
public:
  explicit MutexPoolTy(uint32_t N) : Host(N * 128), State(N) {
    for (uint32_t I = N; I-- > 0;)
      Free.push_back(I);
  }

  __attribute__((noinline)) KLESlotTy take() {
    std::lock_guard<std::mutex> Lock(Mutex);
    if (Free.empty())
      return KLESlotTy();
    uint32_t I = Free.back();
    Free.pop_back();
    uint64_t Generation = (State[I] >> 32) + 1;
    State[I] = Generation << 32 | 1;
    Peak = std::max(Peak, ++InUse);
    return KLESlotTy{&Host[I * 128], nullptr, Generation << 32 | I};
  }

  __attribute__((noinline)) llvm::Error recycle(uint64_t Id) {
    std::lock_guard<std::mutex> Lock(Mutex);
    uint64_t I = Id & 0xffffffffu;
    if (I >= State.size() || State[I] != ((Id >> 32) << 32 | 1))
      return llvm::createStringError("invalid KLE slot recycle");
    State[I] &= ~uint64_t(1);
    --InUse;
    Free.push_back(static_cast<uint32_t>(I));
    return llvm::Error::success();
  }

private:
  std::mutex Mutex;
  std::vector<char> Host;
  std::vector<uint64_t> State;
  std::vector<uint32_t> Free;
  uint64_t InUse = 0, Peak = 0;
};

test::FakeSlabAllocatorTy Alloc;

KLESlotPoolTy &lockFreePool() {
  static KLESlotPoolTy *Pool = [] {
    KLESlotPoolConfigTy C;
    C.MaxSlots = C.FirstSlabSlots = C.MaxSlabSlots = Slots;
    KLESlotPoolTy *P = llvm::cantFail(KLESlotPoolTy::create(Alloc, C)).release();
    llvm::cantFail(P->recycle(P->take().Id)); // Grow before timing.
    return P;
  }();
  return *Pool;
}

MutexPoolTy &mutexPool() {
  static MutexPoolTy Pool(Slots);
  return Pool;
}

template <typename PoolTy> bool cycle(PoolTy &Pool) {
  KLESlotTy S = Pool.take();
  benchmark::DoNotOptimize(S.HostPtr);
  if (llvm::Error Err = Pool.recycle(S.Id)) {
    llvm::consumeError(std::move(Err));
    return false;
  }
  return true;
}

template <typename PoolTy> void run(benchmark::State &State, PoolTy &Pool) {
  for (auto _ : State)
    if (!cycle(Pool)) {
      State.SkipWithError("take or recycle failed");
      break;
    }
}

void LockFree(benchmark::State &State) { run(State, lockFreePool()); }
void Mutex(benchmark::State &State) { run(State, mutexPool()); }

BENCHMARK(LockFree)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();
BENCHMARK(Mutex)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();

/// --fixed=KIND,THREADS,CYCLES: that many cycles per thread, then exit.
int runFixed(const char *Spec) {
  char Kind[16] = {};
  unsigned Threads = 0;
  unsigned long Cycles = 0;
  if (std::sscanf(Spec, "%15[a-z],%u,%lu", Kind, &Threads, &Cycles) != 3 ||
      !Threads || (std::strcmp(Kind, "lockfree") && std::strcmp(Kind, "mutex"))) {
    std::fprintf(stderr, "kle-pool-bench: error: --fixed=%s: want "
                         "lockfree|mutex,THREADS,CYCLES\n", Spec);
    return 2;
  }
  const bool LF = !std::strcmp(Kind, "lockfree");
  if (LF)
    lockFreePool();
  else
    mutexPool();
  std::vector<std::thread> Ts;
  std::atomic<unsigned> Failed{0};
  for (unsigned T = 0; T < Threads; ++T)
    Ts.emplace_back([&] {
      for (unsigned long I = 0; I < Cycles; ++I)
        if (!(LF ? cycle(lockFreePool()) : cycle(mutexPool())))
          ++Failed;
    });
  for (std::thread &T : Ts)
    T.join();
  return Failed.load() ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  // A second thread before any measurement, as in every offloading process
  // (libomp's, the driver's): glibc's mutex skips its atomic instructions
  // while a process has one thread, which a launch never sees.
  std::thread([] {}).join();
  for (int I = 1; I < argc; ++I)
    if (!std::strncmp(argv[I], "--fixed=", 8))
      return runFixed(argv[I] + 8);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
