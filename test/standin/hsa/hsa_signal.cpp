//===- hsa_signal.cpp - HSA stand-in: signals and async handlers ----------===//
//
// TEST ONLY.  Signal create, destroy, load, store, subtract and wait (a
// store to a queue's doorbell goes to the queue: hsa_queue.cpp), and
// hsa_amd_signal_async_handler with the handler thread that runs the
// callbacks, plus the SIGSEGV note for a fault inside one of them.
//
//===----------------------------------------------------------------------===//

#include "happens_before_hsa.h"
#include "hsa_front.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

using namespace hsafront;
using standin::contract::Check;
using standin::contract::reportOp;

namespace hsafront {

Signal *sigOf(hsa_signal_t H, bool AllowDestroyed) {
  std::lock_guard<std::mutex> L(g().Mtx);
  auto It = g().Signals.find(H.handle);
  if (It == g().Signals.end())
    return nullptr;
  if (It->second->Destroyed && !AllowDestroyed)
    return nullptr;
  return It->second;
}

void sigSub(Signal *S, int64_t V) {
  S->V.fetch_sub(V);
  g().Wake.notify();
}

hsa_status_t newSignal(int64_t Init, hsa_signal_t *Out) {
  if (!Out)
    return ST_INVALID_ARGUMENT;
  auto *S = new Signal();
  S->V.store(Init);
  std::lock_guard<std::mutex> G(g().Mtx);
  S->Id = g().NextSignal++;
  g().Signals[S->Id] = S;
  g().LiveSignals++;
  g().PeakSignals = std::max(g().PeakSignals, g().LiveSignals);
  Out->handle = S->Id;
  return HSA_STATUS_SUCCESS;
}

bool condHolds(hsa_signal_condition_t C, int64_t V, int64_t X) {
  switch (int(C)) {
  case 0: return V == X;
  case 1: return V != X;
  case 2: return V < X;
  case 3: return V >= X;
  }
  return false;
}

} // namespace hsafront

//===----------------------------------------------------------------------===//
// Async-handler thread
//===----------------------------------------------------------------------===//

namespace {

// A SIGSEGV while the handler thread is inside a callback the plugin
// registered with hsa_amd_signal_async_handler is the plugin's, not the
// stand-in's (negative_controls.c: under ignore-barriers, or ignore-copy-deps
// with a two-step host-to-device copy pending, the plugin's
// AMDGPUStreamTy::asyncActionCallback finds its stream slot already
// released). Say so on stderr, then let the default action end the process
// (the faulting instruction runs again with SIG_DFL: status 139 as before).
std::atomic<long> HandlerTid{0};
std::atomic<bool> InPluginHandler{false};

void segvNote(int, siginfo_t *, void *) {
  static const char Plugin[] = "kle-hsa-standin: SIGSEGV in a callback the program registered "
                               "with hsa_amd_signal_async_handler (not in the stand-in)\n";
  static const char Other[] = "kle-hsa-standin: SIGSEGV outside the async handler callbacks\n";
  bool InCb = InPluginHandler.load() && syscall(SYS_gettid) == HandlerTid.load();
  ssize_t R = write(2, InCb ? Plugin : Other, InCb ? sizeof(Plugin) - 1 : sizeof(Other) - 1);
  (void)R;
}

} // namespace

namespace hsafront {

void installSegvNote() {
  struct sigaction Old;
  if (sigaction(SIGSEGV, nullptr, &Old) || Old.sa_handler != SIG_DFL)
    return; // the program (or a sanitizer) has its own
  struct sigaction A;
  memset(&A, 0, sizeof(A));
  A.sa_sigaction = segvNote;
  A.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&A.sa_mask);
  sigaction(SIGSEGV, &A, nullptr);
}

void handlerWorker() {
  HandlerTid.store(syscall(SYS_gettid));
  while (true) {
    std::vector<Handler> Run;
    uint64_t Seen = g().Wake.epoch();
    std::unique_lock<std::mutex> Running(g().HandlerRunMtx);
    {
      std::lock_guard<std::mutex> G(g().Mtx);
      for (auto It = g().Handlers.begin(); It != g().Handlers.end();) {
        if (condHolds(It->Cond, It->S->V.load(), It->Value)) {
          Run.push_back(*It);
          It = g().Handlers.erase(It);
        } else {
          ++It;
        }
      }
      g().HandlersRunning += Run.size();
    }
    for (auto &H : Run) {
      // No stand-in lock is held: the handler calls back into the runtime.
      hbHostAcquire(*H.S);
      InPluginHandler.store(true);
      bool Again = H.Fn(H.S->V.load(), H.Arg);
      InPluginHandler.store(false);
      std::lock_guard<std::mutex> G(g().Mtx);
      g().HandlersRunning--;
      if (Again)
        g().Handlers.push_back(H);
    }
    Running.unlock();
    if (!Run.empty())
      continue;
    g().Wake.waitChange(Seen, 5000000);
  }
}

} // namespace hsafront

//===----------------------------------------------------------------------===//
// Exports: signals
//===----------------------------------------------------------------------===//


EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t Init, uint32_t NumConsumers,
                                      const hsa_agent_t *Consumers, hsa_signal_t *Out) {
  ENTRY("hsa_signal_create");
  NEED_INIT();
  return newSignal(Init, Out);
}

EXPORT hsa_status_t hsa_amd_signal_create(hsa_signal_value_t Init, uint32_t NumConsumers,
                                          const hsa_agent_t *Consumers, uint64_t Attributes,
                                          hsa_signal_t *Out) {
  ENTRY("hsa_amd_signal_create");
  NEED_INIT();
  return newSignal(Init, Out);
}

EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t H) {
  ENTRY("hsa_signal_destroy");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  auto It = g().Signals.find(H.handle);
  if (It == g().Signals.end() || It->second->Destroyed || It->second->DoorbellOf)
    return ST_INVALID_SIGNAL;
  Signal *S = It->second;
  for (auto &C : g().Copies)
    if (C->Done == S || std::count(C->Deps.begin(), C->Deps.end(), S))
      reportOp(Check::B, "hsa_signal_destroy of signal %#llx that pending copy op #%llu uses",
                  (unsigned long long)S->Id, (unsigned long long)C->Op);
  for (auto &Hd : g().Handlers)
    if (Hd.S == S)
      reportOp(Check::B, "hsa_signal_destroy of signal %#llx that a pending async handler waits on",
                  (unsigned long long)S->Id);
  S->Destroyed = true;
  g().LiveSignals--;
  g().InheritedSignals -= S->Inherited;
  return HSA_STATUS_SUCCESS;
}

static Signal *apiSignal(hsa_signal_t H, const char *Fn) {
  Signal *S = sigOf(H);
  if (!S)
    opViolation("%s on an unknown or destroyed signal %#llx", Fn, (unsigned long long)H.handle);
  return S;
}

EXPORT void hsa_signal_store_relaxed(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_store_relaxed");
  Signal *S = apiSignal(H, "hsa_signal_store_relaxed");
  if (!S)
    return;
  if (!S->DoorbellOf)
    hbHostRelease(*S, /*Replace=*/true);
  S->V.store(V);
  if (S->DoorbellOf)
    doorbellHook(*S->DoorbellOf, V);
  else {
    S->HostEpoch = ++g().HostEpoch;
    g().Wake.notify();
  }
}

EXPORT void hsa_signal_store_screlease(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_store_screlease");
  Signal *S = apiSignal(H, "hsa_signal_store_screlease");
  if (!S)
    return;
  if (S->DoorbellOf) {
    S->V.store(V);
    doorbellHook(*S->DoorbellOf, V);
    return;
  }
  S->HostEpoch = ++g().HostEpoch;
  hbHostRelease(*S, /*Replace=*/true);
  S->V.store(V);
  g().Wake.notify();
}

EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t H) {
  ENTRY_VOID("hsa_signal_load_scacquire");
  Signal *S = apiSignal(H, "hsa_signal_load_scacquire");
  if (!S)
    return 0;
  hsa_signal_value_t V = S->V.load();
  startHeldCopy(S); // after the load: a held copy is seen pending
  hbHostAcquire(*S);
  return V;
}

EXPORT void hsa_signal_subtract_screlease(hsa_signal_t H, hsa_signal_value_t V) {
  ENTRY_VOID("hsa_signal_subtract_screlease");
  Signal *S = apiSignal(H, "hsa_signal_subtract_screlease");
  if (!S)
    return;
  S->HostEpoch = ++g().HostEpoch;
  hbHostRelease(*S, /*Replace=*/false);
  sigSub(S, V);
}

EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t H, hsa_signal_condition_t Cond,
                                                    hsa_signal_value_t X, uint64_t Timeout,
                                                    hsa_wait_state_t State) {
  ENTRY_VOID("hsa_signal_wait_scacquire");
  Signal *S = apiSignal(H, "hsa_signal_wait_scacquire");
  if (!S)
    return 0;
  startHeldCopy(S);
  // The timeout is a hint (ROCr: timestamp ticks); spurious returns are legal
  // and callers loop, so wait at most 10 ms per call.
  g().Wake.waitUntil([&] { return condHolds(Cond, S->V.load(), X); },
            std::min<uint64_t>(Timeout, 10000000ull));
  hsa_signal_value_t V = S->V.load();
  hbHostAcquire(*S);
  return V;
}

EXPORT hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t H, hsa_signal_condition_t Cond,
                                                 hsa_signal_value_t V, hsa_amd_signal_handler Fn,
                                                 void *Arg) {
  ENTRY("hsa_amd_signal_async_handler");
  NEED_INIT();
  Signal *S = sigOf(H);
  if (!S)
    return ST_INVALID_SIGNAL;
  if (!Fn || int(Cond) < 0 || int(Cond) > 3)
    return ST_INVALID_ARGUMENT;
  startHeldCopy(S);
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    g().Handlers.push_back(Handler{S, Cond, V, Fn, Arg});
  }
  g().Wake.notify(); // never run inline: the handler thread picks it up
  return HSA_STATUS_SUCCESS;
}
