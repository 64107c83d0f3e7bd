//===-- KLE.h - DeviceRTL view of the kernel launch environment --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The DeviceRTL reads the KLE (dyn_ptr) once per team, in state::init, and
// keeps the decoded fields in team-local memory. The teams reduction
// (Reduction.cpp) then never touches the KLE again: its atomics go to the
// counters, which are in device memory under every transport. Layout:
// Shared/KLEAbi.h.
//
//===----------------------------------------------------------------------===//

#ifndef OMPTARGET_DEVICERTL_KLE_H
#define OMPTARGET_DEVICERTL_KLE_H

#include "DeviceTypes.h"
#include "Shared/Environment.h"

namespace ompx {
namespace kle {

/// Called by the initial thread of each team from state::init, before the
/// team's first barrier. Reads the KLE only if the kernel was compiled with a
/// cross-team reduction (otherwise dyn_ptr is the ~0 sentinel or null).
void initTeam(KernelEnvironmentTy &KernelEnvironment,
              KernelLaunchEnvironmentTy &KernelLaunchEnvironment);

/// The teams-reduction counters: device memory, zero at launch start.
uint32_t &reductionCnt();
uint32_t &reductionIterCnt();

/// The teams-reduction buffer the host allocated for this launch.
void *reductionBuffer();

} // namespace kle
} // namespace ompx

#endif
