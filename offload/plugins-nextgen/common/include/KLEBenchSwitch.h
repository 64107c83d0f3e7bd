//===-- KLEBenchSwitch.h - Benchmark-only transport switch -------- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A BENCHMARKING HOOK, not an API for applications: it lets bench/kle-bench
// change the KLE transport (and the CUDA plugin's wait) of the running
// process between launches, so that they are measured interleaved, at the
// same moments, in one process (kle-bench --interleave). libomptarget
// exports three C functions:
//
//   int __kle_bench_set_transport(const char *Name, char *Err, size_t Len)
//       Name: zerocopy, resident, staged, copy, or "" / nullptr (back to each
//       device's own transport). Returns 0 when every initialised device
//       uses it from its next launch; otherwise changes nothing, writes one
//       line into Err (Len bytes, NUL-terminated) and returns
//         1  unknown name
//         2  a launch is in flight: some device's pool still holds a slot
//            (a zerocopy, resident or staged launch that synchronize() or
//            queryAsync() has not yet seen complete)
//         3  a device that has slot transports lacks this one (its launches
//            would fall back to copy); a device with none (the host
//            plugin's) uses copy whatever is selected and is not asked
//       Only initialised devices are checked: launch once on each device
//       first. Copy launches keep no transport state, so one in flight
//       cannot be affected by a switch. Call it only while no other thread
//       launches.
//   uint64_t __kle_bench_kle_path_ns(void)
//       Host ns spent in the KLE path so far, summed over devices (the
//       transports' PathNs; 0 unless LIBOMPTARGET_KLE_STATS=1).
//   int __kle_bench_set_wait(long long BusyWaitUs)
//       BusyWaitUs >= 0: the CUDA plugin's waits poll for up to that many
//       microseconds before they block (0: they block at once, upstream's
//       wait), from the next wait on, in every thread; -1: back to
//       LIBOMPTARGET_CUDA_STREAM_BUSYWAIT or its default. Returns 0, or 1
//       and changes nothing for a value below -1. Thread-safe (a wait in
//       progress keeps the budget it started with).
//
// The slot pool is created for every transport (KLETransportTy::init), so it
// is valid whichever transport a switch selects.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H

#include "KLETransportPolicy.h"

#include <cstdint>

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

class KLETransportTy;

/// KLETransportTy::init: \p T may now be switched; \p ZeroCopy and \p Staged
/// say which slot transports its device supports (resident needs Staged's
/// pinned path). Thread-safe.
void registerKLEBenchTransport(KLETransportTy &T, bool ZeroCopy, bool Staged);

/// KLETransportTy::deinit and its destructor: forget \p T (idempotent).
void unregisterKLEBenchTransport(KLETransportTy &T);

/// The transport a launch wants: the one __kle_bench_set_transport selected,
/// else \p Default. One relaxed atomic load.
KLETransportKindTy benchKLETransport(KLETransportKindTy Default);

/// The busy-wait budget __kle_bench_set_wait selected (microseconds), or -1:
/// the plugin's own. One relaxed atomic load.
int64_t benchWaitBudgetUs();

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLEBENCHSWITCH_H
