//===-- KLEDeviceSlabAllocator.cpp - Slot pool slabs from a device --------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLEDeviceSlabAllocator.h"

#include "PluginInterface.h"

using namespace llvm;
using namespace llvm::omp::target::plugin;

Expected<void *> KLEDeviceSlabAllocatorTy::allocatePinned(size_t Size) {
  return Device.dataAlloc(Size, /*HostPtr=*/nullptr, TARGET_ALLOC_HOST);
}

Error KLEDeviceSlabAllocatorTy::freePinned(void *HostPtr) {
  if (KeepMemory)
    return Error::success();
  return Device.dataDelete(HostPtr, TARGET_ALLOC_HOST);
}

Expected<void *> KLEDeviceSlabAllocatorTy::allocateDevice(size_t Size) {
  auto PtrOrErr =
      Device.allocate(Size, /*HostPtr=*/nullptr, TARGET_ALLOC_DEVICE);
  if (!PtrOrErr)
    return PtrOrErr.takeError();
  if (!*PtrOrErr)
    return createStringError(inconvertibleErrorCode(),
                             "device allocation of %zu bytes failed", Size);
  return *PtrOrErr;
}

Error KLEDeviceSlabAllocatorTy::freeDevice(void *DevPtr) {
  if (KeepMemory)
    return Error::success();
  return Device.free(DevPtr, TARGET_ALLOC_DEVICE);
}
