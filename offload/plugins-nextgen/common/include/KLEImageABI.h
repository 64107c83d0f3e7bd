//===-- KLEImageABI.h - Which kernels read the fork's KLE -------*- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <atomic>
#include <mutex>

namespace llvm::omp::target::plugin {
struct GenericDeviceTy;
class DeviceImageTy;

/// Does nvptx \p Image (ELF64, EM_CUDA) hold a cross-team reduction kernel
/// whose text, or a callee's (through call relocations), has no relocation
/// against KLE_ABI_VERSION_SYMBOL? False for any other image, true where the
/// parse cannot tell. Pure; thread-safe (docs/DESIGN.md, "The image ABI").
bool imageHasStockReductionKernel(llvm::MemoryBufferRef Image);

/// Per device: may zerocopy be used for the kernels of an image? Thread-safe;
/// forget() must not race with a launch of the same image.
class KLEImageABICacheTy {
public:
  /// Does \p Image export KLE_ABI_VERSION_SYMBOL equal to KLE_ABI_VERSION
  /// and have no stock reduction kernel? Asked once per image; lock-free
  /// while launches come from the image that answered last.
  bool speaksForkABI(llvm::omp::target::plugin::GenericDeviceTy &Device,
                     llvm::omp::target::plugin::DeviceImageTy &Image);

  /// \p Image is unloaded: one loaded later at its address is asked afresh.
  void forget(const llvm::omp::target::plugin::DeviceImageTy &Image);

private:
  using ImageTy = llvm::omp::target::plugin::DeviceImageTy;
  std::mutex Mutex;
  llvm::DenseMap<const ImageTy *, bool> Answers; ///< Guarded by Mutex.
  std::atomic<const ImageTy *> LastYes = nullptr; ///< Read without a lock.
  std::atomic<const ImageTy *> LastNo = nullptr;
};

} // namespace llvm::omp::target::plugin

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H
