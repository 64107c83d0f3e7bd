//===-- KLE.cpp - DeviceRTL view of the kernel launch environment -- C++ -*-===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLE.h"
#include "Shared/KLEAbi.h"
#include "State.h"

using namespace ompx;

/// The handshake global, defined in KLEAbiVersion.cpp, which is built into its
/// own member of libompdevice.a and not into libomptarget-<target>.bc: only a
/// unit with kernels references it (kle::initTeam), so a unit without kernels
/// cannot make an image look fork-built (docs/DESIGN.md "Handshake").
[[gnu::visibility("protected")]] extern const uint32_t __kle_offload_abi_version;

namespace {
[[clang::loader_uninitialized]] static Local<void *> KLEReductionBuffer;
[[clang::loader_uninitialized]] static Local<uint32_t *> KLECounters;
/// The asynchronous read's destination: the KLE's two words and the
/// handshake global's value, valid once the initial thread waited.
[[clang::loader_uninitialized, gnu::aligned(16)]] static Local<uint64_t[2]>
    KLERaw;
[[clang::loader_uninitialized, gnu::aligned(4)]] static Local<uint32_t>
    KLERawVersion;
/// Whether this launch's read was issued asynchronously (a zero-copy KLE on
/// a target that reads so); set by initTeam before the team's first barrier.
[[clang::loader_uninitialized]] static Local<bool> KLEReadIsAsync;

/// True where initTeam issues the KLE read asynchronously: sm_80 and later
/// (cp.async), decided when the bitcode is linked for its target
/// (__nvvm_reflect, as Reduction.cpp does for sm_70). Built with
/// KLE_DEVICERTL_SYNC_READ, every target reads synchronously (the A/B
/// baseline, bench/gpu/gpu-bundle.sh).
bool readsAsync() {
#if defined(__NVPTX__) && !defined(KLE_DEVICERTL_SYNC_READ) &&                \
    __has_builtin(__nvvm_reflect)
  return __nvvm_reflect("__CUDA_ARCH") >= 800;
#else
  return false;
#endif
}

/// The view the DeviceRTL uses: the KLE's words decoded (Shared/KLEAbi.h),
/// or upstream's layout if the image's handshake global is not the version
/// this code reads.
void setView(uint32_t Version, uint64_t CountersWord, uint64_t BufferWord,
             KernelLaunchEnvironmentTy &KernelLaunchEnvironment) {
  ::KLEViewTy View =
      ::decodeKLEWords(CountersWord, BufferWord, &KernelLaunchEnvironment);
  if (Version != KLE_ABI_VERSION) // not the layout this code reads: upstream's
    View = {reinterpret_cast<void *>(BufferWord),
            &KernelLaunchEnvironment.ReductionCnt};
  KLEReductionBuffer = View.ReductionBuffer;
  KLECounters = View.Counters;
}

/// Reads the KLE and the handshake global now, and decodes them. The KLE
/// is read first, so that its round trip overlaps the version's read (on
/// AMDGPU the compiler waits for a volatile load right after issuing it).
void readNow(KernelLaunchEnvironmentTy &KernelLaunchEnvironment) {
  const uint64_t *Words =
      reinterpret_cast<const uint64_t *>(&KernelLaunchEnvironment);
  const uint64_t CountersWord = Words[::KLECountersOffset / 8];
  const uint64_t BufferWord = Words[::KLEReductionBufferOffset / 8];
  const uint32_t Version =
      *reinterpret_cast<const volatile uint32_t *>(&__kle_offload_abi_version);
  setView(Version, CountersWord, BufferWord, KernelLaunchEnvironment);
}

bool isAligned(const KernelLaunchEnvironmentTy *KLE) {
  return !(reinterpret_cast<uintptr_t>(KLE) % 16);
}

#if defined(__NVPTX__)
/// Shared-window address of team-local \p P, as cp.async's [dst] operand.
uint32_t sharedAddress(Local<void> *P) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(P));
}
#endif
} // namespace

KernelLaunchEnvironmentTy &
ompx::kle::initTeam(KernelEnvironmentTy &KernelEnvironment,
                    KernelLaunchEnvironmentTy &DynPtr) {
  // Keep the reference to the handshake global in every kernel of this unit
  // (one register move per team; no memory access): it is what pulls the
  // global into the image at device link.
#if defined(__NVPTX__)
  asm volatile("" : : "l"(&__kle_offload_abi_version));
#else
  asm volatile("" : : "s"(&__kle_offload_abi_version));
#endif
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  KLEReadIsAsync = false;
  if (!Config.ReductionDataSize || !Config.ReductionBufferLength) {
    KLEReductionBuffer = nullptr;
    KLECounters = nullptr;
    return DynPtr; // the ~0 sentinel or null: never read
  }
  // A kernel with a reduction gets a KLE; dyn_ptr's bit 0 says whether it is
  // in host memory (Shared/KLEAbi.h). A stock libomptarget never sets it.
  uintptr_t Raw = reinterpret_cast<uintptr_t>(&DynPtr);
  // dyn_ptr arrives as a reference to an aligned KLE: hide its value from the
  // optimizer, which would otherwise fold the flag to 0.
#if defined(__NVPTX__)
  asm("" : "+l"(Raw));
#else
  asm("" : "+v"(Raw));
#endif
  const bool InHost = Raw & ::KLEHostDynPtrFlag;
  KernelLaunchEnvironmentTy &KernelLaunchEnvironment =
      *reinterpret_cast<KernelLaunchEnvironmentTy *>(
          Raw & ~uintptr_t(::KLEHostDynPtrFlag));
  // Both paths below read the handshake global, a real read the code
  // generator keeps: the linked image then holds a relocation against it in
  // this kernel's own code, which is how the plugin proves, kernel by kernel,
  // that the DeviceRTL a kernel was built with reads the zero-copy layout
  // (KLEImageABI.cpp). A stock kernel never has one, even where nvlink kept
  // it in place of a fork unit's copy of the same weak kernel. Only kernels
  // with a cross-team reduction read anything.
#if defined(__NVPTX__)
  if (readsAsync() && InHost && isAligned(&KernelLaunchEnvironment)) {
    // sm_80+: copy the 16 bytes (and the version) into team-local memory
    // without waiting; waitTeam completes the copy where the values are
    // first used, so the round trip to a zero-copy KLE in host memory
    // overlaps the team's work instead of holding the team at its first
    // barrier. Device and mapped host memory are both in the global window.
    // Only a zero-copy KLE, in host memory, is read so: one in device memory
    // is read at once below, as upstream reads it, with no barrier for it.
    // A KLE that is not 16-byte aligned (no plugin allocates one) is read at
    // once too.
    KLEReadIsAsync = true;
    asm volatile("{\n\t"
                 ".reg .u64 %%kle_g;\n\t"
                 "cvta.to.global.u64 %%kle_g, %1;\n\t"
                 "cp.async.cg.shared.global [%0], [%%kle_g], 16;\n\t"
                 "}"
                 :
                 : "r"(sharedAddress(&KLERaw)), "l"(&KernelLaunchEnvironment)
                 : "memory");
    asm volatile("{\n\t"
                 ".reg .u64 %%kle_v;\n\t"
                 "cvta.to.global.u64 %%kle_v, %1;\n\t"
                 "cp.async.ca.shared.global [%0], [%%kle_v], 4;\n\t"
                 "}"
                 :
                 : "r"(sharedAddress(&KLERawVersion)),
                   "l"(&__kle_offload_abi_version)
                 : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    return KernelLaunchEnvironment;
  }
#else
  (void)InHost;
#endif
  // Every other launch: one synchronous 16-byte read, decoded before the
  // team's first barrier (docs/DESIGN.md "Where zero-copy's read happens").
  readNow(KernelLaunchEnvironment);
  return KernelLaunchEnvironment;
}

void ompx::kle::waitTeam() {
  if (!readsAsync() || !KLEReadIsAsync)
    return;
#if defined(__NVPTX__)
  KernelLaunchEnvironmentTy &KernelLaunchEnvironment =
      state::getKernelLaunchEnvironment();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  setView(KLERawVersion, KLERaw[::KLECountersOffset / 8],
          KLERaw[::KLEReductionBufferOffset / 8], KernelLaunchEnvironment);
#endif
}

bool ompx::kle::teamNeedsBarrier() { return readsAsync() && KLEReadIsAsync; }

uint32_t &ompx::kle::reductionCnt() { return KLECounters[0]; }
uint32_t &ompx::kle::reductionIterCnt() { return KLECounters[1]; }
void *ompx::kle::reductionBuffer() { return KLEReductionBuffer; }
