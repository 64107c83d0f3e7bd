//===- worker.cpp - Delayed workers of the CPU driver stand-ins -----------===//
//
// TEST ONLY.  See worker.h.
//
//===----------------------------------------------------------------------===//

#include "worker.h"

#include <chrono>
#include <new>

namespace standin {

uint64_t randomDelayUs() {
  uint64_t Lo = cfg().DelayMin, Hi = cfg().DelayMax;
  return Lo + randomBelow(Hi - Lo + 1);
}

uint64_t randomDelayUs(std::mt19937_64 &Rng) {
  uint64_t Lo = cfg().DelayMin, Hi = cfg().DelayMax;
  return Hi > Lo ? Lo + Rng() % (Hi - Lo + 1) : Lo;
}

void randomDelay() { sleepUs(randomDelayUs()); }

void sleepUs(uint64_t Us) {
  if (Us)
    std::this_thread::sleep_for(std::chrono::microseconds(Us));
}

void Waker::notify() {
  {
    std::lock_guard<std::mutex> L(M);
    ++Epoch;
  }
  Cv.notify_all();
}

uint64_t Waker::epoch() {
  std::lock_guard<std::mutex> L(M);
  return Epoch;
}

void Waker::waitChange(uint64_t Seen, uint64_t MaxNs) {
  std::unique_lock<std::mutex> L(M);
  auto Changed = [&] { return Epoch != Seen; };
  // Forever, or so long that nanoseconds' signed count would overflow.
  if (MaxNs >= (Forever >> 1))
    Cv.wait(L, Changed);
  else
    Cv.wait_for(L, std::chrono::nanoseconds(MaxNs), Changed);
}

void Worker::requestStop(Waker &W) {
  Stop.store(true);
  W.notify();
}

void Worker::join() {
  if (!T.joinable())
    return;
  if (T.get_id() == std::this_thread::get_id())
    T.detach();
  else
    T.join();
}

void Waker::resetAfterFork() {
  // The old objects are abandoned, not destroyed: the mutex is locked and the
  // condition variable may count the parent's waiters.
  new (&M) std::mutex();
  new (&Cv) std::condition_variable();
}

void Worker::forget() {
  new (&T) std::thread(); // abandoned: destroying a joinable thread aborts
  Stop.store(false);
}

} // namespace standin
