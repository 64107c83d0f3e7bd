//===-- KLEEnvironment.h - Reading the LIBOMPTARGET_KLE_* variables C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEENVIRONMENT_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEENVIRONMENT_H

#include "KLETransportPolicy.h"

#include <cstdint>
#include <optional>

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

/// A LIBOMPTARGET_KLE_TRANSPORT value (docs/ENVIRONMENT.md): nullopt if
/// invalid; nullptr or "" is Auto. Both functions are thread-safe.
std::optional<KLETransportModeTy> parseKLETransportMode(const char *Value);

struct KLEEnvIntegerTy {
  uint64_t Value;
  const char *Invalid = nullptr; ///< The text of an invalid value.
};

/// \p Name's decimal digits (no sign, blank or prefix) in [\p Min, \p Max];
/// \p Default if unset or empty, and also, with Invalid set, if invalid.
KLEEnvIntegerTy readKLEEnvInteger(const char *Name, uint64_t Default,
                                  uint64_t Min, uint64_t Max);

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEENVIRONMENT_H
