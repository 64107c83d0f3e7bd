//===-- KLEBenchSwitch.cpp - Benchmark-only transport switch ------ C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// See KLEBenchSwitch.h: a benchmarking hook, not an application API.
//
//===----------------------------------------------------------------------===//

#include "KLEBenchSwitch.h"
#include "KLETransport.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>

using namespace llvm;
using namespace llvm::omp::target::plugin;

namespace {
struct RegisteredTy {
  KLETransportTy *T;
  bool ZeroCopy, Staged;
};
/// Every initialised transport (Mutex). Leaked: devices deinit during
/// static destruction.
struct RegistryTy {
  std::mutex Mutex;
  SmallVector<RegisteredTy, 8> Transports;
};
RegistryTy &registry() {
  static auto *R = new RegistryTy();
  return *R;
}
/// The selected transport, applied to transports registered later too (none:
/// each device's own). Under RegistryTy::Mutex.
std::optional<KLETransportKindTy> Selected;

int fail(char *Err, size_t Len, int Code, const char *Fmt, const char *Arg) {
  if (Err && Len)
    snprintf(Err, Len, Fmt, Arg);
  return Code;
}
} // namespace

void llvm::omp::target::plugin::registerKLEBenchTransport(KLETransportTy &T,
                                                          bool ZeroCopy,
                                                          bool Staged) {
  std::lock_guard<std::mutex> Lock(registry().Mutex);
  registry().Transports.push_back({&T, ZeroCopy, Staged});
  if (Selected)
    T.overrideKind(Selected);
}

void llvm::omp::target::plugin::unregisterKLEBenchTransport(KLETransportTy &T) {
  std::lock_guard<std::mutex> Lock(registry().Mutex);
  auto &V = registry().Transports;
  V.erase(std::remove_if(V.begin(), V.end(),
                         [&](const RegisteredTy &R) { return R.T == &T; }),
          V.end());
}

extern "C" __attribute__((visibility("default"))) int
__kle_bench_set_transport(const char *Name, char *Err, size_t Len) {
  std::optional<KLETransportKindTy> Kind;
  if (Name && *Name) {
    std::optional<KLETransportModeTy> Mode = parseKLETransportMode(Name);
    if (!Mode || *Mode == KLETransportModeTy::Auto)
      return fail(Err, Len, 1,
                  "unknown KLE transport \"%s\" (valid: zerocopy, resident, "
                  "staged, copy)",
                  Name);
    Kind = defaultKLETransport(*Mode, false, false);
  }
  std::lock_guard<std::mutex> Lock(registry().Mutex);
  for (const RegisteredTy &R : registry().Transports) {
    if (R.T->getStats().Pool.SlotsInUse)
      return fail(Err, Len, 2,
                  "cannot switch the KLE transport to \"%s\": a launch is in "
                  "flight (a pool slot is held); synchronize first",
                  Name ? Name : "");
    // A device with no slot transport at all (the host plugin's) uses copy
    // whatever is selected; it does not veto the others.
    auto K = Kind.value_or(KLETransportKindTy::Copy);
    if (Kind && (R.ZeroCopy || R.Staged) &&
        ((K == KLETransportKindTy::ZeroCopy && !R.ZeroCopy) ||
         ((K == KLETransportKindTy::Staged ||
           K == KLETransportKindTy::Resident) &&
          !R.Staged)))
      return fail(Err, Len, 3,
                  "a device does not support the KLE transport \"%s\" (its "
                  "launches would fall back to copy)",
                  Name);
  }
  Selected = Kind;
  for (const RegisteredTy &R : registry().Transports)
    R.T->overrideKind(Kind);
  return 0;
}

extern "C" __attribute__((visibility("default"))) uint64_t
__kle_bench_kle_path_ns(void) {
  std::lock_guard<std::mutex> Lock(registry().Mutex);
  uint64_t Sum = 0;
  for (const RegisteredTy &R : registry().Transports)
    Sum += R.T->getStats().PathNs;
  return Sum;
}

namespace {
/// -1: none selected (the plugin's own budget); else microseconds.
std::atomic<int64_t> SelectedWaitUs{-1};
} // namespace

int64_t llvm::omp::target::plugin::benchWaitBudgetUs() {
  return SelectedWaitUs.load(std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("default"))) int
__kle_bench_set_wait(long long BusyWaitUs) {
  if (BusyWaitUs < -1)
    return 1;
  SelectedWaitUs.store(BusyWaitUs, std::memory_order_relaxed);
  return 0;
}
