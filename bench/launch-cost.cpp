//===-- launch-cost.cpp - Host work per target region, no framework -------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Host work per target region without a benchmark framework, run against
// the fork's or stock LLVM's libraries (`klebench.py launch-cost`):
//
//   launch-cost KIND N [SAMPLES [floor]] | floor N [SAMPLES] | devices
//
// KIND: reduction or baseline (a 1-team region with and without a KLE; :T
// for T teams, @P from P host threads) or nowait (N nowait regions, then a
// taskwait). After one start-up region, runs N regions SAMPLES times, each
// printing ns_per_region and cpu_ns_per_region; "floor" also runs the same
// work through the driver (kle-floor.h), alternating which goes first, as
// floor_* lines. Exit status 2 on bad arguments.
//
//===----------------------------------------------------------------------===//

#include "kle-floor.h"
#include "kle-host.h"
#include "kle-regions.h"

#include <chrono>
#include <tuple>

constexpr int LoopTrip = 64;
constexpr long MaxCount = 999999999;

int main(int argc, char **argv) {
  kle::Tool = "launch-cost";
  if (argc == 2 && !std::strcmp(argv[1], "devices")) {
    kle::printDevices("(none)");
    return 0;
  }
  // KIND[:TEAMS][@THREADS], the suffixes for reduction and baseline only.
  std::string Kind = argc > 1 ? argv[1] : "";
  long Teams = 1, Threads = 1;
  bool Known = true;
  for (auto [Sep, Value, Min, Max] :
       {std::tuple{'@', &Threads, 2L, long(kle::FloorTy::MaxLanes)},
        std::tuple{':', &Teams, 1L, 65536L}})
    if (size_t At = Kind.find(Sep); At != std::string::npos) {
      std::optional<long> V = kle::parseCount(&Kind[At + 1], Min, Max);
      Known &= V.has_value();
      *Value = V.value_or(*Value);
      Kind.resize(At);
      Known &= !Kind.rfind("reduction", 0) || !Kind.rfind("baseline", 0);
    }
  const bool FloorOnly = Kind == "floor";
  Known &= Kind == "reduction" || Kind == "baseline" || Kind == "nowait" ||
           FloorOnly;
  const bool WithFloor =
      FloorOnly || (argc == 5 && !std::strcmp(argv[4], "floor"));
  // REGIONS from 0, SAMPLES (0: not given, no figures printed) from 1.
  const std::optional<long> NArg =
      kle::parseCount(argc > 2 ? argv[2] : nullptr, 0, MaxCount);
  const std::optional<long> SamplesArg =
      argc > 3 ? kle::parseCount(argv[3], 1, MaxCount) : std::optional(0L);
  if (argc < 3 || argc > (FloorOnly ? 4 : 5) || !Known || !NArg ||
      !SamplesArg || (argc == 5 && !WithFloor)) {
    std::fprintf(stderr, "usage: launch-cost reduction[:TEAMS][@THREADS]|"
                         "baseline[:TEAMS][@THREADS]|nowait REGIONS [SAMPLES "
                         "[floor]] | launch-cost floor REGIONS [SAMPLES] | "
                         "launch-cost devices\n");
    return 2;
  }
  const long N = *NArg, Samples = *SamplesArg;
  const int Dev = kle::deviceFromEnv("launch-cost devices");
  // One region of the kind (the baseline's for the floor alone).
  auto *const Region = Kind[0] == 'r' ? kle::reductionRegion<LoopTrip>
                                      : kle::baselineRegion<LoopTrip>;
  auto Run = [&](long Count) {
    long S = 0;
    if (Kind[0] == 'n')
      return kle::nowaitBatch<LoopTrip>(Dev, true, Count);
    if (Threads == 1) {
      for (long I = 0; I < Count; ++I)
        S += Region(Dev, int(Teams));
      return S;
    }
#pragma omp parallel num_threads(Threads) reduction(+ : S)
    for (long I = 0; I < Count; ++I)
      S += Region(Dev, int(Teams));
    return S;
  };
  long Sum = Run(1); // start-up: device and image initialisation
  std::unique_ptr<kle::FloorTy> Floor;
  std::string Err;
  auto FloorFailed = [&] { kle::fail("the floor: %s", Err.c_str()); };
  if (WithFloor) {
    int Ordinal = kle::cudaOrdinal(Dev);
    if (Ordinal < 0)
      Err = "device " + std::to_string(Dev) + " is not a CUDA device";
    else
      Floor = kle::FloorTy::open(Ordinal, LoopTrip, Err, int(Threads));
    if (!Floor || !(Kind[0] == 'n' ? Floor->batch(1, 8, Err)
                                   : Floor->region(int(Teams), Err)))
      FloorFailed();
  }
  auto RunFloor = [&](long Count) {
    bool Ok = true;
    if (Kind[0] == 'n')
      Ok = !Count || Floor->batch(static_cast<int>(Count), 8, Err);
    else if (Threads == 1)
      for (long I = 0; Ok && I < Count; ++I)
        Ok = Floor->region(int(Teams), Err);
    else {
#pragma omp parallel num_threads(Threads)
      {
        std::string E;
        bool Mine = true;
        for (long I = 0; Mine && I < Count; ++I)
          Mine = Floor->region(int(Teams), E, omp_get_thread_num());
#pragma omp critical
        if (!Mine) {
          Ok = false;
          Err = E;
        }
      }
    }
    if (!Ok)
      FloorFailed();
  };
  // Times Fn(N): prints "<Prefix>ns_per_region" and "<Prefix>cpu_ns_per_region".
  auto Timed = [&](const char *Prefix, auto Fn) {
    const uint64_t Cpu0 = kle::processCpuNs();
    auto T0 = std::chrono::steady_clock::now();
    Fn(N);
    auto T1 = std::chrono::steady_clock::now();
    const uint64_t Cpu1 = kle::processCpuNs();
    if (Samples && N) {
      std::printf("%sns_per_region %.1f\n", Prefix,
                  std::chrono::duration<double, std::nano>(T1 - T0).count() /
                      static_cast<double>(N));
      std::printf("%scpu_ns_per_region %.1f\n", Prefix,
                  double(Cpu1 - Cpu0) / static_cast<double>(N));
    }
  };
  auto Regions = [&](long Count) { Sum += Run(Count); };
  for (long R = 0; R < (Samples ? Samples : 1); ++R) {
    const bool FloorFirst = FloorOnly || (Floor && R % 2); // alternating
    if (FloorFirst)
      Timed("floor_", RunFloor);
    if (!FloorOnly)
      Timed("", Regions);
    if (Floor && !FloorFirst)
      Timed("floor_", RunFloor);
  }
  std::printf("%s regions done, checksum %ld\n", Kind.c_str(), Sum);
  return 0;
}
