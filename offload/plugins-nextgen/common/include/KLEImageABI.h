//===-- KLEImageABI.h - Which kernels of an image read the fork's KLE C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The per-kernel proof that an image's reduction kernels were built with the
// fork's DeviceRTL, as a pure function over the image bytes (no device, no
// state; thread-safe). Why a proof per kernel: docs/DESIGN.md, "The image
// ABI".
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H

#include "llvm/Support/MemoryBufferRef.h"

namespace kle {

/// Does \p Image hold an offload kernel with a cross-team reduction (its
/// kernel environment has a non-zero ReductionDataSize and
/// ReductionBufferLength) whose text, or the text of a function it calls
/// (followed through call relocations, by section), has no relocation
/// against KLE_ABI_VERSION_SYMBOL? Only nvptx images (ELF64, EM_CUDA) are
/// examined: an AMDGPU image links the DeviceRTL once, so its one global
/// covers the whole image. Returns false for an image that is not such an
/// ELF file, true wherever the parse cannot establish the answer.
bool imageHasStockReductionKernel(llvm::MemoryBufferRef Image);

} // namespace kle

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEIMAGEABI_H
