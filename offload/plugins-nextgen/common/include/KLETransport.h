//===-- KLETransport.h - How the KLE reaches the device ----------- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H

#include "KLEDeviceSlabAllocator.h"
#include "KLEEnvironment.h"
#include "KLEImageABI.h"
#include "KLESlotBuffers.h"
#include "KLESlotPool.h"
#include "KLETransportPolicy.h"
#include "Shared/Environment.h"

#include "llvm/Support/Error.h"

#include <array>
#include <atomic>
#include <memory>
#include <optional>

struct __tgt_async_info;

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

struct GenericDeviceTy;
struct GenericKernelTy;
class DeviceImageTy;
struct AsyncInfoWrapperTy;

/// Stable lower-case name ("copy", "staged", "zerocopy", "resident").
llvm::StringRef toString(KLETransportKindTy Kind);

/// One note on stderr when LIBOMPTARGET_KLE_STATS=1 or
/// LIBOMPTARGET_KLE_TRANSPORT was set and no device's deinit counted a launch
/// with a KLE (no transport ran, no launch stats line was printed). Called
/// by libomptarget's deinitRuntime after every plugin's deinit; not
/// concurrently with a device's deinit.
void noteUnusedKLEKnobs();

/// What prepare() decided for one launch; passed back to finish().
struct KLELaunchTy {
  KLETransportKindTy Kind = KLETransportKindTy::Copy;
  /// The slot this launch reads; invalid for copy and without a KLE.
  KLESlotTy Slot;
  /// A write into the slot was queued: it waits for the queue regardless.
  bool WroteSlot = false;
  bool HasKLE = false; ///< The kernel has a cross-team reduction.
};

/// Per-device transport counters, for the deinit report and tests.
struct KLETransportStatsTy {
  /// Launches with a KLE, indexed by the transport actually used.
  std::array<uint64_t, KLENumTransportKinds> Launches = {};
  KLESlotPoolStatsTy Pool;
  /// Host ns (steady clock) in prepare(), finish() and
  /// recycleCompletedQueue() for launches with a KLE; 0 unless
  /// LIBOMPTARGET_KLE_STATS=1.
  uint64_t PathNs = 0;
  uint64_t SlotBufferBytesPeak = 0; ///< Of the buffers slots keep.
  uint64_t ResidentWrites = 0;      ///< Of a slot's device KLE.
};

/// How the KLE (dyn_ptr) of a kernel with a cross-team reduction reaches one
/// device (docs/DESIGN.md, docs/ARCHITECTURE.md); owned by GenericDeviceTy.
/// Thread-safety: prepare(), finish(), recycleCompletedQueue(),
/// reclaimSlotBuffers() and getStats() may run concurrently; init() and
/// deinit() must not race with them.
class KLETransportTy final {
public:
  explicit KLETransportTy(GenericDeviceTy &Device);
  ~KLETransportTy();

  /// Read the environment (an invalid value warns once and gives the
  /// default), ask the plugin hooks, and create the empty slot pool. Call
  /// after the device's own initialization.
  llvm::Error init();

  /// Print the report (LIBOMPTARGET_INFO data-transfer bit, or
  /// LIBOMPTARGET_KLE_STATS=1) and free the pool's memory unless launches are
  /// outstanding. A failed free warns; the device's teardown goes on. Call
  /// before the device's memory is torn down.
  void deinit();

  /// The dyn_ptr for one launch of \p Kernel: nullptr or the ~0 sentinel as
  /// upstream for kernels without a KLE, else the device address of the KLE,
  /// its reduction buffer allocated. \p Launch records what finish() must do.
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepare(const GenericKernelTy &Kernel,
          const KernelEnvironmentTy &KernelEnvironment, uint32_t Version,
          KLERecordReplayTy RecordReplay, AsyncInfoWrapperTy &AsyncInfoWrapper,
          KLELaunchTy &Launch);

  /// After launchImpl: attach \p Launch's slot to the async info if anything
  /// that reads it was enqueued (\p Enqueued, or a write into the slot), else
  /// recycle it at once.
  void finish(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
              bool Enqueued);

  /// Recycle the slots attached to \p AsyncInfo, whose queue completed; call
  /// with AsyncInfo.Mutex held. Returns the errors for invalid ids, joined.
  llvm::Error recycleCompletedQueue(__tgt_async_info &AsyncInfo);

  /// A device allocation failed (GenericDeviceTy::dataAlloc): free the
  /// reduction buffers that free slots keep. Returns the bytes freed (0:
  /// nothing, or after deinit()); the caller retries only if non-zero.
  uint64_t reclaimSlotBuffers();

  /// \p Image is unloaded; no launch of it may run concurrently.
  void forgetImage(const DeviceImageTy &Image) { ImageABI.forget(Image); }

  KLETransportStatsTy getStats() const;

  /// The benchmark switch (KLEBenchSwitch.h): launches want \p Want, or the
  /// device's own transport if empty. Must not race with a launch.
  void overrideKind(std::optional<KLETransportKindTy> Want) {
    Kind.store(Want.value_or(DefaultKind), std::memory_order_relaxed);
  }

private:
  /// Attach \p Slot to the async info for recycleCompletedQueue(), as
  /// AsyncInfoWrapperTy::freeAllocationAfterSynchronization does.
  void recycleAfterSynchronization(AsyncInfoWrapperTy &AsyncInfoWrapper,
                                   const KLESlotTy &Slot);

  // The per-kind paths (KLETransportPaths.cpp). Each sets Launch.Kind and
  // counts the launch; on an error, a transfer may already be queued.

  /// Copy (no \p Staging slot) or staged: a per-launch device KLE written by
  /// one host-to-device copy.
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareCopy(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
              void *ReductionBuffer, const KLESlotTy *Staging);
  /// Zerocopy: the KLE in the pinned slot, counters in its device block
  /// (zeroed on the launch's queue at the slot's first use).
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareZeroCopy(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
                  void *ReductionBuffer);
  /// Resident: the KLE in the slot's device block, rewritten on the launch's
  /// queue only when its bytes change.
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareResident(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
                  void *ReductionBuffer);

  void count(KLETransportKindTy Kind) {
    Launches[static_cast<size_t>(Kind)].fetch_add(1, std::memory_order_relaxed);
  }

  GenericDeviceTy &Device;
  KLETransportKindTy DefaultKind = KLETransportKindTy::Copy;
  /// What launches want: DefaultKind unless the benchmark switch set it.
  std::atomic<KLETransportKindTy> Kind = KLETransportKindTy::Copy;
  bool ZeroCopySupported = false;
  bool StagedSupported = false;
  /// LIBOMPTARGET_KLE_STATS=1: time the KLE path into PathNs.
  bool TimePath = false;
  KLEDeviceSlabAllocatorTy SlabAllocator; ///< Outlives Pool.
  std::unique_ptr<KLESlotPoolTy> Pool;
  KLESlotBufferCacheTy SlotBuffers;
  KLEImageABICacheTy ImageABI;
  std::array<std::atomic<uint64_t>, KLENumTransportKinds> Launches = {};
  std::atomic<uint64_t> ResidentWrites = 0;
  std::atomic<uint64_t> PathNs = 0;
  std::atomic<bool> Deinitialized = false;
};

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H
