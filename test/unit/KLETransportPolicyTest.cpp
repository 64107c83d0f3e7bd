//===- KLETransportPolicyTest.cpp - Unit tests for the transport choice ---===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every rule of KLETransportPolicy.h, including the record-replay fallback,
// which no lit test reaches: with LIBOMPTARGET_RECORD=1 upstream 22.1.8 sizes
// the recording arena as all of the device's memory, and on the CUDA driver
// stand-in the image then fails to load (docs/DESIGN.md).
//
//===----------------------------------------------------------------------===//

#include "KLETransportPolicy.h"

#include "gtest/gtest.h"

using namespace llvm::omp::target::plugin;
using Kind = KLETransportKindTy;
using Mode = KLETransportModeTy;
using RR = KLERecordReplayTy;
using Reason = KLEFallbackReasonTy;

namespace {

// Resident first since the H200 figures (docs/DESIGN.md, "Choosing a
// transport"); zerocopy only where resident has no pinned path.
TEST(KLETransportPolicy, AutoPrefersResidentThenZeroCopyThenCopy) {
  EXPECT_EQ(defaultKLETransport(Mode::Auto, true, true), Kind::Resident);
  EXPECT_EQ(defaultKLETransport(Mode::Auto, true, false), Kind::ZeroCopy);
  EXPECT_EQ(defaultKLETransport(Mode::Auto, false, true), Kind::Resident);
  EXPECT_EQ(defaultKLETransport(Mode::Auto, false, false), Kind::Copy);
}

TEST(KLETransportPolicy, ForcedModeIsKeptEvenIfUnsupported) {
  for (bool ZC : {false, true})
    for (bool St : {false, true}) {
      EXPECT_EQ(defaultKLETransport(Mode::ZeroCopy, ZC, St), Kind::ZeroCopy);
      EXPECT_EQ(defaultKLETransport(Mode::Staged, ZC, St), Kind::Staged);
      EXPECT_EQ(defaultKLETransport(Mode::Copy, ZC, St), Kind::Copy);
      EXPECT_EQ(defaultKLETransport(Mode::Resident, ZC, St), Kind::Resident);
    }
}

/// Counts calls of the image-ABI query.
struct AbiProbeTy {
  bool Speaks = true;
  int Calls = 0;
  auto fn() {
    return [this] {
      ++Calls;
      return Speaks;
    };
  }
};

TEST(KLETransportPolicy, ZeroCopyWhenEverythingAllows) {
  AbiProbeTy Abi;
  KLETransportChoiceTy C =
      chooseKLETransport(Kind::ZeroCopy, RR::None, true, true, Abi.fn());
  EXPECT_EQ(C.Kind, Kind::ZeroCopy);
  EXPECT_FALSE(C.Fallback);
  EXPECT_EQ(Abi.Calls, 1);
}

TEST(KLETransportPolicy, CopyIsNeverAFallback) {
  for (RR State : {RR::None, RR::Recording}) {
    AbiProbeTy Abi;
    Abi.Speaks = false;
    KLETransportChoiceTy C =
        chooseKLETransport(Kind::Copy, State, false, false, Abi.fn());
    EXPECT_EQ(C.Kind, Kind::Copy);
    EXPECT_FALSE(C.Fallback);
    EXPECT_EQ(Abi.Calls, 0);
  }
}

TEST(KLETransportPolicy, RecordingFallsBackToCopyBeforeAnyOtherRule) {
  for (Kind Want : {Kind::ZeroCopy, Kind::Staged, Kind::Resident}) {
    AbiProbeTy Abi;
    Abi.Speaks = false; // would be ImageABI otherwise
    KLETransportChoiceTy C =
        chooseKLETransport(Want, RR::Recording, true, true, Abi.fn());
    EXPECT_EQ(C.Kind, Kind::Copy);
    ASSERT_TRUE(C.Fallback);
    EXPECT_EQ(*C.Fallback, Reason::RecordReplay);
    EXPECT_EQ(Abi.Calls, 0);
  }
}

TEST(KLETransportPolicy, UnsupportedTransportIsDisabled) {
  AbiProbeTy Abi;
  KLETransportChoiceTy C =
      chooseKLETransport(Kind::ZeroCopy, RR::None, false, true, Abi.fn());
  EXPECT_EQ(C.Kind, Kind::Copy);
  ASSERT_TRUE(C.Fallback);
  EXPECT_EQ(*C.Fallback, Reason::TransportDisabled);
  EXPECT_EQ(Abi.Calls, 0);

  for (Kind Want : {Kind::Staged, Kind::Resident}) {
    C = chooseKLETransport(Want, RR::None, true, false, Abi.fn());
    EXPECT_EQ(C.Kind, Kind::Copy);
    ASSERT_TRUE(C.Fallback);
    EXPECT_EQ(*C.Fallback, Reason::TransportDisabled);
    EXPECT_EQ(Abi.Calls, 0);
  }
}

TEST(KLETransportPolicy, StockDeviceRTLImageFallsBackOnlyUnderZeroCopy) {
  AbiProbeTy Abi;
  Abi.Speaks = false;
  KLETransportChoiceTy C =
      chooseKLETransport(Kind::ZeroCopy, RR::None, true, true, Abi.fn());
  EXPECT_EQ(C.Kind, Kind::Copy);
  ASSERT_TRUE(C.Fallback);
  EXPECT_EQ(*C.Fallback, Reason::ImageABI);
  EXPECT_EQ(Abi.Calls, 1);

  // staged and resident give upstream's layout: any DeviceRTL reads it.
  for (Kind Want : {Kind::Staged, Kind::Resident}) {
    C = chooseKLETransport(Want, RR::None, true, true, Abi.fn());
    EXPECT_EQ(C.Kind, Want);
    EXPECT_FALSE(C.Fallback);
    EXPECT_EQ(Abi.Calls, 1);
  }
}

TEST(KLETransportPolicy, ZeroCopyForAStockImageFallsBackToCopy) {
  // Zerocopy is reached only when forced or, under auto, on a device without
  // the pinned path resident needs; either way its ImageABI fallback is copy.
  AbiProbeTy Abi;
  Abi.Speaks = false;
  for (bool Staged : {true, false}) {
    KLETransportChoiceTy C =
        chooseKLETransport(Kind::ZeroCopy, RR::None, true, Staged, Abi.fn());
    EXPECT_EQ(C.Kind, Kind::Copy);
    ASSERT_TRUE(C.Fallback);
    EXPECT_EQ(*C.Fallback, Reason::ImageABI);
  }
}

} // namespace
