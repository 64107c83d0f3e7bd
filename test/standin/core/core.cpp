//===- core.cpp - Driver-independent core of the CPU driver stand-ins -----===//
//
// TEST ONLY.  See core.h.
//
//===----------------------------------------------------------------------===//

#include "core.h"
#include "happens_before.h"
#include "planted.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <sys/mman.h>
#include <unistd.h>

namespace standin {
namespace {

/// The knobs every front reads alike (core.h's Config, COPY_US, ...).
constexpr const char *SharedPrefix = "KLE_STANDIN_";

struct State {
  std::string Tag = "kle-standin";
  std::string Prefix = "KLE_STANDIN_"; ///< the front's own knobs
  Config *C = nullptr;
  StatusParser Parse = nullptr;
  BaseNamer Namer = nullptr;
  std::mutex OutMtx;
  std::atomic<uint64_t> Violations{0};
  std::atomic<uint64_t> Launches{0};
  std::mutex StatsMtx;
  std::vector<EntryStat *> Stats;
  std::map<std::string, std::atomic<uint64_t> *> BaseCounters;
  uint64_t LastStatsSum = ~0ull;
  void (*Final)(const char *) = nullptr;
  std::atomic<bool> Installed{false};
  std::atomic<bool> FinalDone{false};
  StatsNames Names = StatsNames::Base;
};

State &st() {
  static State *S = new State();
  return *S;
}

void vline(const char *Kind, const char *Fmt, va_list Ap) {
  char Buf[4096];
  vsnprintf(Buf, sizeof(Buf), Fmt, Ap);
  std::lock_guard<std::mutex> L(st().OutMtx);
  fprintf(stderr, "%s: %s%s\n", st().Tag.c_str(), Kind, Buf);
  fflush(stderr);
}

bool parseU64(const char *S, uint64_t &Out) {
  if (!S || !*S)
    return false;
  char *End = nullptr;
  errno = 0;
  unsigned long long V = strtoull(S, &End, 0);
  if (errno || *End || *S == '-' || *S == '+' || *S == ' ')
    return false;
  Out = V;
  return true;
}

void warnBad(const char *Prefix, const char *Name, const char *Val,
             const char *Want) {
  fprintf(stderr, "%s: ignoring %s%s=%s (want %s)\n", st().Tag.c_str(),
          Prefix, Name, Val, Want);
}

void warnBad(const char *Name, const char *Val, const char *Want) {
  warnBad(SharedPrefix, Name, Val, Want);
}

[[noreturn]] void badEnvWith(const char *Prefix, const char *Name,
                             const char *Value, const char *Want) {
  fprintf(stderr, "%s: error: %s%s=\"%s\" is not valid: want %s\n", tag(),
          Prefix, Name, Value, Want);
  fflush(nullptr);
  _exit(2);
}

} // namespace

const char *env(const char *Name) {
  return getenv((std::string(SharedPrefix) + Name).c_str());
}

const char *frontEnv(const char *Name) {
  return getenv((st().Prefix + Name).c_str());
}

bool parseDecimal(const char *S, uint64_t Hi, uint64_t &Out) {
  size_t Len = strlen(S);
  if (Len == 0 || strspn(S, "0123456789") != Len)
    return false;
  errno = 0;
  unsigned long long V = strtoull(S, nullptr, 10);
  if (errno || V > Hi)
    return false;
  Out = V;
  return true;
}

void badEnv(const char *Name, const char *Value, const char *Want) {
  badEnvWith(SharedPrefix, Name, Value, Want);
}

void badFrontEnv(const char *Name, const char *Value, const char *Want) {
  badEnvWith(envPrefix(), Name, Value, Want);
}

bool envNumber(const char *Name, uint64_t Lo, uint64_t Hi, uint64_t &Out,
               const char *Want) {
  const char *E = frontEnv(Name);
  if (!E)
    return false;
  uint64_t V;
  if (parseDecimal(E, Hi, V) && V >= Lo) {
    Out = V;
    return true;
  }
  warnBad(envPrefix(), Name, E, Want);
  return false;
}

const char *tag() { return st().Tag.c_str(); }
const char *envPrefix() { return st().Prefix.c_str(); }

const Config &init(const char *Tag, const char *EnvPrefix, StatusParser Parse,
                   BaseNamer Namer) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.StatsMtx);
  if (S.C)
    return *S.C;
  S.Tag = Tag;
  S.Prefix = EnvPrefix;
  S.Parse = Parse;
  S.Namer = Namer;
  Config *C = new Config();
  uint64_t V;
  if (const char *E = env("DELAY_US")) {
    std::string T = E;
    size_t Colon = T.find(':');
    uint64_t A, B;
    if (Colon == std::string::npos && parseU64(E, A))
      C->DelayMin = C->DelayMax = A;
    else if (Colon != std::string::npos &&
             parseU64(T.substr(0, Colon).c_str(), A) &&
             parseU64(T.substr(Colon + 1).c_str(), B) && A <= B)
      C->DelayMin = A, C->DelayMax = B;
    else
      warnBad("DELAY_US", E, "n or min:max microseconds, min <= max");
  }
  if (const char *E = env("KERNEL_US")) {
    if (parseU64(E, V))
      C->KernelUs = V;
    else
      warnBad("KERNEL_US", E, "microseconds");
  }
  if (const char *E = env("EXPECT")) {
    if (!parseTransport(E, C->Expect))
      warnBad("EXPECT", E, "any, zerocopy, copy, staged or resident");
  }
  if (const char *E = env("STATS"))
    C->Stats = strcmp(E, "0") != 0 && *E;
  if (const char *E = env("STATS_FILE"))
    C->StatsFile = E;
  if (const char *E = env("EXIT_CODE")) {
    if (parseU64(E, V) && V > 0 && V < 256)
      C->ExitCode = int(V);
    else
      warnBad("EXIT_CODE", E, "1..255");
  }
  if (const char *E = env("VERBOSE"))
    C->Verbose = strcmp(E, "0") != 0 && *E;
  if (const char *E = env("SEED")) {
    if (parseU64(E, V))
      C->Seed = V;
    else
      warnBad("SEED", E, "a number");
  }
  auto Split = [](const std::string &T) {
    std::vector<std::string> Out;
    size_t Pos = 0;
    while (Pos <= T.size()) {
      size_t Comma = T.find(',', Pos);
      std::string Item = T.substr(Pos, Comma == std::string::npos ? std::string::npos : Comma - Pos);
      if (!Item.empty())
        Out.push_back(Item);
      if (Comma == std::string::npos)
        break;
      Pos = Comma + 1;
    }
    return Out;
  };
  if (const char *E = frontEnv("BREAK"))
    for (auto &Item : Split(E))
      C->Breaks.insert(Item);
  if (const char *E = env("FAIL")) {
    for (auto &Item : Split(E)) {
      size_t C1 = Item.find(':');
      size_t C2 = C1 == std::string::npos ? C1 : Item.find(':', C1 + 1);
      Fault F;
      bool Ok = C2 != std::string::npos;
      if (Ok) {
        F.Entry = Namer ? Namer(Item.substr(0, C1)) : Item.substr(0, C1);
        std::string NS = Item.substr(C1 + 1, C2 - C1 - 1);
        F.OrLater = !NS.empty() && NS.back() == '+';
        if (F.OrLater)
          NS.pop_back();
        Ok = parseU64(NS.c_str(), V) && V > 0;
        F.N = V;
        Ok = Ok && Parse && Parse(Item.substr(C2 + 1), F.Code) && F.Code != 0;
      }
      if (Ok)
        C->Faults.push_back(F);
      else
        warnBad("FAIL", Item.c_str(), "entry:N[+]:status, N >= 1, a known failure status name or a non-zero number");
    }
  }
  S.C = C;
  return *C;
}

const Config &cfg() {
  if (!st().C) {
    static Config Default;
    return Default;
  }
  return *st().C;
}

bool broken(const char *Name) { return cfg().Breaks.count(Name) != 0; }

void say(const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  vline("", Fmt, Ap);
  va_end(Ap);
}

void violation(uint64_t Launch, const char *Fmt, ...) {
  st().Violations++;
  char Kind[64];
  snprintf(Kind, sizeof(Kind), "VIOLATION launch #%llu: ", (unsigned long long)Launch);
  va_list Ap;
  va_start(Ap, Fmt);
  vline(Kind, Fmt, Ap);
  va_end(Ap);
}

void opViolation(const char *Fmt, ...) {
  st().Violations++;
  va_list Ap;
  va_start(Ap, Fmt);
  vline("VIOLATION op: ", Fmt, Ap);
  va_end(Ap);
}

uint64_t violations() { return st().Violations.load(); }
uint64_t nextLaunch() { return ++st().Launches; }
uint64_t launches() { return st().Launches.load(); }

std::string hex(const uint8_t *P, size_t N) {
  static const char *D = "0123456789abcdef";
  std::string S;
  for (size_t I = 0; I < N; ++I) {
    S += D[P[I] >> 4];
    S += D[P[I] & 15];
  }
  return S;
}

EntryStat *registerEntry(const char *Name) {
  State &S = st();
  std::lock_guard<std::mutex> L(S.StatsMtx);
  auto *E = new EntryStat();
  E->Name = Name;
  E->Base = S.Namer ? S.Namer(Name) : std::string(Name);
  auto &BC = S.BaseCounters[E->Base];
  if (!BC)
    BC = new std::atomic<uint64_t>(0);
  E->BaseCalls = BC;
  S.Stats.push_back(E);
  return E;
}

int enter(EntryStat &E) {
  E.Calls++;
  uint64_t N = ++*E.BaseCalls;
  for (auto &F : cfg().Faults) {
    if (F.Entry != E.Base)
      continue;
    if (N == F.N || (F.OrLater && N >= F.N)) {
      say("injected failure: %s call #%llu -> %d", E.Name, (unsigned long long)N, F.Code);
      return F.Code;
    }
  }
  return 0;
}

void setStatsNames(StatsNames N) { st().Names = N; }

// By exported name: only entries called, summed per name.
static void statsReportExported(bool Force) {
  State &S = st();
  std::map<std::string, uint64_t> Calls;
  uint64_t Sum = 0;
  {
    std::lock_guard<std::mutex> L(S.StatsMtx);
    for (EntryStat *E : S.Stats)
      if (uint64_t N = E->Calls.load()) {
        Calls[E->Name] += N;
        Sum += N;
      }
    if (Sum == S.LastStatsSum && !Force)
      return; // nothing new since the last report
    S.LastStatsSum = Sum;
  }
  if (cfg().Stats)
    for (auto &KV : Calls)
      say("calls %s=%llu", KV.first.c_str(), (unsigned long long)KV.second);
  if (!cfg().StatsFile.empty()) {
    if (FILE *F = fopen(cfg().StatsFile.c_str(), "w")) {
      for (auto &KV : Calls)
        fprintf(F, "%s %llu\n", KV.first.c_str(), (unsigned long long)KV.second);
      fprintf(F, "#launches %llu\n#violations %llu\n", (unsigned long long)launches(),
              (unsigned long long)violations());
      fclose(F);
    }
  }
}

void statsReport(bool Force) {
  State &S = st();
  if (!cfg().Stats && cfg().StatsFile.empty())
    return;
  if (S.Names == StatsNames::Exported)
    return statsReportExported(Force);
  std::lock_guard<std::mutex> L(S.StatsMtx);
  uint64_t Sum = 0;
  for (auto &KV : S.BaseCounters)
    Sum += KV.second->load();
  if (Sum == S.LastStatsSum && !Force)
    return;
  S.LastStatsSum = Sum;
  if (cfg().Stats)
    for (auto &KV : S.BaseCounters)
      if (uint64_t N = KV.second->load())
        say("calls %s=%llu", KV.first.c_str(), (unsigned long long)N);
  if (!cfg().StatsFile.empty()) {
    if (FILE *F = fopen(cfg().StatsFile.c_str(), "w")) {
      for (auto &KV : S.BaseCounters)
        fprintf(F, "%s %llu\n", KV.first.c_str(), (unsigned long long)KV.second->load());
      fprintf(F, "#launches %llu\n#violations %llu\n", (unsigned long long)launches(),
              (unsigned long long)violations());
      fclose(F);
    }
  }
}

void exitIfViolations(const char *Where) {
  if (!violations())
    return;
  fflush(stdout);
  if (Where)
    say("FAILED: %llu KLE contract violation(s); exiting with status %d (at %s)",
        (unsigned long long)violations(), cfg().ExitCode, Where);
  else
    say("FAILED: %llu KLE contract violation(s); exiting with status %d",
        (unsigned long long)violations(), cfg().ExitCode);
  fflush(nullptr);
  _exit(cfg().ExitCode);
}

// A FAIL item whose entry point was never called (a misspelled name, or one
// this program does not reach), or called fewer than N times, injected
// nothing: say so, or a fault test passes without its fault.
void faultsNotReached() {
  static std::atomic<bool> Done{false};
  if (Done.exchange(true))
    return;
  State &S = st();
  std::lock_guard<std::mutex> L(S.StatsMtx);
  for (auto &F : cfg().Faults) {
    auto It = S.BaseCounters.find(F.Entry);
    uint64_t Calls = It == S.BaseCounters.end() ? 0 : It->second->load();
    if (Calls < F.N)
      say("note: %sFAIL item %s:%llu injected nothing: %s", SharedPrefix,
          F.Entry.c_str(), (unsigned long long)F.N,
          It == S.BaseCounters.end()
              ? "no such entry point was called (misspelled, or not reached)"
              : "fewer calls were made");
  }
}

static void finalOnce(const char *Where) {
  if (st().FinalDone.exchange(true))
    return;
  fflush(stdout);
  if (st().Final)
    st().Final(Where);
  faultsNotReached();
  statsReport();
  say("launches=%llu violations=%llu", (unsigned long long)launches(),
      (unsigned long long)violations());
  exitIfViolations(Where);
}

static void atExit() { finalOnce("exit"); }
__attribute__((destructor)) static void libDtor() {
  if (st().C && st().Installed)
    finalOnce("unload");
}

void installExitHandlers(void (*Final)(const char *Where)) {
  static std::once_flag Once;
  std::call_once(Once, [&] {
    st().Final = Final;
    st().Installed = true;
    atexit(atExit);
  });
}

static std::mutex RngMtx;
static std::mt19937_64 &rng() {
  static std::mt19937_64 *R = new std::mt19937_64(cfg().Seed);
  return *R;
}

void coreForkLocks(std::vector<std::mutex *> &Locks) {
  Locks.push_back(&st().OutMtx);
  Locks.push_back(&st().StatsMtx);
  Locks.push_back(&RngMtx);
  Locks.push_back(&mem().mutex());
  hb::forkLocks(Locks);
  plantedForkLocks(Locks);
}

void coreAfterForkChild() {
  State &S = st();
  S.Tag += "(child)";
  S.Launches = 0;
  S.Violations = 0;
  S.LastStatsSum = ~0ull;
  if (S.C)
    S.C->StatsFile.clear();
}

uint64_t randomBelow(uint64_t N) {
  if (N == 0)
    return 0;
  std::lock_guard<std::mutex> L(RngMtx);
  return rng()() % N;
}

uint64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

//===----------------------------------------------------------------------===//
// Memory table
//===----------------------------------------------------------------------===//

// 16 TiB of address space (PROT_NONE, no memory): device addresses are never
// reused, so this bounds the bytes a process may allocate in total, freed or
// not (1 TiB ran out after 12 allocations of 79 GiB).
static constexpr size_t DevReserve = size_t(1) << 44;

void MemTable::reserve() {
  if (DevBase)
    return;
  // 16 TiB, or less where the address space is limited (valgrind, sanitizers).
  for (size_t Sz = DevReserve; Sz >= (size_t(1) << 32); Sz >>= 1) {
    void *P = mmap(nullptr, Sz, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (P == MAP_FAILED)
      continue;
    DevBase = DevNext = reinterpret_cast<uintptr_t>(P);
    DevEnd = DevBase + Sz;
    return;
  }
  say("cannot reserve the device address range");
}

static size_t pageRound(size_t N) {
  size_t Pg = size_t(sysconf(_SC_PAGESIZE));
  return (std::max<size_t>(N, 1) + Pg - 1) / Pg * Pg;
}

Block::~Block() {
  if (!ReturnOnDrop || !Backing || !Mapped)
    return;
  if (Device)
    munmap(Backing, Mapped);
  else // keep the range reserved: its addresses are never handed out again
    mmap(Backing, Mapped, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

BlockP MemTable::allocate(int Kind, size_t Size, bool Device, int Poison,
                          bool Counted, BlockP Into, size_t DevGranule,
                          bool ReturnOnDrop) {
  size_t Len = pageRound(Size);
  BlockP B = Into ? std::move(Into) : std::make_shared<Block>();
  B->Kind = Kind;
  B->Size = Size;
  B->Device = Device;
  B->Counted = Counted;
  void *Mem = mmap(nullptr, Len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (Mem == MAP_FAILED)
    return nullptr;
  if (Poison >= 0)
    memset(Mem, Poison, Size);
  B->Backing = static_cast<uint8_t *>(Mem);
  B->Mapped = Len;
  std::lock_guard<std::mutex> L(Mtx);
  if (Device) {
    reserve();
    // Granule aligned (a page unless the front says otherwise), and a
    // granule of gap between blocks; never reused.
    size_t G = DevGranule ? DevGranule : 4096;
    size_t Span = (std::max<size_t>(Size, 1) + G - 1) / G * G;
    if (!DevBase || DevNext + Span + G > DevEnd) {
      munmap(Mem, Len);
      B->Backing = nullptr;
      return nullptr;
    }
    B->Addr = DevNext;
    DevNext += Span + G;
  } else {
    B->Addr = reinterpret_cast<uintptr_t>(Mem);
  }
  B->Id = NextId++;
  B->ReturnOnDrop = ReturnOnDrop;
  Live[B->Addr] = B;
  if (Counted && Kind >= 0 && Kind < MaxKinds) {
    LiveN[Kind]++;
    LiveB[Kind] += Size;
    PeakN[Kind] = std::max(PeakN[Kind], LiveN[Kind]);
    PeakB[Kind] = std::max(PeakB[Kind], LiveB[Kind]);
  }
  return B;
}

BlockP MemTable::registerHost(int Kind, uintptr_t Addr, size_t Size) {
  auto B = std::make_shared<Block>();
  B->Kind = Kind;
  B->Addr = Addr;
  B->Size = Size;
  B->Backing = reinterpret_cast<uint8_t *>(Addr);
  std::lock_guard<std::mutex> L(Mtx);
  B->Id = NextId++;
  Live[Addr] = B;
  if (Kind >= 0 && Kind < MaxKinds) {
    LiveN[Kind]++;
    LiveB[Kind] += Size;
    PeakN[Kind] = std::max(PeakN[Kind], LiveN[Kind]);
    PeakB[Kind] = std::max(PeakB[Kind], LiveB[Kind]);
  }
  return B;
}

BlockP MemTable::resolve(uintptr_t P, size_t N) {
  std::lock_guard<std::mutex> L(Mtx);
  auto It = Live.upper_bound(P);
  if (It == Live.begin())
    return nullptr;
  --It;
  const BlockP &B = It->second;
  size_t Span = std::max<size_t>(B->Size, 1);
  if (P >= B->Addr && P - B->Addr < Span && N <= Span - (P - B->Addr))
    return B;
  return nullptr;
}

BlockP MemTable::byStart(uintptr_t P) {
  std::lock_guard<std::mutex> L(Mtx);
  auto It = Live.find(P);
  if (It != Live.end())
    return It->second;
  auto F = Freed.find(P);
  return F == Freed.end() ? nullptr : F->second;
}

BlockP MemTable::liveByStart(uintptr_t P) {
  std::lock_guard<std::mutex> L(Mtx);
  auto It = Live.find(P);
  return It == Live.end() ? nullptr : It->second;
}

bool MemTable::wasFreed(uintptr_t P) {
  std::lock_guard<std::mutex> L(Mtx);
  return Freed.count(P) || FreedStarts.count(P);
}

void MemTable::release(const BlockP &B) {
  // Memory is never unmapped and addresses are never reused: a late reader
  // sees stale bytes (reported by the front's checks) instead of crashing
  // the stand-in, and a stale pointer is always recognised.
  std::lock_guard<std::mutex> L(Mtx);
  if (B->Freed)
    return;
  B->Freed = true;
  Live.erase(B->Addr);
  if (B->ReturnOnDrop)
    FreedStarts.insert(B->Addr);
  else
    Freed[B->Addr] = B;
  if (B->Counted && B->Kind >= 0 && B->Kind < MaxKinds) {
    LiveN[B->Kind]--;
    LiveB[B->Kind] -= B->Size;
  }
}

bool MemTable::inDeviceRange(uintptr_t P) {
  std::lock_guard<std::mutex> L(Mtx);
  return DevBase && P >= DevBase && P < DevEnd;
}

void MemTable::counts(size_t LN[MaxKinds], size_t LB[MaxKinds],
                      size_t PN[MaxKinds], size_t PB[MaxKinds]) {
  std::lock_guard<std::mutex> L(Mtx);
  for (int K = 0; K < MaxKinds; ++K)
    LN[K] = LiveN[K], LB[K] = LiveB[K], PN[K] = PeakN[K], PB[K] = PeakB[K];
}

std::vector<BlockP> MemTable::live() {
  std::lock_guard<std::mutex> L(Mtx);
  std::vector<BlockP> Out;
  for (auto &KV : Live)
    Out.push_back(KV.second);
  return Out;
}

MemTable &mem() {
  static MemTable *T = new MemTable();
  return *T;
}

} // namespace standin
