//===-- KLETransportPaths.cpp - The four ways a KLE reaches the device ----===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// KLETransportTy's per-kind prepare paths: copy and staged (prepareCopy),
// zerocopy and resident. Each runs with the launch's slot held exclusively:
// the slot's previous reader completed before the slot was recycled.
//
//===----------------------------------------------------------------------===//

#include "KLESlotHostState.h"
#include "KLETransport.h"

#include "PluginInterface.h"
#include "Shared/Debug.h"
#include "Shared/KLEAbi.h"

#include <cinttypes>

using namespace llvm;
using namespace llvm::omp::target::plugin;

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareCopy(KLELaunchTy &Launch,
                            AsyncInfoWrapperTy &AsyncInfoWrapper,
                            void *ReductionBuffer, const KLESlotTy *Staging) {
  auto AllocOrErr = Device.dataAlloc(sizeof(KernelLaunchEnvironmentTy),
                                     /*HostPtr=*/nullptr,
                                     TargetAllocTy::TARGET_ALLOC_DEVICE);
  if (!AllocOrErr)
    return AllocOrErr.takeError();
  AsyncInfoWrapper.freeAllocationAfterSynchronization(*AllocOrErr);

  // Upstream layout: counters zero and in the (device) KLE itself.
  KernelLaunchEnvironmentTy *Source;
  if (Staging) {
    Source = &hostState(*Staging).KLE;
    Launch.Kind = KLETransportKindTy::Staged;
  } else {
    // A stable address until the transfer is done, as upstream.
    Source = &(*AsyncInfoWrapper).KernelLaunchEnvironment;
    Launch.Kind = KLETransportKindTy::Copy;
  }
  *Source = KernelLaunchEnvironmentTy();
  Source->ReductionBuffer = ReductionBuffer;
  count(Launch.Kind);

  // Copy prints upstream's line unchanged, so tools that parse
  // LIBOMPTARGET_INFO output keep working; staged says what it is.
  if (Launch.Kind == KLETransportKindTy::Copy)
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "Copying data from host to device, HstPtr=" DPxMOD ", TgtPtr=" DPxMOD
         ", Size=%" PRId64 ", Name=KernelLaunchEnv\n",
         DPxPTR(Source), DPxPTR(*AllocOrErr),
         int64_t(sizeof(KernelLaunchEnvironmentTy)));
  else
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE transport=staged HstPtr=" DPxMOD " TgtPtr=" DPxMOD ", Size=%zu, "
         "Name=KernelLaunchEnv\n",
         DPxPTR(Source), DPxPTR(*AllocOrErr),
         sizeof(KernelLaunchEnvironmentTy));
  if (auto Err = Device.dataSubmit(*AllocOrErr, Source,
                                   sizeof(KernelLaunchEnvironmentTy),
                                   AsyncInfoWrapper))
    return std::move(Err);
  return static_cast<KernelLaunchEnvironmentTy *>(*AllocOrErr);
}

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareZeroCopy(KLELaunchTy &Launch,
                                AsyncInfoWrapperTy &AsyncInfoWrapper,
                                void *ReductionBuffer) {
  const KLESlotTy &Slot = Launch.Slot;
  KLESlotHostStateTy &State = hostState(Slot);
  // The counters are zero at the kernel's start: zeroed on this queue ahead
  // of it at the slot's first use, and reset by the last team of every
  // launch since.
  if (!State.CountersZeroed) {
    Launch.WroteSlot = true;
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE transport=zerocopy counters=" DPxMOD " zeroed (first use)\n",
         DPxPTR(Slot.DeviceCounters));
    if (Error Err = Device.dataSubmit(Slot.DeviceCounters, State.Zeros,
                                      KLECounterBytes, AsyncInfoWrapper))
      return std::move(Err);
    State.CountersZeroed = 1;
  }
  encodeDeviceCountersKLE(&State.KLE, ReductionBuffer, Slot.DeviceCounters);
  Launch.Kind = KLETransportKindTy::ZeroCopy;
  count(Launch.Kind);
  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport=zerocopy slot=" DPxMOD " counters=" DPxMOD
       " ReductionBuffer=" DPxMOD "\n",
       DPxPTR(Slot.HostPtr), DPxPTR(Slot.DeviceCounters),
       DPxPTR(ReductionBuffer));
  // Pinned slots are device-accessible at their host address; the flag tells
  // the DeviceRTL that the KLE is in host memory (Shared/KLEAbi.h).
  return static_cast<KernelLaunchEnvironmentTy *>(flagHostKLE(Slot.HostPtr));
}

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareResident(KLELaunchTy &Launch,
                                AsyncInfoWrapperTy &AsyncInfoWrapper,
                                void *ReductionBuffer) {
  const KLESlotTy &Slot = Launch.Slot;
  KLESlotHostStateTy &State = hostState(Slot);
  // The device block (CounterBlockSize >= 16 bytes) holds the whole KLE. Its
  // first write puts the counters there as zero; the last team of every
  // teams reduction leaves them zero, so afterwards only ReductionBuffer can
  // differ from what it holds.
  auto *DeviceKLE =
      static_cast<KernelLaunchEnvironmentTy *>(Slot.DeviceCounters);
  Launch.Kind = KLETransportKindTy::Resident;
  count(Launch.Kind);
  if (State.ResidentBuffer == ReductionBuffer) {
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE transport=resident KLE=" DPxMOD " ReductionBuffer=" DPxMOD
         " (unchanged)\n",
         DPxPTR(DeviceKLE), DPxPTR(ReductionBuffer));
    return DeviceKLE;
  }
  // The slot's pinned KLE is the source of a copy queued ahead of the kernel.
  State.KLE = KernelLaunchEnvironmentTy();
  State.KLE.ReductionBuffer = ReductionBuffer;
  State.ResidentBuffer = nullptr; // until the copy is queued
  Launch.WroteSlot = true;
  ResidentWrites.fetch_add(1, std::memory_order_relaxed);
  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport=resident KLE=" DPxMOD " ReductionBuffer=" DPxMOD
       " (written)\n",
       DPxPTR(DeviceKLE), DPxPTR(ReductionBuffer));
  if (auto Err = Device.dataSubmit(DeviceKLE, &State.KLE,
                                   sizeof(KernelLaunchEnvironmentTy),
                                   AsyncInfoWrapper))
    return std::move(Err);
  State.ResidentBuffer = ReductionBuffer;
  return DeviceKLE;
}
