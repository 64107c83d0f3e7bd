//===-- KLEAbiVersion.cpp - The KLE ABI handshake global ---------- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The handshake: the plugin reads this 4-byte global from each loaded image
// and uses the zero-copy KLE layout only if it equals KLE_ABI_VERSION
// (Shared/KLEAbi.h; docs/DESIGN.md "Handshake").
//
// This file is built into its own member of libompdevice.a and is NOT part of
// libomptarget-<target>.bc. The DeviceRTL only references the global, from
// kle::initTeam, which every kernel of a fork-built unit reaches. So:
//   - nvptx without -foffload-lto: clang links libomptarget-nvptx.bc into each
//     translation unit, keeping only what the unit uses. A unit with kernels
//     then carries an undefined reference, which the device link resolves
//     from this member of the fork's libompdevice.a; a unit without kernels
//     (only `declare target` functions) carries nothing. The global is in
//     the image only if some fork-built unit has kernels; the plugin's
//     per-kernel relocation proof (KLEImageABI.cpp) does the rest.
//   - LTO (amdgcn always, nvptx with -foffload-lto): libompdevice.a is linked
//     once at device link; the reference pulls this member in.
// Weak, like upstream's __omp_rtl_device_environment (a device link may see
// more than one definition), protected (visible to the plugin), and kept
// through LTO (used, retain).
//
//===----------------------------------------------------------------------===//

#include "DeviceTypes.h"
#include "Shared/KLEAbi.h"

[[gnu::weak, gnu::used, gnu::retain, gnu::visibility("protected")]] extern const
    uint32_t __kle_offload_abi_version = KLE_ABI_VERSION;
