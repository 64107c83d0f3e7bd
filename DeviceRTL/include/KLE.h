//===-- KLE.h - DeviceRTL view of the kernel launch environment --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The DeviceRTL reads the KLE (dyn_ptr) once per team and keeps the decoded
// fields in team-local memory. The initial thread issues the read in
// state::init; for a zero-copy KLE (flagged in dyn_ptr) on sm_80 and later it
// is an asynchronous copy (cp.async) that the same thread completes in
// waitTeam, where the teams reduction first needs the values; otherwise it
// completes in state::init, before the team's first barrier (docs/DESIGN.md "Where zero-copy's read happens").
// The teams reduction (Reduction.cpp) never touches the KLE itself: its
// atomics go to the counters, which are in device memory under every
// transport. Layout: Shared/KLEAbi.h.
//
//===----------------------------------------------------------------------===//

#ifndef OMPTARGET_DEVICERTL_KLE_H
#define OMPTARGET_DEVICERTL_KLE_H

#include "DeviceTypes.h"
#include "Shared/Environment.h"

namespace ompx {
namespace kle {

/// Called by the initial thread of each team from state::init, before the
/// team's first barrier, with the kernel's dyn_ptr. Reads the KLE only if the
/// kernel was compiled with a cross-team reduction (otherwise dyn_ptr is the
/// ~0 sentinel or null): asynchronously where the read may be so and dyn_ptr
/// flags a KLE in host memory (Shared/KLEAbi.h), otherwise at once. Returns
/// dyn_ptr without its flag, the KLE's address.
KernelLaunchEnvironmentTy &initTeam(KernelEnvironmentTy &KernelEnvironment,
                                    KernelLaunchEnvironmentTy &DynPtr);

/// Completes the read initTeam issued and decodes it; a no-op where initTeam
/// read synchronously. Only the thread that called initTeam (the teams
/// reduction's master: thread 0 in SPMD mode, the main thread in generic
/// mode) may call it, before its first use of the accessors below; other
/// threads see the values only after a team barrier that follows the call
/// (teamNeedsBarrier).
void waitTeam();

/// True if other threads of the team may read the accessors below only after
/// a team barrier that follows waitTeam (this launch's read was asynchronous:
/// a zero-copy KLE on sm_80 and later).
bool teamNeedsBarrier();

/// The teams-reduction counters: device memory, zero at launch start.
uint32_t &reductionCnt();
uint32_t &reductionIterCnt();

/// The teams-reduction buffer the host allocated for this launch.
void *reductionBuffer();

} // namespace kle
} // namespace ompx

#endif
