//===-- KLETransport.cpp - How the KLE reaches the device ------------------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The transport's dispatch: init and deinit, the choice of a transport per
// launch, and a slot's hand-off from launch to recycle. The per-kind paths
// are in KLETransportPaths.cpp.
//
//===----------------------------------------------------------------------===//

#include "KLETransport.h"

#include "KLEBenchSwitch.h"
#include "PluginInterface.h"
#include "Shared/APITypes.h"
#include "Shared/Debug.h"

#include <chrono>
#include <cinttypes>
#include <mutex>
#include <string>

using namespace llvm;
using namespace llvm::omp::target::plugin;

StringRef llvm::omp::target::plugin::toString(KLETransportKindTy Kind) {
  switch (Kind) {
  case KLETransportKindTy::Copy:
    return "copy";
  case KLETransportKindTy::Staged:
    return "staged";
  case KLETransportKindTy::ZeroCopy:
    return "zerocopy";
  case KLETransportKindTy::Resident:
    return "resident";
  }
  return "unknown";
}

namespace {
/// Set by a device's deinit that counted a launch with a KLE.
std::atomic<bool> AnyKLELaunch{false};

/// Warn once per process about an invalid value of \p Var, whatever the
/// number of devices.
void warnInvalid(std::once_flag &Flag, const char *Var, const char *Value,
                 const char *Valid, const char *Otherwise) {
  std::call_once(Flag, [&] {
    MESSAGE("warning: %s=\"%s\" is not valid (valid values: %s); %s", Var,
            Value, Valid, Otherwise);
  });
}

/// An integer variable (KLEEnvironment.h), warning once if it is invalid.
uint64_t readInteger(std::once_flag &Flag, const char *Var, uint64_t Default,
                     uint64_t Min, uint64_t Max, const char *Valid,
                     const char *Otherwise = "using the default") {
  KLEEnvIntegerTy Knob = readKLEEnvInteger(Var, Default, Min, Max);
  if (Knob.Invalid)
    warnInvalid(Flag, Var, Knob.Invalid, Valid, Otherwise);
  return Knob.Value;
}

/// Adds the host time of one scope to a counter (LIBOMPTARGET_KLE_STATS=1).
class PathTimerTy {
  std::atomic<uint64_t> *Sum;
  std::chrono::steady_clock::time_point Start;

public:
  PathTimerTy(bool On, std::atomic<uint64_t> &Counter)
      : Sum(On ? &Counter : nullptr) {
    if (Sum)
      Start = std::chrono::steady_clock::now();
  }
  ~PathTimerTy() {
    if (Sum)
      Sum->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - Start)
                         .count(),
                     std::memory_order_relaxed);
  }
};
} // namespace

KLETransportTy::KLETransportTy(GenericDeviceTy &Device)
    : Device(Device), SlabAllocator(Device), SlotBuffers(Device) {}

KLETransportTy::~KLETransportTy() {
  unregisterKLEBenchTransport(*this);
  if (Pool)
    consumeError(Pool->deinit());
}

Error KLETransportTy::init() {
  static std::once_flag TransportWarned, StatsWarned, MaxSlotsWarned,
      BufferTotalWarned, BufferLimitWarned;
  constexpr const char *TransportEnv = "LIBOMPTARGET_KLE_TRANSPORT";
  const char *Value = std::getenv(TransportEnv);
  std::optional<KLETransportModeTy> Mode = parseKLETransportMode(Value);
  if (!Mode)
    warnInvalid(TransportWarned, TransportEnv, Value,
                "auto, zerocopy, staged, copy, resident", "using auto");
  TimePath = readInteger(StatsWarned, "LIBOMPTARGET_KLE_STATS", 0, 0, 1,
                         "0, 1", "no statistics");

  ZeroCopySupported = Device.supportsZeroCopyKLE();
  StagedSupported = Device.hasFastPinnedTransfer();
  DefaultKind = defaultKLETransport(Mode.value_or(KLETransportModeTy::Auto),
                                    ZeroCopySupported, StagedSupported);
  Kind.store(DefaultKind, std::memory_order_relaxed);

  KLESlotPoolConfigTy Config;
  // Unset: the pool's default cap.
  if (uint64_t MaxSlots = readInteger(
          MaxSlotsWarned, "LIBOMPTARGET_KLE_MAX_SLOTS", 0, 1,
          KLESlotPoolTy::MaxSlotsLimit, "an integer from 1 to 16777216"))
    Config.MaxSlots = static_cast<uint32_t>(MaxSlots);

  constexpr uint64_t BytesCap = uint64_t(1) << 40;
  constexpr const char *BytesValid = "a number of bytes from 0 to 1099511627776";
  uint64_t BufferTotal =
      readInteger(BufferTotalWarned, "LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL",
                  4 * 1024 * 1024, 0, BytesCap, BytesValid);
  uint64_t BufferLimit =
      readInteger(BufferLimitWarned, "LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT",
                  64 * 1024, 0, BytesCap, BytesValid);
  SlotBuffers.setLimits(BufferLimit, BufferTotal);

  auto PoolOrErr = KLESlotPoolTy::create(SlabAllocator, Config);
  if (!PoolOrErr)
    return PoolOrErr.takeError();
  Pool = std::move(*PoolOrErr);

  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport: %s (requested %s; zerocopy %ssupported, fast pinned "
       "copies %ssupported)\n",
       toString(DefaultKind).data(), Mode && Value && *Value ? Value : "auto",
       ZeroCopySupported ? "" : "not ", StagedSupported ? "" : "not ");
  registerKLEBenchTransport(*this, ZeroCopySupported, StagedSupported);
  return Error::success();
}

KLETransportStatsTy KLETransportTy::getStats() const {
  KLETransportStatsTy Stats;
  for (size_t I = 0; I < KLENumTransportKinds; ++I)
    Stats.Launches[I] = Launches[I].load(std::memory_order_relaxed);
  if (Pool)
    Stats.Pool = Pool->getStats();
  Stats.PathNs = PathNs.load(std::memory_order_relaxed);
  Stats.ResidentWrites = ResidentWrites.load(std::memory_order_relaxed);
  Stats.SlotBufferBytesPeak = SlotBuffers.getPeakBytes();
  return Stats;
}

void KLETransportTy::deinit() {
  unregisterKLEBenchTransport(*this);
  if (!Pool)
    return;
  Deinitialized.store(true, std::memory_order_release);
  // With launches still outstanding (never synchronized) a kernel may still
  // read its slot, its counter block or its slot's reduction buffer: free
  // none of them; the device's own teardown reclaims the memory.
  const bool KeepMemory = Pool->getStats().SlotsInUse != 0;
  if (KeepMemory)
    SlabAllocator.keepMemory();
  Error Err = SlotBuffers.freeAll(KeepMemory);
  Err = joinErrors(std::move(Err), Pool->deinit());

  KLETransportStatsTy Stats = getStats();
  bool Print = (getInfoLevel() & OMP_INFOTYPE_DATA_TRANSFER) || TimePath;
  uint64_t Total = 0;
  for (uint64_t N : Stats.Launches)
    Total += N;
  if (Total)
    AnyKLELaunch.store(true, std::memory_order_relaxed);
  if (Print && (Total || Stats.Pool.SlabsAllocated)) {
    const KLESlotPoolStatsTy &P = Stats.Pool;
    fprintf(stderr, "omptarget KLE stats: device %d: launches",
            Device.getDeviceId());
    for (size_t K = 0; K < KLENumTransportKinds; ++K)
      fprintf(stderr, " %s=%" PRIu64,
              toString(static_cast<KLETransportKindTy>(K)).data(),
              Stats.Launches[K]);
    fprintf(stderr, "; fallbacks");
    for (size_t R = 0; R < KLENumFallbackReasons; ++R)
      fprintf(stderr, " %s=%" PRIu64,
              toString(static_cast<KLEFallbackReasonTy>(R)).data(),
              P.Fallbacks[R]);
    fprintf(stderr,
            "; slabs=%" PRIu64 " peak_slots_in_use=%" PRIu64
            " outstanding_at_deinit=%" PRIu64 " slot_buffer_bytes_peak=%" PRIu64
            " resident_writes=%" PRIu64,
            P.SlabsAllocated, P.PeakSlotsInUse, P.OutstandingAtDeinit,
            Stats.SlotBufferBytesPeak, Stats.ResidentWrites);
    if (TimePath && Total)
      fprintf(stderr, "; host_ns_per_launch_in_kle_path=%" PRIu64,
              Stats.PathNs / Total);
    fprintf(stderr, "\n");
  }
  if (Err)
    MESSAGE("warning: KLE: device %d: freeing the transport's memory at "
            "deinit failed (the device's teardown continues): %s",
            Device.getDeviceId(), toString(std::move(Err)).c_str());
}

void llvm::omp::target::plugin::noteUnusedKLEKnobs() {
  if (AnyKLELaunch.load(std::memory_order_relaxed))
    return;
  const char *Transport = std::getenv("LIBOMPTARGET_KLE_TRANSPORT");
  const bool AskedTransport = Transport && *Transport;
  const bool Stats =
      readKLEEnvInteger("LIBOMPTARGET_KLE_STATS", 0, 0, 1).Value == 1;
  if (!Stats && !AskedTransport)
    return;
  std::string Asked = Stats ? "LIBOMPTARGET_KLE_STATS=1" : "";
  if (AskedTransport)
    Asked += std::string(Stats ? " and " : "") +
             "LIBOMPTARGET_KLE_TRANSPORT=" + Transport;
  MESSAGE("note: %s: no kernel with a KLE (a teams reduction) was launched "
          "on a CUDA or AMDGPU device, so no KLE transport ran (regions "
          "without a teams reduction, and regions that ran on the host, use "
          "none)",
          Asked.c_str());
}

uint64_t KLETransportTy::reclaimSlotBuffers() {
  if (!Pool || Deinitialized.load(std::memory_order_acquire))
    return 0;
  return SlotBuffers.reclaim(*Pool);
}

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepare(const GenericKernelTy &Kernel,
                        const KernelEnvironmentTy &KernelEnvironment,
                        uint32_t Version, KLERecordReplayTy RecordReplay,
                        AsyncInfoWrapperTy &AsyncInfoWrapper,
                        KLELaunchTy &Launch) {
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  // Only launches with a KLE are timed.
  PathTimerTy Timer(TimePath && Config.ReductionDataSize &&
                        Config.ReductionBufferLength,
                    PathNs);
  Launch = KLELaunchTy();
  // As upstream: ctor/dtor kernels and replays use no (new) KLE, older
  // compilers emit no dyn_ptr, and kernels without a cross-team reduction get
  // the ~0 sentinel.
  if (RecordReplay == KLERecordReplayTy::Replaying ||
      Version < OMP_KERNEL_ARG_MIN_VERSION_WITH_DYN_PTR)
    return nullptr;
  if (!Config.ReductionDataSize || !Config.ReductionBufferLength)
    return reinterpret_cast<KernelLaunchEnvironmentTy *>(~0);
  Launch.HasKLE = true;

  KLETransportChoiceTy Choice = chooseKLETransport(
      Kind.load(std::memory_order_relaxed), RecordReplay, ZeroCopySupported,
      StagedSupported,
      [&] { return ImageABI.speaksForkABI(Device, Kernel.getImage()); });
  if (Choice.Fallback)
    Pool->noteFallback(*Choice.Fallback);
  KLETransportKindTy Want = Choice.Kind;
  if (Want != KLETransportKindTy::Copy) {
    Launch.Slot = Pool->take();
    if (!Launch.Slot.isValid())
      Want = KLETransportKindTy::Copy; // counted by the pool
  }

  auto BufferOrErr = SlotBuffers.get(
      Launch.Slot.isValid() ? &Launch.Slot : nullptr,
      uint64_t(Config.ReductionDataSize) * Config.ReductionBufferLength,
      AsyncInfoWrapper);
  if (!BufferOrErr) {
    // Nothing reads the slot yet.
    if (Launch.Slot.isValid())
      consumeError(Pool->recycle(Launch.Slot.Id));
    Launch.Slot = KLESlotTy();
    return BufferOrErr.takeError();
  }

  void *ReductionBuffer = *BufferOrErr;
  auto PrepareKind = [&]() -> Expected<KernelLaunchEnvironmentTy *> {
    switch (Want) {
    case KLETransportKindTy::ZeroCopy:
      return prepareZeroCopy(Launch, AsyncInfoWrapper, ReductionBuffer);
    case KLETransportKindTy::Resident:
      return prepareResident(Launch, AsyncInfoWrapper, ReductionBuffer);
    case KLETransportKindTy::Copy:
    case KLETransportKindTy::Staged:
      break;
    }
    return prepareCopy(Launch, AsyncInfoWrapper, ReductionBuffer,
                       Launch.Slot.isValid() ? &Launch.Slot : nullptr);
  };
  Expected<KernelLaunchEnvironmentTy *> KLEOrErr = PrepareKind();
  // On an error a transfer into or out of the slot may have been queued:
  // the slot then waits for the queue like a launched one.
  if (!KLEOrErr && Launch.Slot.isValid()) {
    recycleAfterSynchronization(AsyncInfoWrapper, Launch.Slot);
    Launch.Slot = KLESlotTy();
  }
  return KLEOrErr;
}

void KLETransportTy::finish(KLELaunchTy &Launch,
                            AsyncInfoWrapperTy &AsyncInfoWrapper,
                            bool Enqueued) {
  // Only launches with a KLE are timed, as in prepare().
  PathTimerTy Timer(TimePath && Launch.HasKLE, PathNs);
  if (!Launch.Slot.isValid())
    return;
  // Staged always queued a transfer out of the slot before the kernel.
  if (!Enqueued && !Launch.WroteSlot &&
      (Launch.Kind == KLETransportKindTy::ZeroCopy ||
       Launch.Kind == KLETransportKindTy::Resident))
    consumeError(Pool->recycle(Launch.Slot.Id)); // nothing reads it
  else
    recycleAfterSynchronization(AsyncInfoWrapper, Launch.Slot);
  Launch.Slot = KLESlotTy();
}

void KLETransportTy::recycleAfterSynchronization(
    AsyncInfoWrapperTy &AsyncInfoWrapper, const KLESlotTy &Slot) {
  // The first slot of a queue goes into the async info's lock-free word (one
  // launch per queue until it completes: no lock on the launch path); further
  // slots go to KLESlotIds under its mutex. acq_rel pairs with
  // recycleCompletedQueue()'s exchange, so the thread that recycles the slot
  // has seen this one's writes.
  __tgt_async_info &AsyncInfo = *AsyncInfoWrapper;
  uint64_t None = KLESlotTy::InvalidId;
  if (!AsyncInfo.KLESlotId.compare_exchange_strong(None, Slot.Id,
                                                   std::memory_order_acq_rel)) {
    std::lock_guard<std::mutex> Lock(AsyncInfo.Mutex);
    AsyncInfo.KLESlotIds.push_back(Slot.Id);
  }
}

Error KLETransportTy::recycleCompletedQueue(__tgt_async_info &AsyncInfo) {
  // The caller holds AsyncInfo.Mutex, so KLESlotIds is read in place.
  const uint64_t First = AsyncInfo.KLESlotId.exchange(
      KLESlotTy::InvalidId, std::memory_order_acq_rel);
  if (First == KLESlotTy::InvalidId && AsyncInfo.KLESlotIds.empty())
    return Error::success();
  Error Result = Error::success();
  // After deinit the slabs are gone: a late synchronize has nothing to give.
  if (!Deinitialized.load(std::memory_order_acquire)) {
    PathTimerTy Timer(TimePath, PathNs);
    auto Recycle = [&](uint64_t Id) {
      if (Error Err = Pool->recycle(Id))
        Result = joinErrors(std::move(Result), std::move(Err));
    };
    for (uint64_t Id : AsyncInfo.KLESlotIds)
      Recycle(Id);
    if (First != KLESlotTy::InvalidId)
      Recycle(First);
  }
  AsyncInfo.KLESlotIds.clear();
  return Result;
}
