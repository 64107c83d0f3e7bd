//===-- KLETransport.h - How the KLE reaches the device ----------- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The generic-layer policy for passing the kernel launch environment (KLE,
// the kernel's implicit first argument dyn_ptr) of kernels with a cross-team
// reduction. One KLETransportTy per device, owned by GenericDeviceTy. Plugins
// take part only through two narrow hooks on GenericDeviceTy:
// supportsZeroCopyKLE() and hasFastPinnedTransfer().
//
// Transports (LIBOMPTARGET_KLE_TRANSPORT=auto|zerocopy|staged|copy|resident):
//   copy      upstream LLVM 22: dataAlloc a 16-byte device KLE, dataSubmit it
//             from __tgt_async_info::KernelLaunchEnvironment (pageable).
//   staged    as copy, but the source is a pinned pool slot, so the DMA takes
//             the pinned path (llvm/llvm-project PR #213767).
//   zerocopy  the KLE is written into a pinned, device-visible pool slot whose
//             device address is dyn_ptr; no per-launch device allocation or
//             host-to-device transfer for the KLE. The reduction counters live
//             in the slot's device counter block (Shared/KLEAbi.h).
//   resident  the whole 16-byte KLE, in upstream's layout, lives in the slot's
//             device block (its counter block); dyn_ptr is its device address.
//             It is written (one stream-ordered host-to-device copy from the
//             pinned slot, before the kernel) only when its bytes would change:
//             the slot's first use, or a new reduction buffer. At steady state
//             a launch makes no allocation and no transfer, and no team reads
//             host memory; any DeviceRTL, stock or the fork's, reads it.
// auto picks resident where the plugin has a pinned path, else zerocopy where
// the device supports it and the image provably reads the fork's layout in
// every unit, else copy (KLETransportPolicy.h; resident first since the H200
// figures in docs/RESULTS.md). Per launch, every slot
// transport falls back to copy (counted, never an error) for record-replay, an
// exhausted pool or a failed pinned allocation; zerocopy also gives way for an
// image that does not speak the fork's KLE ABI, to copy.
//
// Slot lifetime: taken in prepare(), handed to the async info by finish()
// only after the launch was enqueued (released at once if it was not), and
// returned to the pool by releaseCompleted() when synchronize() or
// queryAsync() observes that the queue completed. deinit() frees every slab,
// unless work is still outstanding (then it frees nothing such work may read).
//
// Thread-safety: prepare(), finish() and releaseCompleted() may be called
// concurrently from any number of threads; init() and deinit() may not race
// with them (the device is being set up or torn down).
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H
#define OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H

#include "KLESlotPool.h"
#include "KLETransportPolicy.h"
#include "Shared/Environment.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

struct __tgt_async_info;

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

struct GenericDeviceTy;
struct GenericKernelTy;
struct DeviceImageTy;
struct AsyncInfoWrapperTy;

/// Parse a LIBOMPTARGET_KLE_TRANSPORT value (case-sensitive: auto, zerocopy,
/// staged, copy, resident). Returns std::nullopt for anything else; an unset variable
/// (nullptr) or an empty string is Auto.
std::optional<KLETransportModeTy> parseKLETransportMode(const char *Value);

/// Stable lower-case name ("copy", "staged", "zerocopy", "resident").
llvm::StringRef toString(KLETransportKindTy Kind);

/// What prepare() decided for one launch; passed back to finish().
struct KLELaunchTy {
  KLETransportKindTy Kind = KLETransportKindTy::Copy;
  /// The pool slot read by this launch (zerocopy: the KLE itself; staged: the
  /// DMA source; resident: its device block is the KLE). Invalid for copy and
  /// for kernels without a KLE.
  kle::KLESlotTy Slot;
  /// This launch queued a write into the slot's device block (resident: its
  /// KLE; zerocopy: the zeroing of its counters at the slot's first use), so
  /// the slot waits for the queue even if the kernel was not enqueued.
  bool WroteSlot = false;
  /// The kernel has a KLE (a cross-team reduction): finish() is timed only
  /// then, as prepare() is.
  bool HasKLE = false;
};

/// Per-device transport counters, for the deinit report and tests.
struct KLETransportStatsTy {
  /// Launches with a KLE, by transport actually used.
  std::array<uint64_t, KLENumTransportKinds> Launches = {};
  /// Pool statistics (fallbacks by reason, slabs, peak slots in use, ...).
  kle::KLESlotPoolStatsTy Pool;
  /// Host time spent in prepare(), finish() and releaseCompleted() for
  /// launches with a KLE, in nanoseconds (steady clock), summed; measured
  /// only with LIBOMPTARGET_KLE_STATS=1 (else 0). It includes the driver
  /// calls and allocations those make (copy/staged: the device KLE and its
  /// DMA; copy: the reduction buffer) but not the frees of per-launch
  /// allocations at synchronization.
  uint64_t PathNs = 0;
  /// Peak device bytes of the reduction buffers that slots keep.
  uint64_t SlotBufferBytesPeak = 0;
  /// Resident: writes of a slot's device KLE (first use of the slot, or a
  /// new reduction buffer); launches minus this made no KLE transfer.
  uint64_t ResidentWrites = 0;
};

class KLETransportTy final : public kle::KLESlabAllocatorTy {
public:
  explicit KLETransportTy(GenericDeviceTy &Device);
  ~KLETransportTy() override;

  /// Read LIBOMPTARGET_KLE_TRANSPORT and LIBOMPTARGET_KLE_MAX_SLOTS (an
  /// invalid value gives one warning naming the variable and the valid
  /// values, then the default), ask the plugin hooks, and create the (still
  /// empty) slot pool. Call after the device's own initialization.
  llvm::Error init();

  /// Print the report (LIBOMPTARGET_INFO data-transfer bit, or
  /// LIBOMPTARGET_KLE_STATS=1) and free every slot-kept reduction buffer and
  /// every slab, unless launches are still outstanding: then nothing a
  /// pending kernel may read is freed (the device's own teardown reclaims
  /// it). Call before the device's memory is torn down. A failed free is
  /// reported on stderr ("omptarget warning: KLE: device N: ...") after the
  /// remaining frees were tried; it is not returned, so it cannot stop the
  /// device's teardown (GenericDeviceTy::deinit returns at its first error,
  /// and libomptarget drops that error outside debug builds: the module,
  /// the memory manager and the context would leak without a word).
  void deinit();

  /// Produce the dyn_ptr for one launch of \p Kernel: nullptr or the ~0
  /// sentinel exactly as upstream for kernels without a KLE; otherwise the
  /// device address of the KLE, with the reduction buffer allocated and
  /// registered on \p AsyncInfoWrapper for release after synchronization.
  /// \p Launch records what finish() must do. Under record-replay the copy
  /// transport is used (recording) or no KLE at all (replaying, as upstream).
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepare(const GenericKernelTy &Kernel,
          const KernelEnvironmentTy &KernelEnvironment, uint32_t Version,
          KLERecordReplayTy RecordReplay, AsyncInfoWrapperTy &AsyncInfoWrapper,
          KLELaunchTy &Launch);

  /// After launchImpl: hand \p Launch's slot to the async info if the launch
  /// was enqueued (\p Enqueued), else return it to the pool at once.
  void finish(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
              bool Enqueued);

  /// Return slots whose readers completed: synchronize() and queryAsync()
  /// call it with the ids they took from __tgt_async_info::KLESlotIds once
  /// the queue drained.
  llvm::Error releaseCompleted(llvm::ArrayRef<uint64_t> SlotIds);

  /// A device allocation failed (GenericDeviceTy::dataAlloc): give back the
  /// reduction buffers kept by slots that are free now (slots in use keep
  /// theirs: a pending kernel may read it), so that a program that fits in
  /// device memory under copy also fits under the slot transports. Each slot
  /// visited is held exclusively (KLESlotPoolTy::forEachFreeSlot); a
  /// resident slot whose device KLE named the buffer is rewritten at its
  /// next launch. Returns the bytes given back (0: nothing to give, or after
  /// deinit()); the caller retries its allocation only if it is non-zero. A
  /// failed free is reported once on stderr and the buffer is forgotten.
  /// Thread-safe; takes SlotBuffersMutex briefly per buffer.
  uint64_t reclaimSlotBuffers();

  /// \p Image is being unloaded (GenericDeviceTy::unloadBinary): drop what
  /// is cached about it, so an image loaded later at the same address is
  /// asked afresh. No launch of \p Image may run concurrently.
  void forgetImage(const DeviceImageTy &Image);

  /// The transport a launch uses when nothing forces a fallback.
  KLETransportKindTy getDefaultKind() const { return DefaultKind; }

  KLETransportStatsTy getStats() const;

  // kle::KLESlabAllocatorTy over the device's own allocator.
  llvm::Expected<void *> allocatePinned(size_t Size) override;
  llvm::Error freePinned(void *HostPtr) override;
  /// Counter blocks, not zeroed here: zerocopy zeroes a slot's block on its
  /// first launch's queue (zeroSlotCounters), resident's first KLE write
  /// covers it, so pool growth makes no synchronous transfer.
  llvm::Expected<void *> allocateDevice(size_t Size) override;
  llvm::Error freeDevice(void *DevPtr) override;

private:
  /// Does \p Image's DeviceRTL export KLE_ABI_VERSION_SYMBOL ==
  /// KLE_ABI_VERSION? Cached per image.
  bool imageSpeaksForkABI(DeviceImageTy &Image);

  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareImpl(const GenericKernelTy &Kernel,
              const KernelEnvironmentTy &KernelEnvironment, uint32_t Version,
              KLERecordReplayTy RecordReplay,
              AsyncInfoWrapperTy &AsyncInfoWrapper, KLELaunchTy &Launch);
  void finishImpl(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
                  bool Enqueued);
  llvm::Error releaseCompletedImpl(llvm::ArrayRef<uint64_t> SlotIds);

  /// The teams-reduction buffer of one launch (\p Bytes of device memory).
  /// With a slot (zerocopy, staged) and at most SlotBufferLimit bytes it is
  /// the slot's own buffer, cached in the slot's host-private bytes and
  /// reused by every later holder, grown when a kernel needs more: the slot
  /// is released only after the launch that used it completed, so no
  /// launch-path allocation is needed at steady state. Otherwise (copy, or a
  /// larger buffer) it is allocated per launch and freed after
  /// synchronization, as upstream. Thread-safe: the slot is the caller's.
  llvm::Expected<void *> reductionBuffer(const kle::KLESlotTy *Slot,
                                         uint64_t Bytes,
                                         AsyncInfoWrapperTy &AsyncInfoWrapper);

  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareCopy(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
              void *ReductionBuffer, const kle::KLESlotTy *Staging);

  /// Zerocopy, at a slot's first use: queue a copy of KLECounterBytes zeros
  /// (from the slot's pinned bytes the host never writes) into its counter
  /// block on the launch's queue, ahead of the kernel; recorded in the slot's
  /// host-private bytes once queued. Sets Launch.WroteSlot.
  llvm::Error zeroSlotCounters(KLELaunchTy &Launch,
                               AsyncInfoWrapperTy &AsyncInfoWrapper);

  /// Resident: dyn_ptr is the slot's device block, which holds the upstream
  /// KLE {0, 0, ReductionBuffer}; queue its rewrite on the launch's queue
  /// only if the slot last wrote another buffer there.
  llvm::Expected<KernelLaunchEnvironmentTy *>
  prepareResident(KLELaunchTy &Launch, AsyncInfoWrapperTy &AsyncInfoWrapper,
                  void *ReductionBuffer);

  void count(KLETransportKindTy Kind) {
    Launches[static_cast<size_t>(Kind)].fetch_add(1, std::memory_order_relaxed);
  }

  GenericDeviceTy &Device;
  KLETransportModeTy Mode = KLETransportModeTy::Auto;
  KLETransportKindTy DefaultKind = KLETransportKindTy::Copy;
  bool ZeroCopySupported = false;
  bool StagedSupported = false;
  std::unique_ptr<kle::KLESlotPoolTy> Pool;
  std::array<std::atomic<uint64_t>, KLENumTransportKinds> Launches = {};
  std::atomic<bool> Deinitialized = false;
  std::atomic<uint64_t> ResidentWrites = 0;
  /// LIBOMPTARGET_KLE_STATS=1: time the KLE path into PathNs.
  bool TimePath = false;
  std::atomic<uint64_t> PathNs = 0;

  /// Every slot-cached reduction buffer, freed at deinit (rarely changes:
  /// only when a slot's buffer is created or grown).
  mutable std::mutex SlotBuffersMutex;
  llvm::SmallPtrSet<void *, 16> SlotBuffers;
  uint64_t SlotBufferBytes = 0;     ///< Their total size (SlotBuffersMutex).
  uint64_t SlotBufferBytesPeak = 0; ///< Its maximum (SlotBuffersMutex).
  /// Largest reduction buffer a slot keeps (LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT,
  /// bytes; default 64 KiB, 0 = none): bounds the device memory held by the
  /// pool to SlotBufferLimit per slot in use at the peak.
  uint64_t SlotBufferLimit = 64 * 1024;
  /// Most device memory all slots' kept buffers may hold together
  /// (LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL, bytes; default 4 MiB, 0 = none):
  /// past it a launch allocates its buffer per launch, as copy does, so the
  /// pool never holds more than this much device memory in reduction
  /// buffers whatever the number of slots.
  uint64_t SlotBufferTotalLimit = 4 * 1024 * 1024;
  /// Bytes reserved against SlotBufferTotalLimit (compare-exchange before a
  /// slot allocates its buffer; released when a buffer is replaced), so the
  /// bound holds exactly without SlotBuffersMutex.
  std::atomic<uint64_t> SlotBufferBytesNow = 0;
  /// Set by deinit() when launches are outstanding: freePinned() and
  /// freeDevice() then leave the slabs to the device's teardown.
  bool LeakAtDeinit = false;

  /// Per image: does its DeviceRTL speak the fork's KLE ABI (ImageMutex)?
  std::mutex ImageMutex;
  llvm::DenseMap<const DeviceImageTy *, bool> ImageABI;
  /// The images that last answered yes and no, checked without the lock.
  std::atomic<const DeviceImageTy *> LastForkABIImage = nullptr;
  std::atomic<const DeviceImageTy *> LastStockABIImage = nullptr;
};

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

#endif // OFFLOAD_PLUGINS_NEXTGEN_COMMON_KLETRANSPORT_H
