//===-- KLEEnvironment.cpp - Reading the LIBOMPTARGET_KLE_* variables -----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLEEnvironment.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <cstdlib>

using namespace llvm;
using namespace llvm::omp::target::plugin;

std::optional<KLETransportModeTy>
llvm::omp::target::plugin::parseKLETransportMode(const char *Value) {
  if (!Value || !*Value)
    return KLETransportModeTy::Auto;
  return StringSwitch<std::optional<KLETransportModeTy>>(Value)
      .Case("auto", KLETransportModeTy::Auto)
      .Case("zerocopy", KLETransportModeTy::ZeroCopy)
      .Case("staged", KLETransportModeTy::Staged)
      .Case("copy", KLETransportModeTy::Copy)
      .Case("resident", KLETransportModeTy::Resident)
      .Default(std::nullopt);
}

KLEEnvIntegerTy llvm::omp::target::plugin::readKLEEnvInteger(const char *Name,
                                                             uint64_t Default,
                                                             uint64_t Min,
                                                             uint64_t Max) {
  const char *Text = std::getenv(Name);
  if (!Text || !*Text)
    return {Default};
  uint64_t N = 0;
  // With an explicit radix, getAsInteger takes decimal digits only.
  if (StringRef(Text).getAsInteger(10, N) || N < Min || N > Max)
    return {Default, Text};
  return {N};
}
