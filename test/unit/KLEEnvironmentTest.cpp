//===- KLEEnvironmentTest.cpp - Unit tests for the environment parsing ----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLEEnvironment.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace llvm::omp::target::plugin;

namespace {

constexpr const char *Var = "KLE_UNIT_TEST_INTEGER";

/// readKLEEnvInteger(Var, 7, 1, 100) with Var set to \p Value (nullptr:
/// unset).
KLEEnvIntegerTy read(const char *Value) {
  if (Value)
    setenv(Var, Value, /*overwrite=*/1);
  else
    unsetenv(Var);
  KLEEnvIntegerTy Knob = readKLEEnvInteger(Var, 7, 1, 100);
  unsetenv(Var);
  return Knob;
}

TEST(KLEEnvironment, UnsetOrEmptyGivesTheDefaultSilently) {
  for (const char *Value : {static_cast<const char *>(nullptr), ""}) {
    KLEEnvIntegerTy Knob = read(Value);
    EXPECT_EQ(Knob.Value, 7u);
    EXPECT_EQ(Knob.Invalid, nullptr);
  }
}

TEST(KLEEnvironment, DecimalInRangeIsTaken) {
  EXPECT_EQ(read("1").Value, 1u);
  EXPECT_EQ(read("100").Value, 100u);
  EXPECT_EQ(read("042").Value, 42u);
  EXPECT_EQ(read("42").Invalid, nullptr);
}

TEST(KLEEnvironment, InvalidGivesTheDefaultAndTheText) {
  for (const char *Value : {"0", "101", "-3", "+3", " 5", "5 ", "0x10", "lots",
                            "18446744073709551616"}) {
    KLEEnvIntegerTy Knob = read(Value);
    EXPECT_EQ(Knob.Value, 7u) << Value;
    ASSERT_NE(Knob.Invalid, nullptr) << Value;
    EXPECT_STREQ(Knob.Invalid, Value);
  }
}

TEST(KLEEnvironment, TransportModes) {
  EXPECT_EQ(parseKLETransportMode(nullptr), KLETransportModeTy::Auto);
  EXPECT_EQ(parseKLETransportMode(""), KLETransportModeTy::Auto);
  EXPECT_EQ(parseKLETransportMode("auto"), KLETransportModeTy::Auto);
  EXPECT_EQ(parseKLETransportMode("zerocopy"), KLETransportModeTy::ZeroCopy);
  EXPECT_EQ(parseKLETransportMode("staged"), KLETransportModeTy::Staged);
  EXPECT_EQ(parseKLETransportMode("copy"), KLETransportModeTy::Copy);
  EXPECT_EQ(parseKLETransportMode("resident"), KLETransportModeTy::Resident);
  EXPECT_EQ(parseKLETransportMode("Copy"), std::nullopt);
  EXPECT_EQ(parseKLETransportMode("fastest"), std::nullopt);
}

} // namespace
