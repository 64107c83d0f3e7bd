//===-- KLEImageABICache.h - Per-image answer: the fork's KLE ABI? C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABICACHE_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABICACHE_H

#include "llvm/ADT/DenseMap.h"

#include <atomic>
#include <mutex>

namespace llvm::omp::target::plugin {
struct GenericDeviceTy;
class DeviceImageTy;
} // namespace llvm::omp::target::plugin

namespace kle {

/// Per device: may zerocopy be used for the kernels of an image?
/// Thread-safe; forget() must not race with a launch of the same image.
class KLEImageABICacheTy {
public:
  /// Does \p Image's DeviceRTL export KLE_ABI_VERSION_SYMBOL equal to
  /// KLE_ABI_VERSION, and does every reduction kernel of it provably read
  /// the fork's layout (imageHasStockReductionKernel)? Asked once per image;
  /// lock-free while launches come from the image that answered last.
  bool speaksForkABI(llvm::omp::target::plugin::GenericDeviceTy &Device,
                     llvm::omp::target::plugin::DeviceImageTy &Image);

  /// \p Image is being unloaded: an image loaded later at the same address
  /// is asked afresh.
  void forget(const llvm::omp::target::plugin::DeviceImageTy &Image);

private:
  using ImageTy = llvm::omp::target::plugin::DeviceImageTy;
  std::mutex Mutex;
  llvm::DenseMap<const ImageTy *, bool> Answers; ///< Guarded by Mutex.
  /// The images that last answered yes and no, read without the lock.
  std::atomic<const ImageTy *> LastYes = nullptr;
  std::atomic<const ImageTy *> LastNo = nullptr;
};

} // namespace kle

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABICACHE_H
