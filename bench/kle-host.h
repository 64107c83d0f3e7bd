//===-- kle-host.h - Host helpers kle-bench and launch-cost share ---------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Errors, argument parsing, the device list and choice, process CPU time and
// CUDA ordinals.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_HOST_H
#define KLE_BENCH_HOST_H

#include <omp.h>
#include <sys/resource.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace kle {

/// The program's name in messages.
inline const char *Tool = "kle-bench";

/// One line "<Tool>: error: ..." on stderr, then exit status 2.
[[noreturn, gnu::format(printf, 1, 2)]] inline void fail(const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  std::fprintf(stderr, "%s: error: ", Tool);
  std::vfprintf(stderr, Fmt, Ap);
  std::fputc('\n', stderr);
  va_end(Ap);
  std::exit(2);
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

/// The device KLE_BENCH_DEVICE names (a number from 0 to
/// omp_get_num_devices() - 1, or "gpu": the first device that is not the host
/// plugin's), else the default device; else fail() naming \p ListHow (how the
/// tool lists devices).
inline int deviceFromEnv(const char *ListHow) {
  const char *Env = std::getenv("KLE_BENCH_DEVICE");
  if (!Env || !*Env)
    return omp_get_default_device();
  const int N = omp_get_num_devices();
  if (!std::strcmp(Env, "gpu")) {
    for (int D = 0; D < N; ++D)
      if (const char *Uid = omp_get_uid_from_device(D))
        if (std::strncmp(Uid, "x86_64", 6))
          return D;
    fail("KLE_BENCH_DEVICE=gpu: no offload device other than the host's (see "
         "%s)", ListHow);
  }
  if (std::optional<long> D = parseCount(Env, 0, N - 1))
    return static_cast<int>(*D);
  fail("KLE_BENCH_DEVICE=\"%s\" is not an offload device number (0 to %d; see "
       "%s)", Env, N - 1, ListHow);
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
