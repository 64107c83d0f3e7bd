//===-- KLETransportPolicy.h - Which transport one KLE takes ------ C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The transport decisions of KLETransportTy (KLETransport.h) as pure
// functions of their inputs, so that every fallback rule can be unit-tested
// without a device (test/unit/KLETransportPolicyTest.cpp). No state, no
// allocation, no driver call; thread-safe.
//
// Two decisions:
//   1. per device, at init: the default transport from
//      LIBOMPTARGET_KLE_TRANSPORT and the plugin hooks supportsZeroCopyKLE()
//      and hasFastPinnedTransfer() (defaultKLETransport);
//   2. per launch of a kernel with a cross-team reduction: whether that
//      default must fall back to copy, and why (chooseKLETransport). The pool
//      may still fall back afterwards (PoolExhausted, AllocationFailed).
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORTPOLICY_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORTPOLICY_H

#include "KLESlotPool.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

/// How one launch's KLE reached the device.
enum class KLETransportKindTy : uint8_t { Copy = 0, Staged, ZeroCopy };
inline constexpr size_t KLENumTransportKinds = 3;

/// The plugin's record-replay state for a launch (RecordReplayTy is private
/// to PluginInterface.cpp, so the caller passes it in).
enum class KLERecordReplayTy : uint8_t { None = 0, Recording, Replaying };

/// What LIBOMPTARGET_KLE_TRANSPORT asked for.
enum class KLETransportModeTy : uint8_t { Auto = 0, ZeroCopy, Staged, Copy };

/// The transport a device uses when nothing forces a fallback. Auto is
/// zerocopy where the plugin supports it (\p ZeroCopySupported), else staged
/// where it has a fast pinned path (\p StagedSupported), else copy. A forced
/// mode is returned as asked even if unsupported: chooseKLETransport() then
/// falls back per launch with TransportDisabled, so the stats show it.
constexpr KLETransportKindTy defaultKLETransport(KLETransportModeTy Mode,
                                                 bool ZeroCopySupported,
                                                 bool StagedSupported) {
  switch (Mode) {
  case KLETransportModeTy::ZeroCopy:
    return KLETransportKindTy::ZeroCopy;
  case KLETransportModeTy::Staged:
    return KLETransportKindTy::Staged;
  case KLETransportModeTy::Copy:
    return KLETransportKindTy::Copy;
  case KLETransportModeTy::Auto:
    break;
  }
  return ZeroCopySupported ? KLETransportKindTy::ZeroCopy
         : StagedSupported ? KLETransportKindTy::Staged
                           : KLETransportKindTy::Copy;
}

/// One launch's transport before a pool slot is asked for.
struct KLETransportChoiceTy {
  KLETransportKindTy Kind = KLETransportKindTy::Copy;
  /// Set when \p Want had to fall back to copy; the caller counts it with
  /// KLESlotPoolTy::noteFallback().
  std::optional<kle::KLEFallbackReasonTy> Fallback;
};

/// Decide one launch's transport, for a kernel that has a KLE (a cross-team
/// reduction; replays and kernels without one never get here). In order:
///   - \p Want is copy: copy, no fallback;
///   - recording (\p RecordReplay): copy, RecordReplay — a host slot address
///     in the recorded arguments would dangle in the replay process;
///   - \p Want is not supported by the device: copy, TransportDisabled;
///   - zerocopy and the image's DeviceRTL does not speak the fork's KLE ABI:
///     copy, ImageABI (staged keeps upstream's layout and needs no ABI).
/// \p ImageSpeaksForkABI is called at most once, and only for zerocopy (it
/// may read a global from the image on its first call per image).
inline KLETransportChoiceTy
chooseKLETransport(KLETransportKindTy Want, KLERecordReplayTy RecordReplay,
                   bool ZeroCopySupported, bool StagedSupported,
                   llvm::function_ref<bool()> ImageSpeaksForkABI) {
  using Reason = kle::KLEFallbackReasonTy;
  auto FallBack = [](Reason Why) {
    return KLETransportChoiceTy{KLETransportKindTy::Copy, Why};
  };
  if (Want == KLETransportKindTy::Copy)
    return {};
  if (RecordReplay == KLERecordReplayTy::Recording)
    return FallBack(Reason::RecordReplay);
  if (Want == KLETransportKindTy::ZeroCopy) {
    if (!ZeroCopySupported)
      return FallBack(Reason::TransportDisabled);
    if (!ImageSpeaksForkABI())
      return FallBack(Reason::ImageABI);
  } else if (!StagedSupported) {
    return FallBack(Reason::TransportDisabled);
  }
  return {Want, std::nullopt};
}

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORTPOLICY_H
