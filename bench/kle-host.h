//===-- kle-host.h - Host helpers kle-bench and launch-cost share ---------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Argument parsing, the device list, process CPU time and CUDA ordinals.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_HOST_H
#define KLE_BENCH_HOST_H

#include <omp.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace kle {

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

#endif // KLE_BENCH_HOST_H
