//===-- KLEDeviceSlabAllocator.h - Slot pool slabs from a device -- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEDEVICESLABALLOCATOR_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEDEVICESLABALLOCATOR_H

#include "KLESlotPool.h"

namespace llvm::omp::target::plugin {
struct GenericDeviceTy;

/// The slot pool's allocator over one plugin device: pinned slabs from
/// dataAlloc(TARGET_ALLOC_HOST), counter blocks from GenericDeviceTy::allocate
/// (not the memory manager: they live as long as their slab; not zeroed, so
/// pool growth makes no transfer). Called under the pool's growth mutex only.
class KLEDeviceSlabAllocatorTy final : public KLESlabAllocatorTy {
public:
  explicit KLEDeviceSlabAllocatorTy(
      llvm::omp::target::plugin::GenericDeviceTy &Device)
      : Device(Device) {}

  /// From now on the frees do nothing: launches are outstanding at deinit and
  /// a pending kernel may still read a slab (the device's teardown reclaims
  /// the memory).
  void keepMemory() { KeepMemory = true; }

  llvm::Expected<void *> allocatePinned(size_t Size) override;
  llvm::Error freePinned(void *HostPtr) override;
  llvm::Expected<void *> allocateDevice(size_t Size) override;
  llvm::Error freeDevice(void *DevPtr) override;

private:
  llvm::omp::target::plugin::GenericDeviceTy &Device;
  bool KeepMemory = false;
};

} // namespace llvm::omp::target::plugin

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEDEVICESLABALLOCATOR_H
