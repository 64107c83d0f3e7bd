//===-- kle-regions.h - What kle-bench and launch-cost share --------------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The target regions both programs time (Trip loop iterations): a teams
// reduction, so a KLE; the no-KLE baseline; nowait batches. And the host
// helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_REGIONS_H
#define KLE_BENCH_REGIONS_H

#include <omp.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace kle {

template <int Trip> [[gnu::noinline]] long reductionRegion(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < Trip; ++I)
    S += I;
  return S;
}

template <int Trip> [[gnu::noinline]] long baselineRegion(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    map(tofrom : S)
  for (int I = 0; I < Trip; ++I)
    if (I == 0)
      S = 1;
  return S;
}

/// \p N nowait regions of 8 teams, with or without the reduction, at most 64
/// in flight (disjoint variables), then one taskwait; their sum.
template <int Trip>
[[gnu::noinline]] long nowaitBatch(int Dev, bool Reduction, long N) {
  long Out[64] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (long K = 0; K < N; ++K) {
      long *P = &Out[K % 64];
      if (Reduction) {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    reduction(+ : P[0 : 1]) map(tofrom : P[0 : 1]) nowait
        for (int I = 0; I < Trip; ++I)
          P[0] += 1;
      } else {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    map(tofrom : P[0 : 1]) nowait
        for (int I = 0; I < Trip; ++I)
          if (I == 0)
            P[0] += 1;
      }
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

/// \p S as a decimal integer in [Min, Max]: digits only, else std::nullopt.
inline std::optional<long> parseCount(const char *S, long Min, long Max) {
  if (!S || !*S || std::strspn(S, "0123456789") != std::strlen(S) ||
      std::strlen(S) > 18)
    return std::nullopt;
  long N = std::strtol(S, nullptr, 10);
  return N < Min || N > Max ? std::nullopt : std::optional<long>(N);
}

/// Prints "<number> <uid>" per offload device, \p NoUid for a missing uid.
inline void printDevices(const char *NoUid) {
  for (int D = 0; D < omp_get_num_devices(); ++D) {
    const char *Uid = omp_get_uid_from_device(D);
    std::printf("%d %s\n", D, Uid ? Uid : NoUid);
  }
}

/// The process's CPU time (user + system, every thread; getrusage) in ns.
inline uint64_t processCpuNs() {
  rusage U;
  getrusage(RUSAGE_SELF, &U);
  return (uint64_t(U.ru_utime.tv_sec) + U.ru_stime.tv_sec) * 1000000000ull +
         (uint64_t(U.ru_utime.tv_usec) + U.ru_stime.tv_usec) * 1000ull;
}

/// The CUDA driver's ordinal of OpenMP device \p Dev (the CUDA devices before
/// it, by uid "CUDA-..."), or -1 if it is not one.
inline int cudaOrdinal(int Dev) {
  auto IsCuda = [](int D) {
    const char *U = omp_get_uid_from_device(D);
    return U && !std::strncmp(U, "CUDA", 4);
  };
  if (Dev < 0 || !IsCuda(Dev))
    return -1;
  int Ordinal = 0;
  for (int D = 0; D < Dev; ++D)
    Ordinal += IsCuda(D);
  return Ordinal;
}

} // namespace kle

#endif // KLE_BENCH_REGIONS_H
