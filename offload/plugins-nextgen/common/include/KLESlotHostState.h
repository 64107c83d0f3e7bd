//===-- KLESlotHostState.h - What a pool slot's host bytes hold --- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The layout of a KLE slot's pinned host bytes (KLESlotTy::HostPtr) as the
// transport uses them. Only KLE is ever read by the device or copied to it;
// the rest is host-private state that lives in the slot from one holder to
// the next. The pool creates slots zeroed, so every field starts at zero.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H

#include "KLESlotPool.h"
#include "Shared/Environment.h"
#include "Shared/KLEAbi.h"

#include <cstddef>
#include <cstdint>

namespace kle {

/// One slot's host bytes. Accessed only by the slot's holder (no lock).
struct KLESlotHostStateTy {
  /// The KLE: read in place by the device (zerocopy, in the fork's layout) or
  /// the source of a host-to-device copy (staged; resident's writes).
  KernelLaunchEnvironmentTy KLE;
  /// Never written, so zero for the slab's life: the source of zerocopy's
  /// stream-ordered zeroing of the slot's device counter block.
  uint8_t Zeros[48];
  /// The reduction buffer the slot keeps (nullptr: none) and its size in
  /// bytes (KLESlotBufferCacheTy).
  void *Buffer;
  uint64_t BufferBytes;
  /// Resident: the ReductionBuffer that the slot's device KLE holds (nullptr:
  /// never written, or the last write failed).
  void *ResidentBuffer;
  /// Zerocopy: non-zero once the zeroing of the counter block was queued.
  uint64_t CountersZeroed;
};

static_assert(sizeof(KLESlotHostStateTy) <= KLESlotPoolTy::SlotAlignment,
              "the host state must fit in the smallest slot the pool makes");
static_assert(offsetof(KLESlotHostStateTy, KLE) == 0 &&
                  sizeof(KernelLaunchEnvironmentTy) == KLESize,
              "the KLE must start the slot: dyn_ptr is the slot's address");
static_assert(sizeof(KLESlotHostStateTy::Zeros) >= KLECounterBytes,
              "the zero source must cover a counter block's counters");

/// The host state of \p Slot, a slot taken from a KLESlotPoolTy.
inline KLESlotHostStateTy &hostState(const KLESlotTy &Slot) {
  return *static_cast<KLESlotHostStateTy *>(Slot.HostPtr);
}

} // namespace kle

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLESLOTHOSTSTATE_H
