//===-- KLETransportPolicy.h - Which transport one KLE takes ------ C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// KLETransportTy's decisions as pure functions (no state, no driver call;
// thread-safe): a device's default transport, and each launch's.
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

/// How one launch's KLE reached the device. The values index the per-kind
/// launch counters and the stats report, in this order.
enum class KLETransportKindTy : uint8_t { Copy = 0, Staged, ZeroCopy, Resident };
inline constexpr size_t KLENumTransportKinds = 4;

/// The plugin's record-replay state for a launch (RecordReplayTy is private
/// to PluginInterface.cpp, so the caller passes it in).
enum class KLERecordReplayTy : uint8_t { None = 0, Recording, Replaying };

/// What LIBOMPTARGET_KLE_TRANSPORT asked for.
enum class KLETransportModeTy : uint8_t {
  Auto = 0,
  ZeroCopy,
  Staged,
  Copy,
  Resident
};

/// The transport a device uses when nothing forces a fallback. Auto is
/// resident where the plugin has a pinned path for the pool's slabs and their
/// one-time writes (\p StagedSupported), else zerocopy where the plugin
/// supports it (\p ZeroCopySupported), else copy (docs/DESIGN.md, "Choosing a
/// transport"). A forced mode is returned as asked even if unsupported:
/// chooseKLETransport() then falls back per launch with TransportDisabled.
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
  case KLETransportModeTy::Resident:
    return KLETransportKindTy::Resident;
  case KLETransportModeTy::Auto:
    break;
  }
  return StagedSupported     ? KLETransportKindTy::Resident
         : ZeroCopySupported ? KLETransportKindTy::ZeroCopy
                             : KLETransportKindTy::Copy;
}

/// One launch's transport before a pool slot is asked for.
struct KLETransportChoiceTy {
  KLETransportKindTy Kind = KLETransportKindTy::Copy;
  /// Set when \p Want had to give way (always to copy); the caller counts it
  /// with KLESlotPoolTy::noteFallback().
  std::optional<KLEFallbackReasonTy> Fallback;
};

/// Decide one launch's transport, for a kernel that has a KLE (a cross-team
/// reduction; replays and kernels without one never get here). In order:
///   - \p Want is copy: copy, no fallback;
///   - recording (\p RecordReplay): copy, RecordReplay — a host slot or
///     slab address in the recorded arguments would dangle in the replay
///     process;
///   - \p Want is not supported by the device: copy, TransportDisabled
///     (staged and resident need the pinned path, \p StagedSupported);
///   - zerocopy and the image's DeviceRTL does not provably read the fork's
///     layout in every unit: copy, ImageABI. (Zerocopy is reached only when
///     forced, or under auto on a device without resident's pinned path.)
///     Staged and resident keep upstream's layout and need no ABI.
/// \p ImageSpeaksForkABI is called at most once, and only for zerocopy (it
/// may read a global from the image on its first call per image).
inline KLETransportChoiceTy
chooseKLETransport(KLETransportKindTy Want, KLERecordReplayTy RecordReplay,
                   bool ZeroCopySupported, bool StagedSupported,
                   llvm::function_ref<bool()> ImageSpeaksForkABI) {
  using Reason = KLEFallbackReasonTy;
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
