//===- planted.cpp - Planted timing for benchmark-method tests ------------===//
//
// TEST ONLY.  See planted.h.
//
//===----------------------------------------------------------------------===//

#include "planted.h"

#include "core.h"
#include "worker.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>

namespace standin {
namespace {

constexpr uint64_t MaxUs = 10000000;

struct PlantedTy {
  uint64_t CopyUs = 0;
  bool Noise = false;
  uint64_t Low = 0, High = 0, PeriodNs = 0;
  std::mutex M; ///< guards the noise state below
  std::mt19937_64 Rng;
  bool InHigh = false;
  uint64_t NextFlipNs = 0;
};

/// \p S as a decimal number in [0, MaxUs] (any number of digits), else false.
bool number(const std::string &S, uint64_t &Out) {
  return parseDecimal(S.c_str(), MaxUs, Out);
}

PlantedTy &planted() {
  static PlantedTy *P = [] {
    auto *P = new PlantedTy();
    if (const char *E = env("COPY_US"); E && *E)
      if (!number(E, P->CopyUs))
        badEnv("COPY_US", E, "microseconds, a decimal number from 0 to 10000000");
    if (const char *E = env("SYNC_NOISE"); E && *E) {
      const char *Want = "LOW:HIGH:PERIOD_MS, decimal numbers (microseconds, "
                         "microseconds, milliseconds from 1), each at most "
                         "10000000, LOW <= HIGH, e.g. 0:2000:50";
      std::string S(E);
      size_t A = S.find(':'),
             B = A == std::string::npos ? A : S.find(':', A + 1);
      uint64_t Period = 0;
      if (B == std::string::npos || S.find(':', B + 1) != std::string::npos ||
          !number(S.substr(0, A), P->Low) ||
          !number(S.substr(A + 1, B - A - 1), P->High) ||
          !number(S.substr(B + 1), Period) || Period == 0 ||
          P->Low > P->High)
        badEnv("SYNC_NOISE", E, Want);
      P->Noise = true;
      P->PeriodNs = Period * 1000000;
      P->Rng.seed(cfg().Seed * 31 + 7);
    }
    return P;
  }();
  return *P;
}

} // namespace

void plantedInit() { (void)planted(); }

void plantedCopyHold() { sleepUs(planted().CopyUs); }

void plantedSyncNoise() {
  PlantedTy &P = planted();
  if (!P.Noise)
    return;
  uint64_t Us;
  {
    std::lock_guard<std::mutex> L(P.M);
    uint64_t Now = nowNs();
    if (Now >= P.NextFlipNs) {
      P.InHigh = P.Rng() & 1;
      P.NextFlipNs = Now + P.PeriodNs / 2 + P.Rng() % (P.PeriodNs + 1);
    }
    Us = P.InHigh ? P.High : P.Low;
  }
  sleepUs(Us);
}

} // namespace standin
