//===-- kle-floor.h - The raw-driver floor of a target region -------------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The floor: the no-KLE region (kle-regions.h) through the CUDA driver API,
// no OpenMP runtime, so that a region's time can be reported as a multiple
// of the driver's for the same work. It uses the libcuda the CUDA plugin
// loaded, its own context (default scheduling), pinned host buffers and the
// kernel of kle-floor.cu embedded at build time.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_FLOOR_H
#define KLE_BENCH_FLOOR_H

#include <memory>
#include <string>
#include <vector>

namespace kle {

class FloorTy {
public:
  static constexpr int BlockThreads = 128;     // the CUDA plugin's default
  static constexpr int MaxInFlight = 64;       // launches in flight in a batch
  static constexpr int MaxLanes = MaxInFlight; // host threads, a stream each

  /// Opens the floor on CUDA device \p Ordinal, its kernel running
  /// \p LoopTrip iterations, with \p Lanes lanes (1 .. MaxLanes); nullptr
  /// and one line in \p Err on any failure.
  static std::unique_ptr<FloorTy> open(int Ordinal, int LoopTrip,
                                       std::string &Err, int Lanes = 1);

  /// One synchronous region on lane \p Lane: an 8-byte copy in, a kernel of
  /// \p Blocks blocks, the copy back, one wait. False and \p Err on error.
  bool region(int Blocks, std::string &Err, int Lane = 0);

  /// \p N regions on lane 0 without their waits (at most MaxInFlight in
  /// flight), then one wait.
  bool batch(int N, int Blocks, std::string &Err);

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
