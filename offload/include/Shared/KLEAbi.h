//===-- Shared/KLEAbi.h - kle-offload's kernel launch environment ABI C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one place that defines how the fork lays out the kernel launch
// environment (KLE) that a kernel receives through its implicit first argument
// (dyn_ptr). Shared by the host plugins (libomptarget) and the DeviceRTL, which
// both include it; plain integer arithmetic only, no host or device headers.
//
// Upstream LLVM 22 (offload/include/Shared/Environment.h), 16 bytes:
//
//   offset 0  uint32_t ReductionCnt       teams-reduction counters, zero at
//   offset 4  uint32_t ReductionIterCnt   launch start, device atomics on them,
//   offset 8  void    *ReductionBuffer    the last team resets them to zero
//
// kle-offload v1 keeps the size and the offsets and gives the first 8 bytes a
// second meaning, announced by bit 0 of ReductionBuffer (a device allocation,
// so that bit is otherwise always 0):
//
//   ReductionBuffer bit 0 == 0   upstream layout: the counters live in the KLE
//                                itself (copy and staged transports, images
//                                with a stock DeviceRTL, a stock libomptarget)
//   ReductionBuffer bit 0 == 1   the first 8 bytes are the device address of
//                                two uint32_t counters in *device* memory
//                                (zero-copy transport: the KLE is in pinned
//                                host memory and must never see an atomic)
//
// The device never writes ReductionBuffer, so reading the tag is race-free,
// and a stock libomptarget (which never sets the tag) works with the fork's
// DeviceRTL as well as the reverse.
//
// v2 adds a flag to the pointer itself: bit 0 of dyn_ptr (KLEs are 16-byte
// aligned) is set when the KLE lives in host memory (zero-copy) and clear
// when it is in device memory. The DeviceRTL clears it before any use; only
// a zero-copy KLE is worth an asynchronous read (and the team barrier that
// read costs), so the flag chooses the read without a memory access.
//
// The fork's DeviceRTL exports a device global named KLE_ABI_VERSION_SYMBOL
// holding KLE_ABI_VERSION. The plugin reads it from every loaded image and
// uses the zero-copy layout and the flag only for images whose value is
// KLE_ABI_VERSION (the handshake).
//
//===----------------------------------------------------------------------===//

#ifndef OMPTARGET_SHARED_KLE_ABI_H
#define OMPTARGET_SHARED_KLE_ABI_H

#include <stdint.h>

/// Version of the KLE layout above spoken by the fork's DeviceRTL.
#define KLE_ABI_VERSION 2u
/// Name of the device global (uint32_t) that holds KLE_ABI_VERSION.
#define KLE_ABI_VERSION_SYMBOL "__kle_offload_abi_version"

/// Size in bytes of the KLE in every layout (== sizeof(KernelLaunchEnvironmentTy)).
inline constexpr uint32_t KLESize = 16;
/// Byte offset of the counters word (v1: counters pointer) in the KLE.
inline constexpr uint32_t KLECountersOffset = 0;
/// Byte offset of ReductionBuffer (v1: tagged) in the KLE.
inline constexpr uint32_t KLEReductionBufferOffset = 8;
/// Tag bit in ReductionBuffer: set = counters live in device memory.
inline constexpr uint64_t KLEDeviceCountersTag = 1;
/// Flag bit in dyn_ptr: set = the KLE is in host memory (zero-copy).
inline constexpr uint64_t KLEHostDynPtrFlag = 1;

/// dyn_ptr for a zero-copy KLE at \p HostKLE (16-byte aligned).
inline void *flagHostKLE(void *HostKLE) {
  return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(HostKLE) |
                                  KLEHostDynPtrFlag);
}

/// Bytes of the device counter block a zero-copy KLE points to: two uint32_t
/// (ReductionCnt, ReductionIterCnt), zero at every launch start.
inline constexpr uint32_t KLECounterBytes = 8;

/// Encode a v1 KLE (zero-copy) into 16 bytes at \p Out (host side).
/// \p ReductionBuffer must be at least 2-byte aligned (device allocations are
/// 256-byte aligned); \p DeviceCounters must point to KLECounterBytes of
/// zeroed device memory that outlives the launch.
inline void encodeDeviceCountersKLE(void *Out, void *ReductionBuffer,
                                    void *DeviceCounters) {
  uint64_t *Words = static_cast<uint64_t *>(Out);
  Words[KLECountersOffset / 8] = reinterpret_cast<uint64_t>(DeviceCounters);
  Words[KLEReductionBufferOffset / 8] =
      reinterpret_cast<uint64_t>(ReductionBuffer) | KLEDeviceCountersTag;
}

/// Decoded view of a KLE, as the DeviceRTL uses it.
struct KLEViewTy {
  /// The teams-reduction buffer (untagged).
  void *ReductionBuffer;
  /// ReductionCnt; ReductionIterCnt is Counters + 1. Device memory in v1,
  /// inside the KLE itself in the upstream layout.
  uint32_t *Counters;
};

/// Decode a KLE from its two words, \p CountersWord (offset 0) and
/// \p BufferWord (offset 8), as read from the KLE at device address \p KLE
/// (used only for the upstream layout's counters, which live in the KLE).
/// Reads no memory.
inline KLEViewTy decodeKLEWords(uint64_t CountersWord, uint64_t BufferWord,
                                void *KLE) {
  if (BufferWord & KLEDeviceCountersTag)
    return {reinterpret_cast<void *>(BufferWord & ~KLEDeviceCountersTag),
            reinterpret_cast<uint32_t *>(CountersWord)};
  return {reinterpret_cast<void *>(BufferWord),
          reinterpret_cast<uint32_t *>(static_cast<char *>(KLE) +
                                       KLECountersOffset)};
}

/// Decode the 16 bytes of a KLE whose device address is \p KLE: one 16-byte
/// read (two 8-byte loads) of the KLE, nothing else.
inline KLEViewTy decodeKLE(void *KLE) {
  uint64_t *Words = static_cast<uint64_t *>(KLE);
  return decodeKLEWords(Words[KLECountersOffset / 8],
                        Words[KLEReductionBufferOffset / 8], KLE);
}

#endif // OMPTARGET_SHARED_KLE_ABI_H
