//===-- launch-cost.cpp - Host work per target region, no framework -------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A plain program for counting the host's work per target region, the same
// binary run against the fork's or stock LLVM's libraries (bench/
// launch-cost.py: instructions under callgrind, latency from interleaved
// pairs of processes; test/host/launch_path_calls.test):
//
//   launch-cost KIND N [SAMPLES]
//   launch-cost devices     (prints "<device number> <uid>" per device)
//
// KIND: reduction (one 1-team target region with a cross-team reduction and a
// tofrom map, completed before the next: the launch that carries a KLE),
// baseline (the same region without the reduction: no KLE), nowait (a
// pipelined batch: N nowait regions, 8 teams, with a reduction, at most 64 in
// flight, then a taskwait). One region runs first, outside the count, so
// device and image initialisation are start-up. With SAMPLES, the N regions
// run SAMPLES times and each batch's steady-clock time per region (ns) is
// printed, one line "ns_per_region <value>" each. Always prints a checksum
// line. Device: KLE_BENCH_DEVICE, else the default device. Exit status 2 on
// bad arguments.
//
//===----------------------------------------------------------------------===//

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int LoopTrip = 64;

[[gnu::noinline]] long reduction(int Dev) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(1)     \
    reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < LoopTrip; ++I)
    S += I;
  return S;
}

[[gnu::noinline]] long baseline(int Dev) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(1)     \
    map(tofrom : S)
  for (int I = 0; I < LoopTrip; ++I)
    if (I == 0)
      S = 1;
  return S;
}

[[gnu::noinline]] long nowaitBatch(int Dev, long N) {
  long Out[64] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (long K = 0; K < N; ++K) {
      long *P = &Out[K % 64];
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    reduction(+ : P[0 : 1]) map(tofrom : P[0 : 1]) nowait
      for (int I = 0; I < LoopTrip; ++I)
        P[0] += 1;
      if (K % 64 == 63) {
#pragma omp taskwait
      }
    }
#pragma omp taskwait
  }
  long S = 0;
  for (long V : Out)
    S += V;
  return S;
}

bool parseCount(const char *S, long &Out) {
  if (!S || !*S || std::strspn(S, "0123456789") != std::strlen(S) ||
      std::strlen(S) > 9)
    return false;
  Out = std::strtol(S, nullptr, 10);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && !std::strcmp(argv[1], "devices")) {
    for (int D = 0; D < omp_get_num_devices(); ++D) {
      const char *Uid = omp_get_uid_from_device(D);
      std::printf("%d %s\n", D, Uid ? Uid : "(none)");
    }
    return 0;
  }
  long N = 0, Samples = 0;
  const char *Kind = argc > 1 ? argv[1] : "";
  bool Known = !std::strcmp(Kind, "reduction") ||
               !std::strcmp(Kind, "baseline") || !std::strcmp(Kind, "nowait");
  if (argc < 3 || argc > 4 || !Known || !parseCount(argv[2], N) ||
      (argc == 4 && (!parseCount(argv[3], Samples) || Samples == 0))) {
    std::fprintf(stderr, "usage: launch-cost reduction|baseline|nowait "
                         "REGIONS [SAMPLES] | launch-cost devices\n");
    return 2;
  }
  int Dev = omp_get_default_device();
  if (const char *D = std::getenv("KLE_BENCH_DEVICE")) {
    long V;
    if (!parseCount(D, V) || V > omp_get_num_devices()) {
      std::fprintf(stderr, "launch-cost: error: KLE_BENCH_DEVICE=%s is not a "
                           "device number from 0 to %d\n",
                   D, omp_get_num_devices());
      return 2;
    }
    Dev = static_cast<int>(V);
  }
  auto Run = [&](long Count) {
    long S = 0;
    if (Kind[0] == 'n')
      return nowaitBatch(Dev, Count);
    for (long I = 0; I < Count; ++I)
      S += Kind[0] == 'r' ? reduction(Dev) : baseline(Dev);
    return S;
  };
  long Sum = Run(1); // start-up: device and image initialisation
  for (long R = 0; R < (Samples ? Samples : 1); ++R) {
    auto T0 = std::chrono::steady_clock::now();
    Sum += Run(N);
    auto T1 = std::chrono::steady_clock::now();
    if (Samples && N)
      std::printf("ns_per_region %.1f\n",
                  std::chrono::duration<double, std::nano>(T1 - T0).count() /
                      static_cast<double>(N));
  }
  std::printf("%s regions done, checksum %ld\n", Kind, Sum);
  return 0;
}
