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

/// The handshake: the plugin reads this from each loaded image and uses the
/// zero-copy KLE layout only if it is present and equal to KLE_ABI_VERSION.
/// Kept through LTO (used, retain), visible to the plugin (protected) and
/// weak, like __omp_rtl_device_environment: without -foffload-lto the
/// DeviceRTL bitcode is linked into every translation unit, so a program of
/// several files carries one definition per file and nvlink must merge them.
[[gnu::weak, gnu::used, gnu::retain, gnu::visibility("protected")]] extern const
    uint32_t __kle_offload_abi_version = KLE_ABI_VERSION;

namespace {
[[clang::loader_uninitialized]] static Local<void *> KLEReductionBuffer;
[[clang::loader_uninitialized]] static Local<uint32_t *> KLECounters;
} // namespace

void ompx::kle::initTeam(KernelEnvironmentTy &KernelEnvironment,
                   KernelLaunchEnvironmentTy &KernelLaunchEnvironment) {
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  if (!Config.ReductionDataSize || !Config.ReductionBufferLength) {
    KLEReductionBuffer = nullptr;
    KLECounters = nullptr;
    return;
  }
  ::kle::KLEViewTy View = ::kle::decodeKLE(&KernelLaunchEnvironment);
  KLEReductionBuffer = View.ReductionBuffer;
  KLECounters = View.Counters;
}

uint32_t &ompx::kle::reductionCnt() { return KLECounters[0]; }
uint32_t &ompx::kle::reductionIterCnt() { return KLECounters[1]; }
void *ompx::kle::reductionBuffer() { return KLEReductionBuffer; }
