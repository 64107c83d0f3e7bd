//===- FakeSlabAllocator.h - Test double for KLESlabAllocatorTy -----------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A KLESlabAllocatorTy backed by ordinary host memory that records every live
// allocation, counts calls, can fail chosen calls and can return
// deliberately misaligned pointers.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_TEST_UNIT_FAKESLABALLOCATOR_H
#define KLE_TEST_UNIT_FAKESLABALLOCATOR_H

#include "KLESlotPool.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace llvm::omp::target::plugin {
namespace test {

class FakeSlabAllocatorTy : public KLESlabAllocatorTy {
public:
  enum class KindTy { Pinned, Device };

  struct AllocTy {
    void *Raw;   ///< What std::aligned_alloc returned.
    size_t Size; ///< What the pool asked for.
    KindTy Kind;
  };

  /// Pointers handed to the pool are (128-byte aligned base) + Misalign.
  size_t Misalign = 0;
  /// Fail only the N-th (1-based) allocatePinned / allocateDevice
  /// call; 0 = never.
  unsigned FailPinnedOnCall = 0;
  unsigned FailDeviceOnCall = 0;
  /// Fail every allocatePinned call while set.
  bool FailAllPinned = false;
  /// Fill new pinned memory with 0xA5 (as fresh driver memory may hold
  /// anything) instead of zero.
  bool PoisonPinned = false;
  /// Called at the start of every allocatePinned, before the fake takes its
  /// own lock (so it may block, e.g. to hold a growing take() inside the
  /// allocator while other threads use the pool). Set it before the pool
  /// can call the allocator concurrently.
  std::function<void()> BeforeAllocatePinned;

  ~FakeSlabAllocatorTy() override {
    for (auto &[Ptr, A] : Live)
      std::free(A.Raw);
  }

  llvm::Expected<void *> allocatePinned(size_t Size) override {
    if (BeforeAllocatePinned)
      BeforeAllocatePinned();
    std::lock_guard<std::mutex> Lock(Mutex);
    ++PinnedCalls;
    PinnedSizes.push_back(Size);
    if (FailAllPinned || PinnedCalls == FailPinnedOnCall)
      return llvm::createStringError("fake: allocatePinned failed");
    return allocLocked(Size, KindTy::Pinned);
  }

  llvm::Error freePinned(void *HostPtr) override {
    std::lock_guard<std::mutex> Lock(Mutex);
    ++PinnedFrees;
    return freeLocked(HostPtr, KindTy::Pinned);
  }

  llvm::Expected<void *> allocateDevice(size_t Size) override {
    std::lock_guard<std::mutex> Lock(Mutex);
    ++DeviceCalls;
    DeviceSizes.push_back(Size);
    if (DeviceCalls == FailDeviceOnCall)
      return llvm::createStringError("fake: allocateDevice failed");
    return allocLocked(Size, KindTy::Device);
  }

  llvm::Error freeDevice(void *DevPtr) override {
    std::lock_guard<std::mutex> Lock(Mutex);
    ++DeviceFrees;
    return freeLocked(DevPtr, KindTy::Device);
  }

  size_t liveCount() const {
    std::lock_guard<std::mutex> Lock(Mutex);
    return Live.size();
  }
  size_t liveBytes(KindTy Kind) const {
    std::lock_guard<std::mutex> Lock(Mutex);
    size_t Sum = 0;
    for (auto &[Ptr, A] : Live)
      if (A.Kind == Kind)
        Sum += A.Size;
    return Sum;
  }
  /// The live allocation of \p Kind containing [P, P + Size), if any.
  const AllocTy *findContaining(const void *P, size_t Size, KindTy Kind) const {
    std::lock_guard<std::mutex> Lock(Mutex);
    uintptr_t Begin = reinterpret_cast<uintptr_t>(P);
    for (auto &[Ptr, A] : Live) {
      uintptr_t B = reinterpret_cast<uintptr_t>(Ptr);
      if (A.Kind == Kind && Begin >= B && Begin + Size <= B + A.Size)
        return &A;
    }
    return nullptr;
  }

  unsigned PinnedCalls = 0, PinnedFrees = 0, DeviceCalls = 0, DeviceFrees = 0;
  /// Frees of pointers that are not live allocations of that kind.
  unsigned BadFrees = 0;
  std::vector<size_t> PinnedSizes, DeviceSizes;

private:
  void *allocLocked(size_t Size, KindTy Kind) {
    size_t Total = (Size + Misalign + 127) / 128 * 128;
    void *Raw = std::aligned_alloc(128, Total);
    std::memset(Raw, Kind == KindTy::Pinned && PoisonPinned ? 0xA5 : 0, Total);
    void *P = static_cast<char *>(Raw) + Misalign;
    Live[P] = {Raw, Size, Kind};
    return P;
  }

  llvm::Error freeLocked(void *P, KindTy Kind) {
    auto It = Live.find(P);
    if (It == Live.end() || It->second.Kind != Kind) {
      ++BadFrees;
      return llvm::createStringError("fake: free of unknown pointer");
    }
    std::free(It->second.Raw);
    Live.erase(It);
    return llvm::Error::success();
  }

  mutable std::mutex Mutex;
  std::map<void *, AllocTy> Live;
};

} // namespace test
} // namespace llvm::omp::target::plugin

#endif // KLE_TEST_UNIT_FAKESLABALLOCATOR_H
