//===-- kle-floor.h - The raw-driver floor of a target region -------------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The floor: the work of kle-bench's no-KLE target region done through the
// CUDA driver API directly, with no OpenMP runtime, so that a region's time
// can be reported as a multiple of what the driver needs for the same work.
// Shared by kle-bench (--interleave ... --floor) and launch-cost.
//
// It uses the libcuda the CUDA plugin loaded ("libcuda.so", else
// "libcuda.so.1"; on the CUDA driver stand-in that is the stand-in), on its
// own context created with the driver's default scheduling (cuCtxCreate
// flags 0, CU_CTX_SCHED_AUTO; the plugin's primary context is
// BLOCKING_SYNC), one stream, and the kernel of kle-floor.cu built for sm_90
// and embedded at build time (one stream per host thread). Host buffers are pinned (cuMemAllocHost), so
// both copies are asynchronous and a region's only wait is one
// cuStreamSynchronize: the fastest the driver offers.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_FLOOR_H
#define KLE_BENCH_FLOOR_H

#include <sys/resource.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kle {

/// The process's CPU time (user + system, every thread; getrusage) in ns.
inline uint64_t processCpuNs() {
  rusage U;
  getrusage(RUSAGE_SELF, &U);
  return (uint64_t(U.ru_utime.tv_sec) + U.ru_stime.tv_sec) * 1000000000ull +
         (uint64_t(U.ru_utime.tv_usec) + U.ru_stime.tv_usec) * 1000ull;
}

/// The CUDA driver's ordinal of OpenMP device \p Dev: how many of the
/// devices before it are CUDA devices (uid "CUDA-..."; the CUDA plugin
/// numbers them in driver order); -1 if \p Dev itself is not one. \p Uid
/// maps an OpenMP device number to its uid (omp_get_uid_from_device).
template <typename UidFnTy> int cudaOrdinal(int Dev, UidFnTy Uid) {
  auto IsCuda = [&](int D) {
    const char *U = Uid(D);
    return U && std::string(U).rfind("CUDA", 0) == 0;
  };
  if (Dev < 0 || !IsCuda(Dev))
    return -1;
  int Ordinal = 0;
  for (int D = 0; D < Dev; ++D)
    Ordinal += IsCuda(D);
  return Ordinal;
}

class FloorTy {
public:
  /// Threads per block: the CUDA plugin's default for these kernels.
  static constexpr int BlockThreads = 128;
  /// Launches in flight at most in a batch (kle-bench's pipelined batch).
  static constexpr int MaxInFlight = 64;
  /// Host threads that may run regions at once, one lane (stream, slot) each.
  static constexpr int MaxLanes = MaxInFlight;

  /// Opens the floor on CUDA device \p Ordinal (the driver's numbering),
  /// its kernel running \p LoopTrip iterations (the region's loop), with
  /// \p Lanes lanes (1 .. MaxLanes). Returns nullptr and sets \p Err to one
  /// line on any failure (no CUDA driver, built without nvcc, the driver
  /// refused the context or image).
  static std::unique_ptr<FloorTy> open(int Ordinal, int LoopTrip,
                                       std::string &Err, int Lanes = 1);

  /// One synchronous region: an 8-byte host-to-device copy, one kernel of
  /// \p Blocks blocks, the 8-byte copy back, one cuStreamSynchronize, on
  /// lane \p Lane (0 .. Lanes - 1: its own stream and slot, so host
  /// threads on distinct lanes may call this at once). Returns false and
  /// sets \p Err to one line on a driver error.
  bool region(int Blocks, std::string &Err, int Lane = 0);

  /// A pipelined batch on lane 0: \p N regions as above (without their
  /// waits, on distinct 8-byte slots, at most MaxInFlight in flight), then
  /// one wait. Not to be called while another thread uses lane 0.
  bool batch(int N, int Blocks, std::string &Err);

  /// Frees the buffers, the stream, the module and the context.
  ~FloorTy();

  struct ApiTy; // driver entry points (kle-floor.cpp)

private:
  FloorTy() = default;
  bool enqueue(void *Stream, int Slot, int Blocks, std::string &Err);
  bool check(int Res, const char *What, std::string &Err);

  const ApiTy *Api = nullptr;
  int LoopTrip = 0;
  void *Ctx = nullptr, *Module = nullptr, *Fn = nullptr;
  std::vector<void *> Streams;
  unsigned long long DevBuf = 0; // CUdeviceptr
  long *HostBuf = nullptr;
};

} // namespace kle

#endif // KLE_BENCH_FLOOR_H
