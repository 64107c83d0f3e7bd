//===-- KLEEnvironment.h - Reading the LIBOMPTARGET_KLE_* variables C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Parsing of the transport's environment variables (docs/ENVIRONMENT.md).
// Driver-free and stateless; thread-safe.
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

/// Parse a LIBOMPTARGET_KLE_TRANSPORT value (case-sensitive: auto, zerocopy,
/// staged, copy, resident). Returns std::nullopt for anything else; an unset
/// variable (nullptr) or an empty string is Auto.
std::optional<KLETransportModeTy> parseKLETransportMode(const char *Value);

/// An integer variable as read by readKLEEnvInteger().
struct KLEEnvIntegerTy {
  /// The value, or the default if the variable is unset, empty or invalid.
  uint64_t Value;
  /// The variable's text if it was set but invalid (for the warning), else
  /// nullptr.
  const char *Invalid = nullptr;
};

/// Read the integer environment variable \p Name: decimal digits only (no
/// sign, blank or radix prefix) giving a value in [\p Min, \p Max]. Unset or
/// empty gives \p Default; anything else gives \p Default and sets Invalid.
KLEEnvIntegerTy readKLEEnvInteger(const char *Name, uint64_t Default,
                                  uint64_t Min, uint64_t Max);

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEENVIRONMENT_H
