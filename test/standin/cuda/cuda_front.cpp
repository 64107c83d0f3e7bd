//===- cuda_front.cpp - Configuration and reports of the CUDA stand-in ----===//
//
// TEST ONLY.  The CUDA front's global state, its configuration (the
// environment), handles, and the reports it prints at context destruction,
// at exit and at library unload (see cuda_front.h).
//
// NEVER install this library.  The CMake project has no install() rule.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"

namespace cuda_standin {

Global &g() {
  static Global *G = new Global();
  return *G;
}

thread_local Ctx *CurrentCtx = nullptr;

//===----------------------------------------------------------------------===//
// Configuration parsing
//===----------------------------------------------------------------------===//

static bool parseResult(const std::string &S, int &Out) {
  static const std::map<std::string, int> Names = {
      {"CUDA_ERROR_INVALID_VALUE", 1},     {"CUDA_ERROR_OUT_OF_MEMORY", 2},
      {"CUDA_ERROR_NOT_INITIALIZED", 3},   {"CUDA_ERROR_NO_DEVICE", 100},
      {"CUDA_ERROR_INVALID_DEVICE", 101},  {"CUDA_ERROR_INVALID_IMAGE", 200},
      {"CUDA_ERROR_INVALID_CONTEXT", 201}, {"CUDA_ERROR_INVALID_HANDLE", 400},
      {"CUDA_ERROR_NOT_FOUND", 500},       {"CUDA_ERROR_NOT_READY", 600},
      {"CUDA_ERROR_ILLEGAL_ADDRESS", 700},
      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 701},
      {"CUDA_ERROR_LAUNCH_FAILED", 719},   {"CUDA_ERROR_NOT_SUPPORTED", 801},
      {"CUDA_ERROR_UNKNOWN", 999}};
  auto It = Names.find(S);
  if (It != Names.end()) {
    Out = It->second;
    return true;
  }
  char *End = nullptr;
  long V = strtol(S.c_str(), &End, 0);
  if (S.empty() || *End || V < 0 || V > 0x7fffffff)
    return false;
  Out = int(V);
  return true;
}

static std::string baseName(const std::string &Name) {
  std::string N = Name;
  for (const char *Suf : {"_v2", "_v3", "_v4", "_ptds", "_ptsz"}) {
    size_t L = strlen(Suf);
    if (N.size() > L && N.compare(N.size() - L, L, Suf) == 0)
      N.resize(N.size() - L);
  }
  return N;
}

// Reads the environment once: the core's variables (KLE_STANDIN_DELAY_US,
// _KERNEL_US, _EXPECT, _FAIL, _STATS, _STATS_FILE, _EXIT_CODE, _VERBOSE,
// _SEED) and the front's own.
Config &cfg() {
  static Config *C = [] {
    standin::init("kle-standin", "KLE_CUDA_STANDIN_", parseResult, baseName);
    standin::setStatsNames(standin::StatsNames::Exported);
    standin::plantedInit(); // COPY_US, SYNC_NOISE (malformed: exit 2)
    Config *C = new Config();
    C->NumDevices = standin::deviceCount(1, 64); // DEVICES (bad: exit 2)
    uint64_t SM = 90;
    static const unsigned Known[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80,
                                     86, 87, 89, 90, 100, 101, 103, 120, 121};
    if (const char *E = standin::frontEnv("SM"))
      if (!standin::parseDecimal(E, 121, SM) ||
          std::find(std::begin(Known), std::end(Known), SM) == std::end(Known))
        standin::badFrontEnv("SM", E,
                             "an sm number: 50, 52, 53, 60, 61, 62, 70, 72, 75, "
                             "80, 86, 87, 89, 90, 100, 101, 103, 120 or 121");
    C->SM = int(SM);
    C->Kle = kleConfigFromEnv();
    return C;
  }();
  return *C;
}

const standin::Config &core() {
  (void)cfg();
  return standin::cfg();
}

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

bool isHandle(void *P, int Tag) {
  std::lock_guard<std::mutex> L(g().Mtx);
  auto It = g().Handles.find(P);
  return It != g().Handles.end() && It->second == Tag;
}
void addHandle(void *P, int Tag) {
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles[P] = Tag;
}
void dropHandle(void *P) {
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles.erase(P);
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

void liveReport(const char *At, Ctx *Only) {
  Global &G = g();
  size_t C[4] = {0, 0, 0, 0}, B[4] = {0, 0, 0, 0};
  size_t PC[4], PB[4];
  {
    std::lock_guard<std::mutex> L(G.Mtx);
    for (auto &Blk : standin::mem().live()) {
      AllocP A = asAlloc(Blk);
      if (Only && A->Owner != Only)
        continue;
      int KI = static_cast<int>(A->K);
      C[KI]++;
      B[KI] += A->Size;
    }
    size_t LN[standin::MaxKinds], LB[standin::MaxKinds], PN[standin::MaxKinds],
        PBy[standin::MaxKinds];
    standin::mem().counts(LN, LB, PN, PBy);
    for (int K = 0; K < 4; ++K)
      PC[K] = PN[K], PB[K] = PBy[K];
  }
  say("live device=%zu pinned=%zu managed=%zu (bytes device=%zu pinned=%zu "
      "managed=%zu) at=%s",
      C[0], C[1], C[2], B[0], B[1], B[2], At);
  say("peak device=%zu pinned=%zu managed=%zu (bytes device=%zu pinned=%zu "
      "managed=%zu)",
      PC[0], PC[1], PC[2], PB[0], PB[1], PB[2]);
  say("launches=%llu violations=%llu",
      (unsigned long long)standin::launches(),
      (unsigned long long)standin::violations());
}

void statsReport() {
  standin::statsReport();
  waitReport();
}

bool anyCtxAlive() {
  std::lock_guard<std::mutex> L(g().Mtx);
  for (Ctx *C : g().PrimaryCtx)
    if (C && C->Alive && C->Ref > 0)
      return true;
  for (auto &KV : g().Handles)
    if (KV.second == H_CTX && !static_cast<Ctx *>(KV.first)->Primary)
      return true;
  return false;
}

// The core's exitIfViolations forces the exit status.
void finalReport(const char *At) {
  standin::faultsNotReached();
  liveReport(At, nullptr);
  statsReport();
  standin::exitIfViolations(nullptr);
}

static void onExit() {
  g().Exiting = true;
  // No image loaded: none was for this architecture (the plugin offers the
  // driver only matching ones; the others run on the host without a word
  // from the runtime), or no target region ran on a device.
  if (g().Initialized && cfg().NumDevices && !g().ModuleLoaded)
    say("note: no image was loaded: no target region ran on the stand-in's "
        "sm_%d devices (an image for another architecture runs its regions "
        "on the host; KLE_CUDA_STANDIN_SM sets the devices' architecture)",
        cfg().SM);
  if (anyCtxAlive()) {
    // The plugin normally releases its primary contexts from libomptarget's
    // destructor, which runs after this handler; the report (and the forced
    // exit status) then happens at that release.  Violations already seen
    // fail the process now.
    if (standin::violations())
      finalReport("exit");
    liveReport("exit(contexts-still-active)", nullptr);
    statsReport();
    return;
  }
  finalReport("exit");
}

__attribute__((constructor)) static void standinInit() {
  (void)cfg();
  (void)g();
  atexit(onExit);
  standin::installForkHandlers({forkCollect, forkChild, forkCurrent});
}

__attribute__((destructor)) static void standinFini() {
  g().Exiting = true;
  if (standin::violations())
    finalReport("fini");
  statsReport();
  // Stop and join the stream workers before our code is unmapped.
  stopStreamWorkers();
}

} // namespace cuda_standin
