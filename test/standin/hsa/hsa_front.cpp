//===- hsa_front.cpp - HSA stand-in front: state, configuration, reports ---===//
//
// A fake libhsa-runtime64.so.1 so that LLVM 22.1.8's unmodified AMDGPU plugin
// (offload/plugins-nextgen/amdgpu, dlopen mode, dynamic_hsa/hsa.cpp) runs
// every transport's launch lifecycle on a machine without a GPU, and so that
// every kernel dispatch is checked against the KLE / dyn_ptr contract
// (kle_contract_hsa.cpp).  No kernel executes.  The driver-independent
// machinery (configuration, output, violations, fault injection, call counts,
// the memory table, the workers' delays, wake-up, stop and join) is the
// shared core in ../core.  The entry points are split by API area:
// hsa_system.cpp, hsa_memory.cpp, hsa_code_object.cpp, hsa_signal.cpp and
// hsa_queue.cpp.  See ../README.md for variables and checks.
//
// The ABI is the plugin's own trimmed hsa.h / hsa_ext_amd.h.  Values those
// headers lack come from ROCr's public headers (not checked on hardware).
//
// NEVER install this library.  The CMake project has no install() rule.
//
//===----------------------------------------------------------------------===//

#include "hsa_front.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {

//===----------------------------------------------------------------------===//
// Status names, configuration
//===----------------------------------------------------------------------===//

struct StatusName {
  int V;
  const char *Name, *Text;
};
const StatusName StatusNames[] = {
    {0x0, "HSA_STATUS_SUCCESS", "success"},
    {0x1, "HSA_STATUS_INFO_BREAK", "iteration stopped by the callback"},
    {0x1000, "HSA_STATUS_ERROR", "generic error"},
    {0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", "invalid queue creation"},
    {0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION", "invalid allocation"},
    {0x1004, "HSA_STATUS_ERROR_INVALID_AGENT", "invalid agent"},
    {0x1007, "HSA_STATUS_ERROR_INVALID_SIGNAL", "invalid signal"},
    {0x1008, "HSA_STATUS_ERROR_INVALID_QUEUE", "invalid queue"},
    {0x1009, "HSA_STATUS_ERROR_OUT_OF_RESOURCES", "out of resources"},
    {0x100B, "HSA_STATUS_ERROR_NOT_INITIALIZED", "runtime not initialized"},
    {0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", "invalid code object"},
    {0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", "invalid symbol name"},
    {0x1015, "HSA_STATUS_ERROR_INVALID_EXECUTABLE", "invalid executable"},
    {0x1016, "HSA_STATUS_ERROR_EXCEPTION", "kernel exception"},
    {0x1019, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER", "invalid code object reader"},
};

bool parseStatus(const std::string &T, int &Out) {
  for (auto &S : StatusNames)
    if (T == S.Name) {
      Out = S.V;
      return true;
    }
  if (T.empty())
    return false;
  char *End = nullptr;
  long V = strtol(T.c_str(), &End, 0);
  if (*End || V < 0)
    return false;
  Out = int(V);
  return true;
}

} // namespace

namespace hsafront {

const char *kindName(int K) {
  static const char *N[] = {"device", "fine", "kernarg", "host-coarse", "locked", "code"};
  return K >= 0 && K < K_COUNT ? N[K] : "?";
}

Global &g() {
  static Global *G = new Global();
  return *G;
}

const char *statusText(hsa_status_t S) {
  for (auto &N : StatusNames)
    if (N.V == int(S))
      return N.Text;
  return nullptr;
}

const Config &conf() {
  static const Config *C = [] {
    const Config &R = init("kle-hsa-standin", "KLE_HSA_STANDIN_", parseStatus, nullptr);
    uint64_t W;
    if (standin::envNumber("WATCHDOG_S", 1, 86400, W, "1..86400 seconds"))
      g().WatchdogS = W;
    if (const char *E = standin::frontEnv("COPY_START")) {
      if (!strcmp(E, "observed"))
        g().CopyStartObserved = true;
      else if (strcmp(E, "enqueue"))
        standin::badFrontEnv("COPY_START", E, "enqueue or observed");
    }
    static const char *Known[] = {"ignore-barriers", "ignore-copy-deps", "early-completion",
                                  "scribble-kle", "dirty-counters", "scribble-staging",
                                  "bad-packet", "scribble-kernarg", "flip-host-flag"};
    for (auto &B : R.Breaks)
      if (std::none_of(std::begin(Known), std::end(Known),
                       [&](const char *K) { return B == K; }))
        say("unknown KLE_HSA_STANDIN_BREAK item '%s' ignored", B.c_str());
    installExitHandlers(finalReport);
    installSegvNote();
    standin::installForkHandlers({forkCollect, forkChild, forkCurrent});
    return &R;
  }();
  return *C;
}

bool validAgent(hsa_agent_t A) { return A.handle == CPU_AGENT || A.handle == GPU_AGENT; }

int gpuCount() {
  return standin::deviceCount(1, 1); // DEVICES: one GPU agent or none
}

BlockP blockFor(uintptr_t P, size_t N) { return mem().resolve(P, std::max<size_t>(N, 1)); }

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

void liveReport(const char *At) {
  size_t LN[MaxKinds], LB[MaxKinds], PN[MaxKinds], PB[MaxKinds];
  mem().counts(LN, LB, PN, PB);
  size_t Sigs, Kept, KeptQs = 0, Qs = 0, Exes = 0, Hs, Cps;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    Kept = g().InheritedSignals;
    Sigs = g().LiveSignals - Kept;
    for (auto *Q : g().Queues) {
      Qs += !Q->Destroyed && !Q->Inherited;
      KeptQs += !Q->Destroyed && Q->Inherited;
    }
    for (auto *E : g().Exes)
      Exes += !E->Destroyed;
    Hs = g().Handlers.size() + g().HandlersRunning;
    Cps = g().Copies.size();
  }
  say("live device=%zu fine=%zu kernarg=%zu host-coarse=%zu locked=%zu signals=%zu queues=%zu "
      "executables=%zu handlers=%zu copies=%zu (bytes device=%zu fine=%zu kernarg=%zu) at=%s",
      LN[K_DEVICE], LN[K_FINE], LN[K_KERNARG], LN[K_HOST_COARSE], LN[K_LOCKED], Sigs, Qs, Exes,
      Hs, Cps, LB[K_DEVICE], LB[K_FINE], LB[K_KERNARG], At);
  if (Kept || KeptQs)
    say("live since the fork (the parent's, not counted above): signals=%zu queues=%zu", Kept,
        KeptQs);
  size_t PeakSigs;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    PeakSigs = g().PeakSignals;
  }
  say("peak device=%zu fine=%zu kernarg=%zu host-coarse=%zu locked=%zu signals=%zu "
      "(bytes device=%zu fine=%zu kernarg=%zu)",
      PN[K_DEVICE], PN[K_FINE], PN[K_KERNARG], PN[K_HOST_COARSE], PN[K_LOCKED], PeakSigs,
      PB[K_DEVICE], PB[K_FINE], PB[K_KERNARG]);
}

void finalReport(const char *Where) {
  bool Init, EverInit;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    Init = g().InitCount > 0;
    EverInit = g().EverInit;
  }
  // No code object loaded: none was for the agent's ISA (the plugin loads
  // only matching ones; the others run on the host without a word from the
  // runtime), or no target region ran on the agent.
  if (EverInit && !g().CodeObjectLoaded)
    say("note: no code object was loaded: no target region ran on the "
        "stand-in's gfx90a agent (an image for another architecture runs its "
        "regions on the host)");
  if (Init)
    liveReport(Where);
}

} // namespace hsafront
