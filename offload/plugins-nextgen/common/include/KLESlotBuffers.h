//===-- KLESlotBuffers.h - Reduction buffers kept by pool slots --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The teams-reduction buffers that slots keep from one launch to the next, so
// that a slot transport allocates nothing at steady state; their reservation
// against a total bound, and their reclaim when a device allocation fails.
// The rules: docs/DESIGN.md, "Reduction buffers".
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTBUFFERS_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTBUFFERS_H

#include "KLESlotPool.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace llvm::omp::target::plugin {
struct GenericDeviceTy;
struct AsyncInfoWrapperTy;
} // namespace llvm::omp::target::plugin

namespace kle {

/// Per device. Thread-safe: get() and reclaim() may run concurrently;
/// freeAll() must not race with them.
class KLESlotBufferCacheTy {
public:
  explicit KLESlotBufferCacheTy(
      llvm::omp::target::plugin::GenericDeviceTy &Device)
      : Device(Device) {}

  /// Bound a kept buffer to \p SlotLimit bytes and all kept buffers together
  /// to \p TotalLimit bytes (0: keep none). Call before the first get().
  void setLimits(uint64_t SlotLimit, uint64_t TotalLimit) {
    this->SlotLimit = SlotLimit;
    this->TotalLimit = TotalLimit;
  }

  /// A reduction buffer of \p Bytes device bytes for one launch. With a
  /// \p Slot (held by the caller until the launch completes) and within both
  /// limits, the slot's kept buffer, allocated or grown here; otherwise a
  /// buffer freed after synchronization of \p AsyncInfoWrapper, as upstream.
  llvm::Expected<void *>
  get(const KLESlotTy *Slot, uint64_t Bytes,
      llvm::omp::target::plugin::AsyncInfoWrapperTy &AsyncInfoWrapper);

  /// A device allocation failed: free the buffers that the free slots of
  /// \p Pool keep (a slot in use keeps its own: a pending kernel may read
  /// it). Returns the bytes freed. A failed free is reported once and the
  /// buffer forgotten.
  uint64_t reclaim(KLESlotPoolTy &Pool);

  /// Free every kept buffer, or, with \p KeepMemory (launches outstanding),
  /// only forget them. Returns the failed frees, joined.
  llvm::Error freeAll(bool KeepMemory);

  /// Peak bytes of the kept buffers.
  uint64_t getPeakBytes() const;

private:
  llvm::omp::target::plugin::GenericDeviceTy &Device;
  uint64_t SlotLimit = 0;
  uint64_t TotalLimit = 0;
  /// Bytes reserved against TotalLimit (compare-exchange before a buffer is
  /// allocated), so the bound holds exactly without Mutex.
  std::atomic<uint64_t> Reserved = 0;

  /// Every kept buffer, for freeAll() (changes only when a buffer is created,
  /// grown or reclaimed).
  mutable std::mutex Mutex;
  llvm::SmallPtrSet<void *, 16> Buffers;
  uint64_t Bytes = 0;     ///< Their total size (Mutex).
  uint64_t PeakBytes = 0; ///< Its maximum (Mutex).
};

} // namespace kle

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTBUFFERS_H
