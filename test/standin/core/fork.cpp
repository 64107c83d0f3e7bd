//===- fork.cpp - Fork safety of the CPU driver stand-ins -----------------===//
//
// TEST ONLY.  See fork.h.
//
//===----------------------------------------------------------------------===//

#include "fork.h"
#include "core.h"
#include "worker.h"

#include <algorithm>

#include <pthread.h>

namespace standin {
namespace {

ForkHooks Hooks;
std::vector<std::mutex *> Plain; // taken by prepare, released in both
std::vector<Waker *> Wakers;      // their mutexes taken by prepare
std::vector<std::mutex *> All;    // Plain, then the wakers' mutexes
unsigned Depth = 0;

// Takes every lock in L: blocks on one lock at a time and only try-locks the
// others while holding it, releasing all and starting over from the busy one
// when one is taken: no lock order between them (std::lock's algorithm).
void lockAll(std::vector<std::mutex *> &L) {
  size_t First = 0;
  for (;;) {
    L[First]->lock();
    size_t Busy = L.size();
    for (size_t I = 0; I < L.size(); ++I)
      if (I != First && !L[I]->try_lock()) {
        Busy = I;
        for (size_t J = 0; J < I; ++J)
          if (J != First)
            L[J]->unlock();
        L[First]->unlock();
        break;
      }
    if (Busy == L.size())
      return;
    First = Busy;
  }
}

template <typename T> void dedupe(std::vector<T> &V) {
  std::sort(V.begin(), V.end());
  V.erase(std::unique(V.begin(), V.end()), V.end());
}

void prepare() {
  for (;;) {
    Plain.clear();
    Wakers.clear();
    All.clear();
    if (Hooks.Collect)
      Hooks.Collect(Plain, Wakers);
    coreForkLocks(Plain);
    dedupe(Plain);
    dedupe(Wakers);
    All = Plain;
    for (Waker *W : Wakers)
      All.push_back(&W->forkMutex());
    if (All.empty())
      return;
    lockAll(All);
    if (!Hooks.Current || Hooks.Current())
      return;
    for (std::mutex *M : All)
      M->unlock();
  }
}

void parent() {
  for (std::mutex *M : All)
    M->unlock();
}

void child() {
  // The wakers' mutexes are re-created with their channels, not unlocked.
  for (std::mutex *M : Plain)
    M->unlock();
  for (Waker *W : Wakers)
    W->resetAfterFork();
  ++Depth;
  coreAfterForkChild();
  if (Hooks.Child)
    Hooks.Child();
}

} // namespace

void installForkHandlers(const ForkHooks &H) {
  static std::once_flag Once;
  std::call_once(Once, [&] {
    Hooks = H;
    pthread_atfork(prepare, parent, child);
  });
}

unsigned forkDepth() { return Depth; }

size_t drainAfterFork(const std::function<size_t()> &Left) {
  uint64_t End = nowNs() + 30ull * 1000 * 1000 * 1000;
  size_t N;
  while ((N = Left()) && nowNs() < End)
    sleepUs(100);
  return N;
}

} // namespace standin
