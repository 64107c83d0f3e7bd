//===- planted.cpp - Planted timing for benchmark-method tests ------------===//
//
// TEST ONLY.  See planted.h.
//
//===----------------------------------------------------------------------===//

#include "planted.h"

#include "core.h"
#include "worker.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include <time.h>

namespace standin {
namespace {

constexpr uint64_t MaxUs = 10000000;

/// LOW or HIGH microseconds, redrawn at random about every PERIOD_MS.
struct BimodalTy {
  bool On = false;
  uint64_t Low = 0, High = 0, PeriodMs = 0;
  std::mutex M; ///< guards the state below
  std::mt19937_64 Rng;
  bool InHigh = false;
  uint64_t NextFlipNs = 0;

  uint64_t drawUs() {
    std::lock_guard<std::mutex> L(M);
    uint64_t Now = nowNs(), PeriodNs = PeriodMs * 1000000;
    if (Now >= NextFlipNs) {
      InHigh = Rng() & 1;
      NextFlipNs = Now + PeriodNs / 2 + Rng() % (PeriodNs + 1);
    }
    return InHigh ? High : Low;
  }
};

struct PlantedTy {
  uint64_t CopyUs = 0;
  BimodalTy Noise, Wakeup;
  std::atomic<uint64_t> WakeCount{0}, WakeTargetNs{0}, WakeRealisedNs{0};
};

/// \p S as a decimal number in [0, MaxUs] (any number of digits), else false.
bool number(const std::string &S, uint64_t &Out) {
  return parseDecimal(S.c_str(), MaxUs, Out);
}

/// Reads KLE_STANDIN_<Name> as LOW:HIGH:PERIOD_MS into \p B (unset: off); a
/// malformed value ends the process with one line.
void readBimodal(const char *Name, BimodalTy &B, uint64_t Seed) {
  const char *E = env(Name);
  if (!E || !*E)
    return;
  std::string S(E);
  size_t A = S.find(':'), C = A == std::string::npos ? A : S.find(':', A + 1);
  if (C == std::string::npos || S.find(':', C + 1) != std::string::npos ||
      !number(S.substr(0, A), B.Low) ||
      !number(S.substr(A + 1, C - A - 1), B.High) ||
      !number(S.substr(C + 1), B.PeriodMs) || B.PeriodMs == 0 ||
      B.Low > B.High)
    badEnv(Name, E,
           "LOW:HIGH:PERIOD_MS, decimal numbers (microseconds, microseconds, "
           "milliseconds from 1), each at most 10000000, LOW <= HIGH, e.g. "
           "0:2000:50");
  B.On = true;
  B.Rng.seed(Seed);
}

PlantedTy &planted() {
  static PlantedTy *P = [] {
    auto *P = new PlantedTy();
    if (const char *E = env("COPY_US"); E && *E)
      if (!number(E, P->CopyUs))
        badEnv("COPY_US", E, "microseconds, a decimal number from 0 to 10000000");
    readBimodal("SYNC_NOISE", P->Noise, cfg().Seed * 31 + 7);
    readBimodal("WAKEUP_US", P->Wakeup, cfg().Seed * 37 + 11);
    return P;
  }();
  return *P;
}

/// Returns no earlier than \p DeadlineNs (steady clock): sleeps to 100 us
/// before it (absolute, so a late start does not push it), then yields.
/// A sleep overshoots by up to ~130 us on a loaded machine; the yield loop
/// does not.
void untilNs(uint64_t DeadlineNs) {
  constexpr uint64_t MarginNs = 100000;
  if (DeadlineNs > MarginNs && nowNs() < DeadlineNs - MarginNs) {
    uint64_t T = DeadlineNs - MarginNs;
    timespec Ts{time_t(T / 1000000000), long(T % 1000000000)};
    // steady_clock is CLOCK_MONOTONIC on Linux.
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &Ts, nullptr) ==
           EINTR) {
    }
  }
  while (nowNs() < DeadlineNs)
    std::this_thread::yield();
}

} // namespace

void plantedInit() { (void)planted(); }

void plantedForkLocks(std::vector<std::mutex *> &Locks) {
  Locks.push_back(&planted().Noise.M);
  Locks.push_back(&planted().Wakeup.M);
}

void plantedCopyHold() { sleepUs(planted().CopyUs); }

void plantedSyncNoise() {
  PlantedTy &P = planted();
  if (P.Noise.On)
    sleepUs(P.Noise.drawUs());
}

bool plantedWakeupOn() { return planted().Wakeup.On; }

uint64_t plantedWakeup(uint64_t DoneNs) {
  PlantedTy &P = planted();
  if (!P.Wakeup.On)
    return 0;
  uint64_t TargetNs = P.Wakeup.drawUs() * 1000;
  untilNs(DoneNs + TargetNs);
  uint64_t Realised = nowNs() - DoneNs;
  P.WakeCount++;
  P.WakeTargetNs += TargetNs;
  P.WakeRealisedNs += Realised;
  return Realised;
}

WakeupStats plantedWakeupStats() {
  PlantedTy &P = planted();
  WakeupStats S;
  S.Count = P.WakeCount.load();
  S.TargetNs = P.WakeTargetNs.load();
  S.RealisedNs = P.WakeRealisedNs.load();
  S.Low = P.Wakeup.Low;
  S.High = P.Wakeup.High;
  S.PeriodMs = P.Wakeup.PeriodMs;
  return S;
}

} // namespace standin
