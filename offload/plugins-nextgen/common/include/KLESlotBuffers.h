//===-- KLESlotBuffers.h - Reduction buffers kept by pool slots --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
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

/// The teams-reduction buffers slots keep between launches, within a bound
/// (docs/DESIGN.md, "Reduction buffers"). Per device. Thread-safe: get() and
/// reclaim() may run concurrently; freeAll() must not race with them.
class KLESlotBufferCacheTy {
public:
  explicit KLESlotBufferCacheTy(
      llvm::omp::target::plugin::GenericDeviceTy &Device)
      : Device(Device) {}

  /// Bytes of one kept buffer, and of all (0: keep none). Before any get().
  void setLimits(uint64_t SlotLimit, uint64_t TotalLimit) {
    this->SlotLimit = SlotLimit;
    this->TotalLimit = TotalLimit;
  }

  /// \p Bytes of device memory for one launch: \p Slot's kept buffer (grown
  /// if needed) within the limits, else one freed after synchronization.
  llvm::Expected<void *>
  get(const KLESlotTy *Slot, uint64_t Bytes,
      llvm::omp::target::plugin::AsyncInfoWrapperTy &AsyncInfoWrapper);

  /// Free the buffers \p Pool's free slots keep; returns the bytes freed. A
  /// failed free warns once and forgets the buffer.
  uint64_t reclaim(KLESlotPoolTy &Pool);

  /// Free (\p KeepMemory: forget) every kept buffer; the failed frees, joined.
  llvm::Error freeAll(bool KeepMemory);

  uint64_t getPeakBytes() const;

private:
  llvm::omp::target::plugin::GenericDeviceTy &Device;
  uint64_t SlotLimit = 0;
  uint64_t TotalLimit = 0;
  /// Reserved against TotalLimit before allocating: exact without Mutex.
  std::atomic<uint64_t> Reserved = 0;

  mutable std::mutex Mutex;
  llvm::SmallPtrSet<void *, 16> Buffers; ///< Every kept buffer (Mutex).
  uint64_t Bytes = 0;                    ///< Their total size (Mutex).
  uint64_t PeakBytes = 0;                ///< Its maximum (Mutex).
};

} // namespace llvm::omp::target::plugin

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTBUFFERS_H
