//===- fork.h - Fork safety of the CPU driver stand-ins ---------*- C++ -*-===//
//
// TEST ONLY.  A process that forks after it used a stand-in gives its child a
// copy of the stand-in's state, but only the forking thread: the workers that
// run streams, queues, copies and handlers exist only in the parent, and a
// lock another thread held at the fork would stay held.  pthread_atfork
// handlers make the child's state its own:
//   prepare  the forking thread takes every lock the core and the front list,
//            with back-off (no lock order is imposed on the other threads);
//   parent   releases them;
//   child    releases them, re-creates every listed wake-up channel (its
//            condition variable may count waiters that exist only in the
//            parent), renames the output tag "<tag>(child)", counts launches
//            and violations from zero and writes no STATS_FILE (the parent's
//            record stays whole), then runs the front's Child hook, which
//            forgets the parent's worker threads (never joins them) and
//            starts the child's own.  Work queued in the parent at the fork
//            is the child's copy: its new workers run it, on its memory, and
//            the child resumes once it completed (drainAfterFork), since
//            nothing in the child waits for it otherwise.
// Calls per entry point carry on from the parent's counts, so FAIL=entry:N
// counts the calls of both processes up to the fork, then each its own.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_FORK_H
#define KLE_STANDIN_FORK_H

#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace standin {

class Waker;

/// What a front does around fork().  Collect runs in the forking thread
/// before the fork with no stand-in lock held; it lists the front's locks and
/// wake-up channels (it may take and release a lock to read a list).  Current
/// (optional) runs once every listed lock is held: false when the lists are
/// out of date (a queue created since Collect read them), and prepare
/// releases the locks and collects again.  Child runs in the child,
/// single-threaded, after every listed lock was released and every channel
/// re-created.
struct ForkHooks {
  void (*Collect)(std::vector<std::mutex *> &Locks, std::vector<Waker *> &Wakers) = nullptr;
  void (*Child)() = nullptr;
  bool (*Current)() = nullptr;
};

/// Registers the handlers (once per process; later calls do nothing).
void installForkHandlers(const ForkHooks &H);

/// fork()s between the process that loaded the stand-in and this one (0 there).
unsigned forkDepth();

/// For a front's Child hook: polls Left() (operations inherited from the
/// parent not yet complete) every 100 us until it is 0 or 30 s passed, and
/// returns its last value.
size_t drainAfterFork(const std::function<size_t()> &Left);

} // namespace standin

#endif
