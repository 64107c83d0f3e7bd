//===-- KLEBenchSwitch.h - Benchmark-only transport switch -------- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H

#include "KLETransportPolicy.h"

#include <cstddef>
#include <cstdint>

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

class KLETransportTy;

/// init/deinit: \p T follows the switch (\p ZeroCopy, \p Staged: its support).
void registerKLEBenchTransport(KLETransportTy &T, bool ZeroCopy, bool Staged);
void unregisterKLEBenchTransport(KLETransportTy &T);

/// The CUDA plugin's busy-wait budget __kle_bench_set_wait selected (µs), or
/// -1: the plugin's own. One relaxed atomic load.
int64_t benchWaitBudgetUs();

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

extern "C" {
/// For kle-bench (patch 0047): every device launches \p Name (zerocopy,
/// resident, staged, copy; null or "": its own) from now, or, changing
/// nothing, writes \p Err (\p Len bytes) and returns 1: bad name, 2: a slot
/// is held, 3: a device lacks it. Must not race a launch.
int __kle_bench_set_transport(const char *Name, char *Err, size_t Len);
/// Host ns in the KLE path, all devices (LIBOMPTARGET_KLE_STATS=1; else 0).
uint64_t __kle_bench_kle_path_ns(void);
/// The CUDA plugin's waits poll up to \p BusyWaitUs µs before they block (0:
/// block at once), from the next wait in every thread; -1: back to
/// LIBOMPTARGET_CUDA_STREAM_BUSYWAIT. Returns 0, or 1 (no change) below -1.
int __kle_bench_set_wait(long long BusyWaitUs);
}

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H
