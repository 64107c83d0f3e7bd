//===-- KLE.cpp - DeviceRTL view of the kernel launch environment -- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLE.h"
#include "Shared/KLEAbi.h"
#include "State.h"

using namespace ompx;

/// The handshake global, defined in KLEAbiVersion.cpp, which is built into its
/// own member of libompdevice.a and not into libomptarget-<target>.bc: only a
/// unit with kernels references it (kle::initTeam), so a unit without kernels
/// cannot make an image look fork-built (docs/DESIGN.md "Handshake").
[[gnu::visibility("protected")]] extern const uint32_t __kle_offload_abi_version;

namespace {
[[clang::loader_uninitialized]] static Local<void *> KLEReductionBuffer;
[[clang::loader_uninitialized]] static Local<uint32_t *> KLECounters;
} // namespace

void ompx::kle::initTeam(KernelEnvironmentTy &KernelEnvironment,
                   KernelLaunchEnvironmentTy &KernelLaunchEnvironment) {
  // Keep the reference to the handshake global in every kernel of this unit
  // (one register move per team; no memory access): it is what pulls the
  // global into the image at device link.
#if defined(__NVPTX__)
  asm volatile("" : : "l"(&__kle_offload_abi_version));
#else
  asm volatile("" : : "s"(&__kle_offload_abi_version));
#endif
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  if (!Config.ReductionDataSize || !Config.ReductionBufferLength) {
    KLEReductionBuffer = nullptr;
    KLECounters = nullptr;
    return;
  }
  // A real load, which the code generator keeps: the linked image then holds
  // a relocation against the handshake global in this kernel's own code,
  // which is how the plugin proves, kernel by kernel, that the DeviceRTL a
  // kernel was built with reads the zero-copy layout (KLEImageABI.cpp). A
  // stock kernel never has one, even where nvlink kept it in place of a fork
  // unit's copy of the same weak kernel. One 4-byte load per team, only in
  // kernels with a cross-team reduction.
  const uint32_t Version =
      *reinterpret_cast<const volatile uint32_t *>(&__kle_offload_abi_version);
  ::kle::KLEViewTy View = ::kle::decodeKLE(&KernelLaunchEnvironment);
  if (Version != KLE_ABI_VERSION) // not the layout this code reads: upstream's
    View = {KernelLaunchEnvironment.ReductionBuffer,
            &KernelLaunchEnvironment.ReductionCnt};
  KLEReductionBuffer = View.ReductionBuffer;
  KLECounters = View.Counters;
}

uint32_t &ompx::kle::reductionCnt() { return KLECounters[0]; }
uint32_t &ompx::kle::reductionIterCnt() { return KLECounters[1]; }
void *ompx::kle::reductionBuffer() { return KLEReductionBuffer; }
