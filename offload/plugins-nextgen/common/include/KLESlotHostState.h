//===-- KLESlotHostState.h - What a pool slot's host bytes hold --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H

#include "KLESlotPool.h"
#include "Shared/Environment.h"
#include "Shared/KLEAbi.h"

#include <cstddef>
#include <cstdint>

namespace llvm::omp::target::plugin {

/// A slot's pinned host bytes (KLESlotTy::HostPtr), zero when the slot is
/// new. Only KLE reaches the device; the rest is host state kept from one
/// holder to the next. Accessed only by the slot's holder (no lock).
struct KLESlotHostStateTy {
  /// Read in place by the device (zerocopy, the fork's layout) or copied to
  /// it (staged; resident's writes).
  KernelLaunchEnvironmentTy KLE;
  uint8_t Zeros[48]; ///< Never written: source of zerocopy's counter zeroing.
  void *Buffer;      ///< The kept reduction buffer (KLESlotBufferCacheTy).
  uint64_t BufferBytes;
  void *ResidentBuffer;    ///< Resident: what the device KLE holds, or null.
  uint64_t CountersZeroed; ///< Zerocopy: the zeroing was queued.
};

static_assert(sizeof(KLESlotHostStateTy) <= KLESlotPoolTy::SlotSize,
              "the host state must fit in a slot");
static_assert(offsetof(KLESlotHostStateTy, KLE) == 0 &&
                  sizeof(KernelLaunchEnvironmentTy) == KLESize,
              "the KLE must start the slot: dyn_ptr is the slot's address");
static_assert(sizeof(KLESlotHostStateTy::Zeros) >= KLECounterBytes,
              "the zero source must cover a counter block's counters");

/// The host state of \p Slot, a slot taken from a KLESlotPoolTy.
inline KLESlotHostStateTy &hostState(const KLESlotTy &Slot) {
  return *static_cast<KLESlotHostStateTy *>(Slot.HostPtr);
}

} // namespace llvm::omp::target::plugin

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H
