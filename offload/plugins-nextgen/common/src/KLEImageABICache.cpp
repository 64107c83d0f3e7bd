//===-- KLEImageABICache.cpp - Per-image answer: the fork's KLE ABI? ------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLEImageABI.h"

#include "GlobalHandler.h"
#include "PluginInterface.h"
#include "Shared/KLEAbi.h"

using namespace llvm;
using namespace llvm::omp::target::plugin;

static bool askImage(GenericDeviceTy &Device, DeviceImageTy &Image) {
  GenericGlobalHandlerTy &Handler = Device.Plugin.getGlobalHandler();
  if (!Handler.isSymbolInImage(Device, Image, KLE_ABI_VERSION_SYMBOL))
    return false;
  if (imageHasStockReductionKernel(Image.getMemoryBuffer()))
    return false; // not provable for every kernel: the upstream layout
  uint32_t Version = 0;
  GlobalTy Global(KLE_ABI_VERSION_SYMBOL, sizeof(Version), &Version);
  if (Error Err = Handler.readGlobalFromImage(Device, Image, Global)) {
    consumeError(std::move(Err)); // unreadable: the upstream layout
    return false;
  }
  return Version == KLE_ABI_VERSION;
}

bool KLEImageABICacheTy::speaksForkABI(GenericDeviceTy &Device,
                                       DeviceImageTy &Image) {
  if (LastYes.load(std::memory_order_acquire) == &Image)
    return true;
  if (LastNo.load(std::memory_order_acquire) == &Image)
    return false;
  std::lock_guard<std::mutex> Lock(Mutex);
  auto [It, Inserted] = Answers.try_emplace(&Image, false);
  if (Inserted)
    It->second = askImage(Device, Image);
  // Published only once the answer is final.
  (It->second ? LastYes : LastNo).store(&Image, std::memory_order_release);
  return It->second;
}

void KLEImageABICacheTy::forget(const DeviceImageTy &Image) {
  std::lock_guard<std::mutex> Lock(Mutex);
  Answers.erase(&Image);
  for (auto *Last : {&LastYes, &LastNo}) {
    const DeviceImageTy *Expected = &Image;
    Last->compare_exchange_strong(Expected, nullptr, std::memory_order_acq_rel);
  }
}
