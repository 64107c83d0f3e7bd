//===- KLENowaitCompleter.h - Complete deferred target tasks ----*- C++ -*-===//
//
// kle-offload.  Upstream re-runs a deferred target task ('target ... nowait')
// on libomp's hidden helper threads until a query of its queue finds the work
// done, and while any such task is pending no hidden helper thread sleeps.
// Instead libomp hands the task over once it has enqueued its work
// (__tgt_target_nowait_defer) and one completer thread per process polls
// every handed-over queue, pass after pass; after BusyWaitUs without one
// completing it sleeps between passes, an eighth of the time since the last
// completion or new task (10 us to 10 ms).  (It does not yield between
// passes: on a loaded machine a thread that yields runs again only after
// milliseconds, one that sleeps briefly is woken in time.)  A completed task
// is ended through Complete (libomp's __kmpc_target_task_completed).
//
// Thread safety: defer may be called from any thread, stop from one thread at
// a time.  Poll and Complete run on the completer thread, one task at a time;
// whatever they did happens before stop returns.
//
//===----------------------------------------------------------------------===//

#ifndef OMPTARGET_OPENMP_KLE_NOWAIT_COMPLETER_H
#define OMPTARGET_OPENMP_KLE_NOWAIT_COMPLETER_H

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <sys/prctl.h>
#include <thread>
#include <vector>

namespace llvm::omp::target {

class NowaitCompleterTy {
public:
  /// Polls the queue of *Handle once.  Returns true when its work has
  /// completed and the handle was released (*Handle cleared).
  using PollFnTy = bool (*)(void **Handle);
  /// Ends a task whose work has completed.
  using CompleteFnTy = void (*)(void *Task);

  /// \p BusyWaitUs: microseconds; more than a steady clock's nanoseconds can
  /// hold (about 292 years) is that.
  NowaitCompleterTy(PollFnTy Poll, CompleteFnTy Complete, uint64_t BusyWaitUs)
      : Poll(Poll), Complete(Complete),
        BusyWait(std::chrono::microseconds(std::min<uint64_t>(
            BusyWaitUs, std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::duration::max())
                            .count()))) {}

  /// No defer may run concurrently with destruction.
  ~NowaitCompleterTy() { stop(); }

  /// Completes every task handed over (polling their queues as before) and
  /// then ends the completer thread, which a later defer starts again.  Call
  /// before the queues' devices are torn down; blocks until their work ends.
  /// Not reentrant from Poll or Complete.
  void stop() {
    std::unique_lock<std::mutex> L(Mutex);
    if (!Started)
      return;
    Stop = true;
    Wake.notify_one();
    L.unlock();
    Worker.join();
    L.lock();
    Started = false;
    Stop = false;
    // A task handed over after the thread's last look at Incoming.
    if (!Incoming.empty())
      start();
  }

  /// Takes over Task, whose device work is enqueued on the queue of *Handle;
  /// Complete(Task) follows once Poll(Handle) returned true.
  void defer(void **Handle, void *Task) {
    std::lock_guard<std::mutex> L(Mutex);
    if (!Started)
      start();
    Incoming.push_back({Handle, Task});
    Wake.notify_one();
  }

  /// pthread_atfork handlers.  The prepare handler waits for a pass over the
  /// queues to end: a fork() never copies the plugin in the middle of a poll
  /// (a lock of a queue held, a slot half released).  In a fork()ed child the
  /// completer thread and the parent's tasks do not exist; forkChild, also
  /// valid when forkPrepare did not run, forgets them and the next defer
  /// starts a new thread.
  void forkPrepare() {
    Mutex.lock();
    PassMutex.lock();
  }
  void forkParent() {
    PassMutex.unlock();
    Mutex.unlock();
  }
  void forkChild() {
    Incoming.clear();
    Started = false;
    Stop = false;
    new (&Worker) std::thread(); // the parent's, not joinable here
    new (&Mutex) std::mutex();
    new (&PassMutex) std::mutex();
    new (&Wake) std::condition_variable();
  }

private:
  struct EntryTy {
    void **Handle;
    void *Task;
  };

  /// Starts the completer thread; Mutex held.
  void start() {
    Worker = std::thread(&NowaitCompleterTy::run, this);
    Started = true;
  }

  void run() {
    // Sleeps as short as asked: the default timer slack adds 50 us to each.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    using ClockTy = std::chrono::steady_clock;
    std::vector<EntryTy> Active;
    std::unique_lock<std::mutex> L(Mutex);
    auto Progress = ClockTy::now();
    while (true) {
      if (Active.empty()) {
        Wake.wait(L, [&] { return !Incoming.empty() || Stop; });
        if (Incoming.empty())
          return; // stopped with nothing left
      }
      if (!Incoming.empty()) {
        Active.insert(Active.end(), Incoming.begin(), Incoming.end());
        Incoming.clear();
        Progress = ClockTy::now();
      }
      L.unlock();
      size_t Kept = 0;
      {
        std::lock_guard<std::mutex> Pass(PassMutex);
        for (EntryTy &E : Active) {
          if (Poll(E.Handle))
            Complete(E.Task);
          else
            Active[Kept++] = E;
        }
      }
      bool Completed = Kept != Active.size();
      Active.resize(Kept);
      auto Now = ClockTy::now();
      if (Completed)
        Progress = Now;
      if (!Active.empty() && Now - Progress >= BusyWait) {
        // Sleep an eighth of the time waited so far (10 us to 10 ms): a
        // completion is seen at most 12.5 % late, in O(log) polls.
        auto Sleep = std::chrono::duration_cast<std::chrono::microseconds>(
            (Now - Progress) / 8);
        Sleep = std::clamp(Sleep, std::chrono::microseconds(10),
                           std::chrono::microseconds(10000));
        L.lock();
        if (Incoming.empty())
          Wake.wait_for(L, Sleep);
      } else {
        L.lock();
      }
    }
  }

  const PollFnTy Poll;
  const CompleteFnTy Complete;
  const std::chrono::microseconds BusyWait;
  std::mutex Mutex;
  /// Held by the completer thread for a pass over the queues (never while it
  /// takes Mutex) and by forkPrepare.
  std::mutex PassMutex;
  std::condition_variable Wake;
  std::vector<EntryTy> Incoming;
  std::thread Worker;
  bool Started = false;
  bool Stop = false;
};

} // namespace llvm::omp::target

#endif // OMPTARGET_OPENMP_KLE_NOWAIT_COMPLETER_H
