//===-- KLESlotBuffers.cpp - Reduction buffers kept by pool slots ---------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLESlotBuffers.h"

#include "KLESlotHostState.h"
#include "PluginInterface.h"
#include "Shared/Debug.h"

#include <cinttypes>

using namespace llvm;
using namespace llvm::omp::target::plugin;

Expected<void *> KLESlotBufferCacheTy::get(const KLESlotTy *Slot,
                                           uint64_t Bytes,
                                           AsyncInfoWrapperTy &AsyncInfoWrapper) {
  // The slot is the caller's until its launch completes: no lock for its
  // host state.
  KLESlotHostStateTy *State =
      Slot && Bytes <= SlotLimit ? &hostState(*Slot) : nullptr;
  if (State && State->Buffer && State->BufferBytes >= Bytes)
    return State->Buffer;
  // Reserve against the total before allocating, so that it holds exactly
  // however many slots grow at once.
  bool IsReserved = false;
  if (State) {
    uint64_t Now = Reserved.load(std::memory_order_relaxed);
    while (Now + Bytes <= TotalLimit &&
           !Reserved.compare_exchange_weak(Now, Now + Bytes,
                                           std::memory_order_relaxed))
      ;
    IsReserved = Now + Bytes <= TotalLimit;
  }
  auto BufferOrErr = Device.dataAlloc(int64_t(Bytes), /*HostPtr=*/nullptr,
                                      TargetAllocTy::TARGET_ALLOC_DEVICE);
  if (!BufferOrErr) {
    if (IsReserved)
      Reserved.fetch_sub(Bytes, std::memory_order_relaxed);
    return BufferOrErr.takeError();
  }
  if (!IsReserved) {
    // Per launch, as copy: freed after synchronization.
    AsyncInfoWrapper.freeAllocationAfterSynchronization(*BufferOrErr);
    return *BufferOrErr;
  }
  void *Old = State->Buffer;
  const uint64_t OldBytes = Old ? State->BufferBytes : 0;
  {
    std::lock_guard<std::mutex> Lock(Mutex);
    Buffers.insert(*BufferOrErr);
    this->Bytes += Bytes;
    if (Old) {
      Buffers.erase(Old);
      this->Bytes -= OldBytes;
    }
    PeakBytes = std::max(PeakBytes, this->Bytes);
  }
  State->Buffer = *BufferOrErr;
  State->BufferBytes = Bytes;
  Reserved.fetch_sub(OldBytes, std::memory_order_relaxed);
  // The launch that last used the old buffer completed before the slot was
  // recycled to us. A failed free loses the old buffer, not this launch.
  if (Old)
    if (auto Err = Device.dataDelete(Old, TargetAllocTy::TARGET_ALLOC_DEVICE))
      MESSAGE("warning: KLE: could not free a slot's old reduction buffer: %s",
              toString(std::move(Err)).c_str());
  return *BufferOrErr;
}

uint64_t KLESlotBufferCacheTy::reclaim(KLESlotPoolTy &Pool) {
  if (Reserved.load(std::memory_order_relaxed) == 0)
    return 0;
  uint64_t Freed = 0;
  Pool.forEachFreeSlot([&](const KLESlotTy &Slot) {
    KLESlotHostStateTy &State = hostState(Slot);
    if (!State.Buffer)
      return;
    void *Buffer = State.Buffer;
    const uint64_t BufferBytes = State.BufferBytes;
    // The slot's device KLE (resident) still names the buffer: forget that,
    // so the slot's next launch writes its new buffer's address first.
    if (State.ResidentBuffer == Buffer)
      State.ResidentBuffer = nullptr;
    State.Buffer = nullptr;
    State.BufferBytes = 0;
    {
      std::lock_guard<std::mutex> Lock(Mutex);
      Buffers.erase(Buffer);
      Bytes -= BufferBytes;
    }
    Reserved.fetch_sub(BufferBytes, std::memory_order_relaxed);
    // The slot is free: the launch that last used the buffer completed.
    if (auto Err =
            Device.dataDelete(Buffer, TargetAllocTy::TARGET_ALLOC_DEVICE)) {
      static std::once_flag Warned;
      std::call_once(Warned, [&] {
        MESSAGE("warning: KLE: could not free a slot's reduction buffer after "
                "a failed device allocation: %s",
                toString(std::move(Err)).c_str());
      });
      consumeError(std::move(Err));
      return;
    }
    Freed += BufferBytes;
  });
  if (Freed)
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE: a device allocation failed; gave back %" PRIu64
         " bytes of reduction buffers kept by free slots\n",
         Freed);
  return Freed;
}

Error KLESlotBufferCacheTy::freeAll(bool KeepMemory) {
  Error Err = Error::success();
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!KeepMemory)
    for (void *Buffer : Buffers)
      Err = joinErrors(std::move(Err),
                       Device.dataDelete(Buffer, TARGET_ALLOC_DEVICE));
  Buffers.clear();
  Bytes = 0;
  return Err;
}

uint64_t KLESlotBufferCacheTy::getPeakBytes() const {
  std::lock_guard<std::mutex> Lock(Mutex);
  return PeakBytes;
}
