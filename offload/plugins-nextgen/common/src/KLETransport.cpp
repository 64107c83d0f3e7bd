//===-- KLETransport.cpp - How the KLE reaches the device ------------------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLETransport.h"

#include "GlobalHandler.h"
#include "KLEBenchSwitch.h"
#include "PluginInterface.h"
#include "Shared/Debug.h"
#include "Shared/KLEAbi.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

using namespace llvm;
using namespace llvm::omp::target::plugin;

static constexpr const char *TransportEnv = "LIBOMPTARGET_KLE_TRANSPORT";
static constexpr const char *MaxSlotsEnv = "LIBOMPTARGET_KLE_MAX_SLOTS";
static constexpr const char *StatsEnv = "LIBOMPTARGET_KLE_STATS";
static constexpr const char *SlotBufferLimitEnv =
    "LIBOMPTARGET_KLE_SLOT_BUFFER_LIMIT";
static constexpr const char *SlotBufferTotalEnv =
    "LIBOMPTARGET_KLE_SLOT_BUFFER_TOTAL";

std::optional<KLETransportModeTy>
llvm::omp::target::plugin::parseKLETransportMode(const char *Value) {
  if (!Value || !*Value)
    return KLETransportModeTy::Auto;
  return StringSwitch<std::optional<KLETransportModeTy>>(Value)
      .Case("auto", KLETransportModeTy::Auto)
      .Case("zerocopy", KLETransportModeTy::ZeroCopy)
      .Case("staged", KLETransportModeTy::Staged)
      .Case("copy", KLETransportModeTy::Copy)
      .Case("resident", KLETransportModeTy::Resident)
      .Default(std::nullopt);
}

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

/// One warning per process and variable, whatever the number of devices.
static void warnOnce(std::once_flag &Flag, const char *Msg, const char *Var,
                     const char *Value, const char *Valid) {
  std::call_once(Flag, [&] {
    fprintf(stderr,
            "omptarget warning: %s=\"%s\" is not valid (valid values: %s); "
            "%s\n",
            Var, Value, Valid, Msg);
  });
}

KLETransportTy::KLETransportTy(GenericDeviceTy &Device) : Device(Device) {}

KLETransportTy::~KLETransportTy() {
  unregisterKLEBenchTransport(*this);
  if (Pool)
    consumeError(Pool->deinit());
}

Error KLETransportTy::init() {
  static std::once_flag TransportWarned, MaxSlotsWarned;
  const char *Value = std::getenv(TransportEnv);
  auto ModeOrNone = parseKLETransportMode(Value);
  if (!ModeOrNone)
    warnOnce(TransportWarned, "using auto", TransportEnv, Value,
             "auto, zerocopy, staged, copy, resident");
  Mode = ModeOrNone.value_or(KLETransportModeTy::Auto);
  static std::once_flag StatsWarned;
  const char *StatsVar = std::getenv(StatsEnv);
  TimePath = StatsVar && StringRef(StatsVar) == "1";
  if (StatsVar && !TimePath && *StatsVar && StringRef(StatsVar) != "0")
    warnOnce(StatsWarned, "no statistics", StatsEnv, StatsVar, "0, 1");

  ZeroCopySupported = Device.supportsZeroCopyKLE();
  StagedSupported = Device.hasFastPinnedTransfer();
  DefaultKind = defaultKLETransport(Mode, ZeroCopySupported, StagedSupported);

  kle::KLESlotPoolConfigTy Config;
  // Pinned host memory comes page-aligned from both plugins (cuMemAllocHost;
  // the AMDGPU host fine-grained pool), and device memory at least 256-byte
  // aligned: no padding is needed to align slots and counter blocks to 128.
  // The pool checks the promise and falls back (AllocationFailed) if broken.
  Config.AllocatorAlignment = kle::KLESlotPoolTy::SlotAlignment;
  if (const char *Max = std::getenv(MaxSlotsEnv); Max && *Max) {
    // Decimal digits only: no sign, blank or radix prefix.
    uint64_t N = 0;
    if (StringRef(Max).getAsInteger(10, N) || N == 0 || N > (1u << 24))
      warnOnce(MaxSlotsWarned, "using the default", MaxSlotsEnv, Max,
               "an integer from 1 to 16777216");
    else {
      Config.MaxSlots = static_cast<uint32_t>(N);
      Config.InitialSlotsPerSlab =
          std::min<uint32_t>(Config.InitialSlotsPerSlab, Config.MaxSlots);
      Config.MaxSlabs =
          std::max(Config.MaxSlabs, kle::slabsToReach(Config, Config.MaxSlots));
    }
  }
  static std::once_flag BufferTotalWarned;
  if (const char *Limit = std::getenv(SlotBufferTotalEnv); Limit && *Limit) {
    uint64_t N = 0;
    if (StringRef(Limit).getAsInteger(10, N) || N > (uint64_t(1) << 40))
      warnOnce(BufferTotalWarned, "using the default", SlotBufferTotalEnv,
               Limit, "a number of bytes from 0 to 1099511627776");
    else
      SlotBufferTotalLimit = N;
  }
  static std::once_flag BufferLimitWarned;
  if (const char *Limit = std::getenv(SlotBufferLimitEnv); Limit && *Limit) {
    uint64_t N = 0;
    if (StringRef(Limit).getAsInteger(10, N) || N > (uint64_t(1) << 40))
      warnOnce(BufferLimitWarned, "using the default", SlotBufferLimitEnv,
               Limit, "a number of bytes from 0 to 1099511627776");
    else
      SlotBufferLimit = N;
  }
  auto PoolOrErr = kle::KLESlotPoolTy::create(*this, Config);
  if (!PoolOrErr)
    return PoolOrErr.takeError();
  Pool = std::move(*PoolOrErr);

  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport: %s (requested %s; zerocopy %ssupported, fast pinned "
       "copies %ssupported)\n",
       toString(DefaultKind).data(),
       ModeOrNone && Value && *Value ? Value : "auto",
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
  std::lock_guard<std::mutex> Lock(SlotBuffersMutex);
  Stats.SlotBufferBytesPeak = SlotBufferBytesPeak;
  return Stats;
}

void KLETransportTy::deinit() {
  unregisterKLEBenchTransport(*this);
  if (!Pool)
    return;
  Deinitialized.store(true, std::memory_order_release);
  Error Err = Error::success();
  // With launches still outstanding (never synchronized) a kernel may still
  // read its slot, its counter block or its slot's reduction buffer: free
  // none of them (the slab frees below become no-ops); the device's own
  // teardown reclaims the memory. Otherwise free everything.
  LeakAtDeinit = Pool->getStats().SlotsInUse != 0;
  {
    std::lock_guard<std::mutex> Lock(SlotBuffersMutex);
    if (!LeakAtDeinit)
      for (void *Buffer : SlotBuffers)
        Err = joinErrors(std::move(Err),
                         Device.dataDelete(Buffer, TARGET_ALLOC_DEVICE));
    SlotBuffers.clear();
    SlotBufferBytes = 0;
  }
  Err = joinErrors(std::move(Err), Pool->deinit());
  KLETransportStatsTy Stats = getStats();
  // TimePath: LIBOMPTARGET_KLE_STATS=1, read once by init().
  bool Print = (getInfoLevel() & OMP_INFOTYPE_DATA_TRANSFER) || TimePath;
  uint64_t Total = 0;
  for (uint64_t N : Stats.Launches)
    Total += N;
  if (Print && (Total || Stats.Pool.SlabsAllocated)) {
    const kle::KLESlotPoolStatsTy &P = Stats.Pool;
    fprintf(stderr,
            "omptarget KLE stats: device %d: launches copy=%" PRIu64
            " staged=%" PRIu64 " zerocopy=%" PRIu64 " resident=%" PRIu64
            "; fallbacks",
            Device.getDeviceId(), Stats.Launches[0], Stats.Launches[1],
            Stats.Launches[2], Stats.Launches[3]);
    for (size_t R = 0; R < kle::KLENumFallbackReasons; ++R)
      fprintf(stderr, " %s=%" PRIu64,
              kle::toString(static_cast<kle::KLEFallbackReasonTy>(R)).data(),
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
  // Every free was tried; the device's teardown goes on (see the header).
  if (Err)
    fprintf(stderr,
            "omptarget warning: KLE: device %d: freeing the transport's memory "
            "at deinit failed (the device's teardown continues): %s\n",
            Device.getDeviceId(), toString(std::move(Err)).c_str());
}

Expected<void *> KLETransportTy::allocatePinned(size_t Size) {
  return Device.dataAlloc(Size, /*HostPtr=*/nullptr, TARGET_ALLOC_HOST);
}

Error KLETransportTy::freePinned(void *HostPtr) {
  if (LeakAtDeinit)
    return Error::success(); // a pending kernel may still read it
  return Device.dataDelete(HostPtr, TARGET_ALLOC_HOST);
}

Expected<void *> KLETransportTy::allocateDevice(size_t Size) {
  // Not through the memory manager: counter blocks live as long as their slab.
  // Not zeroed here (no synchronous transfer while the pool grows): each
  // slot's block is zeroed on its first launch's queue (zeroSlotCounters, or
  // resident's first KLE write).
  auto PtrOrErr = Device.allocate(Size, /*HostPtr=*/nullptr, TARGET_ALLOC_DEVICE);
  if (!PtrOrErr)
    return PtrOrErr.takeError();
  if (!*PtrOrErr)
    return createStringError(inconvertibleErrorCode(),
                             "device allocation of %zu bytes failed", Size);
  return *PtrOrErr;
}

Error KLETransportTy::freeDevice(void *DevPtr) {
  if (LeakAtDeinit)
    return Error::success(); // a pending kernel may still use it
  return Device.free(DevPtr, TARGET_ALLOC_DEVICE);
}

/// Is there, in \p Image, a kernel with a cross-team reduction whose code
/// was not built with the fork's DeviceRTL? nvptx without -foffload-lto links
/// the DeviceRTL bitcode into every translation unit, so the ABI global
/// (pulled in at device link by fork-built units only) proves only that some
/// unit was built by the fork, not that every kernel's unit was: a unit built
/// against a stock DeviceRTL would read the zero-copy layout as upstream's
/// (misaligned stores through the tagged pointer).
///
/// The proof is per kernel: the fork's kle::initTeam, which every kernel with
/// a cross-team reduction runs, loads the ABI global, so the linked cubin
/// keeps a relocation against KLE_ABI_VERSION_SYMBOL in that kernel's own
/// text section (.rela.text.<kernel>), or, where it was not inlined (-O0),
/// in the text of a function the kernel calls (followed through the call
/// relocations, by section). A kernel whose reduction needs the
/// KLE (its environment's ReductionDataSize and ReductionBufferLength, read
/// from the image) and whose text has no such relocation answers yes. This
/// holds whatever mix built the image: several units, static libraries, a
/// target region in a header instantiated by a fork unit and a stock unit,
/// even the same weak kernel defined by both, of which nvlink keeps one.
/// It is conservative for anything the parse cannot establish. AMDGPU
/// images link the DeviceRTL once at device link, so one global covers the
/// whole image. Not ELF: false.
static bool imageHasStockReductionKernel(MemoryBufferRef Buffer) {
  auto ObjOrErr = object::ELF64LEObjectFile::create(Buffer);
  if (!ObjOrErr) {
    consumeError(ObjOrErr.takeError());
    return false;
  }
  const object::ELF64LEObjectFile &Obj = *ObjOrErr;
  if (Obj.getELFFile().getHeader().e_machine != ELF::EM_CUDA)
    return false;

  // The call graph between text sections, and the sections whose code
  // loads the ABI global, both keyed by section index: local functions of
  // different units (each unit's internal DeviceRTL copy) may share a name,
  // never a section.
  DenseMap<uint64_t, SmallVector<uint64_t, 4>> Callees;
  DenseSet<uint64_t> LoadsGlobal;
  for (const object::SectionRef &RelSec : Obj.sections()) {
    Expected<object::section_iterator> TargetOrErr =
        RelSec.getRelocatedSection();
    if (!TargetOrErr) {
      consumeError(TargetOrErr.takeError());
      continue;
    }
    if (*TargetOrErr == Obj.section_end() || !(*TargetOrErr)->isText())
      continue;
    const uint64_t From = (*TargetOrErr)->getIndex();
    for (const object::RelocationRef &Reloc : RelSec.relocations()) {
      object::symbol_iterator Sym = Reloc.getSymbol();
      if (Sym == Obj.symbol_end())
        continue;
      Expected<StringRef> NameOrErr = Sym->getName();
      Expected<object::section_iterator> SymSecOrErr = Sym->getSection();
      if (!NameOrErr || !SymSecOrErr) {
        if (!NameOrErr)
          consumeError(NameOrErr.takeError());
        if (!SymSecOrErr)
          consumeError(SymSecOrErr.takeError());
        continue;
      }
      if (*NameOrErr == KLE_ABI_VERSION_SYMBOL)
        LoadsGlobal.insert(From);
      else if (*SymSecOrErr != Obj.section_end() && (*SymSecOrErr)->isText())
        Callees[From].push_back((*SymSecOrErr)->getIndex());
    }
  }
  // Does the code of text section \p Start, or of a function it calls
  // (without -O2 the DeviceRTL's kle::initTeam is not inlined into the
  // kernel), load the ABI global?
  auto ReachesGlobal = [&](uint64_t Start) {
    SmallVector<uint64_t, 16> Work = {Start};
    DenseSet<uint64_t> Seen = {Start};
    while (!Work.empty()) {
      uint64_t Sec = Work.pop_back_val();
      if (LoadsGlobal.contains(Sec))
        return true;
      for (uint64_t Next : Callees.lookup(Sec))
        if (Seen.insert(Next).second)
          Work.push_back(Next);
    }
    return false;
  };
  // Kernel name -> the index of its text section.
  StringMap<uint64_t> KernelText;
  for (const object::ELFSymbolRef &Sym : Obj.symbols()) {
    Expected<StringRef> NameOrErr = Sym.getName();
    Expected<object::SymbolRef::Type> TypeOrErr = Sym.getType();
    Expected<object::section_iterator> SecOrErr = Sym.getSection();
    if (!NameOrErr || !TypeOrErr || !SecOrErr) {
      if (!NameOrErr)
        consumeError(NameOrErr.takeError());
      if (!TypeOrErr)
        consumeError(TypeOrErr.takeError());
      if (!SecOrErr)
        consumeError(SecOrErr.takeError());
      continue;
    }
    if (*TypeOrErr == object::SymbolRef::ST_Function &&
        NameOrErr->starts_with("__omp_offloading_") &&
        *SecOrErr != Obj.section_end())
      KernelText[*NameOrErr] = (*SecOrErr)->getIndex();
  }

  constexpr StringRef Suffix = "_kernel_environment";
  for (const object::ELFSymbolRef &Sym : Obj.symbols()) {
    Expected<StringRef> NameOrErr = Sym.getName();
    if (!NameOrErr) {
      consumeError(NameOrErr.takeError());
      return true;
    }
    StringRef Kernel = *NameOrErr;
    if (!Kernel.starts_with("__omp_offloading_") || !Kernel.consume_back(Suffix))
      continue;
    // The environment's initial bytes: does this kernel's reduction read the
    // KLE?
    Expected<object::section_iterator> SecOrErr = Sym.getSection();
    Expected<uint64_t> ValueOrErr = Sym.getValue();
    if (!SecOrErr || !ValueOrErr) {
      if (!SecOrErr)
        consumeError(SecOrErr.takeError());
      if (!ValueOrErr)
        consumeError(ValueOrErr.takeError());
      return true;
    }
    if (*SecOrErr == Obj.section_end())
      return true;
    Expected<StringRef> ContentsOrErr = (*SecOrErr)->getContents();
    if (!ContentsOrErr) {
      consumeError(ContentsOrErr.takeError());
      return true;
    }
    uint64_t Offset = *ValueOrErr - (*SecOrErr)->getAddress();
    if (Offset + sizeof(KernelEnvironmentTy) > ContentsOrErr->size())
      return true;
    KernelEnvironmentTy Env;
    std::memcpy(&Env, ContentsOrErr->data() + Offset, sizeof(Env));
    if (!Env.Configuration.ReductionDataSize ||
        !Env.Configuration.ReductionBufferLength)
      continue; // gets the ~0 sentinel under every transport
    auto Text = KernelText.find(Kernel);
    if (Text == KernelText.end() || !ReachesGlobal(Text->second))
      return true;
  }
  return false;
}

bool KLETransportTy::imageSpeaksForkABI(DeviceImageTy &Image) {
  // Lock-free for the common case, every launch from the one image that last
  // answered yes or no (forgetImage() clears them when it is unloaded).
  if (LastForkABIImage.load(std::memory_order_acquire) == &Image)
    return true;
  if (LastStockABIImage.load(std::memory_order_acquire) == &Image)
    return false;
  std::lock_guard<std::mutex> Lock(ImageMutex);
  auto [It, Inserted] = ImageABI.try_emplace(&Image, false);
  if (Inserted) {
    It->second = [&] {
      GenericGlobalHandlerTy &Handler = Device.Plugin.getGlobalHandler();
      if (!Handler.isSymbolInImage(Device, Image, KLE_ABI_VERSION_SYMBOL))
        return false;
      if (imageHasStockReductionKernel(Image.getMemoryBuffer()))
        return false; // not provable for every kernel: the upstream layout
      uint32_t Version = 0;
      GlobalTy Global(KLE_ABI_VERSION_SYMBOL, sizeof(Version), &Version);
      if (Error Err = Handler.readGlobalFromImage(Device, Image, Global)) {
        consumeError(std::move(Err));
        return false;
      }
      return Version == KLE_ABI_VERSION;
    }();
  }
  // Published only once the answer is final.
  (It->second ? LastForkABIImage : LastStockABIImage)
      .store(&Image, std::memory_order_release);
  return It->second;
}

void KLETransportTy::forgetImage(const DeviceImageTy &Image) {
  std::lock_guard<std::mutex> Lock(ImageMutex);
  ImageABI.erase(&Image);
  for (auto *Last : {&LastForkABIImage, &LastStockABIImage}) {
    const DeviceImageTy *Expected = &Image;
    Last->compare_exchange_strong(Expected, nullptr, std::memory_order_acq_rel);
  }
}

namespace {
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

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepare(const GenericKernelTy &Kernel,
                        const KernelEnvironmentTy &KernelEnvironment,
                        uint32_t Version, KLERecordReplayTy RecordReplay,
                        AsyncInfoWrapperTy &AsyncInfoWrapper,
                        KLELaunchTy &Launch) {
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  PathTimerTy Timer(TimePath && Config.ReductionDataSize &&
                        Config.ReductionBufferLength,
                    PathNs);
  return prepareImpl(Kernel, KernelEnvironment, Version, RecordReplay,
                     AsyncInfoWrapper, Launch);
}

void KLETransportTy::finish(KLELaunchTy &Launch,
                            AsyncInfoWrapperTy &AsyncInfoWrapper,
                            bool Enqueued) {
  // Only launches with a KLE count (prepare() timed the same ones).
  PathTimerTy Timer(TimePath && Launch.HasKLE, PathNs);
  finishImpl(Launch, AsyncInfoWrapper, Enqueued);
}

Error KLETransportTy::releaseCompleted(ArrayRef<uint64_t> SlotIds) {
  PathTimerTy Timer(TimePath && !SlotIds.empty(), PathNs);
  return releaseCompletedImpl(SlotIds);
}

namespace {
/// A slot's host-private bytes after the KLE: its cached reduction buffer.
/// The device reads only the KLE (zerocopy), and staged copies only the KLE,
/// so these bytes never leave the host. Zero in a new slab (no buffer yet).
struct SlotBufferTy {
  void *Ptr;
  uint64_t Bytes;
};
constexpr size_t SlotBufferOffset = 64;
static_assert(SlotBufferOffset >= sizeof(KernelLaunchEnvironmentTy) &&
                  SlotBufferOffset + sizeof(SlotBufferTy) <= 128,
              "the slot's cached buffer must follow the KLE inside the slot");
/// Resident: the ReductionBuffer that the slot's device KLE holds (nullptr:
/// never written, or a write failed). Host-private, after SlotBufferTy.
constexpr size_t ResidentStateOffset = SlotBufferOffset + sizeof(SlotBufferTy);
static_assert(ResidentStateOffset + sizeof(void *) <= 128,
              "the resident state must fit in the slot");
void *&residentBuffer(const kle::KLESlotTy &Slot) {
  return *reinterpret_cast<void **>(static_cast<char *>(Slot.HostPtr) +
                                    ResidentStateOffset);
}
/// Zerocopy: non-zero once the zeroing of the slot's counter block was
/// queued (zeroSlotCounters). Host-private, after the resident state.
constexpr size_t CountersZeroedOffset = ResidentStateOffset + sizeof(void *);
static_assert(CountersZeroedOffset + sizeof(uint64_t) <= 128,
              "the counter state must fit in the slot");
uint64_t &countersZeroed(const kle::KLESlotTy &Slot) {
  return *reinterpret_cast<uint64_t *>(static_cast<char *>(Slot.HostPtr) +
                                       CountersZeroedOffset);
}
/// KLECounterBytes of pinned zeros inside the slot, right after the KLE: no
/// transport ever writes these bytes (each writes only the 16-byte KLE), and
/// the pool creates slots zeroed, so they stay zero for the slab's life and
/// can be the source of a stream-ordered copy while the slot is reused.
constexpr size_t ZeroSourceOffset = sizeof(KernelLaunchEnvironmentTy);
static_assert(ZeroSourceOffset + kle::KLECounterBytes <= SlotBufferOffset,
              "the zero source must lie between the KLE and the host state");
const void *zeroSource(const kle::KLESlotTy &Slot) {
  return static_cast<const char *>(Slot.HostPtr) + ZeroSourceOffset;
}
} // namespace

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareImpl(const GenericKernelTy &Kernel,
                            const KernelEnvironmentTy &KernelEnvironment,
                            uint32_t Version, KLERecordReplayTy RecordReplay,
                            AsyncInfoWrapperTy &AsyncInfoWrapper,
                            KLELaunchTy &Launch) {
  Launch = KLELaunchTy();
  // As upstream: ctor/dtor kernels and replays use no (new) KLE, older
  // compilers emit no dyn_ptr, and kernels without a cross-team reduction get
  // the ~0 sentinel.
  if (RecordReplay == KLERecordReplayTy::Replaying ||
      Version < OMP_KERNEL_ARG_MIN_VERSION_WITH_DYN_PTR)
    return nullptr;
  const ConfigurationEnvironmentTy &Config = KernelEnvironment.Configuration;
  if (!Config.ReductionDataSize || !Config.ReductionBufferLength)
    return reinterpret_cast<KernelLaunchEnvironmentTy *>(~0);

  const uint64_t BufferBytes =
      uint64_t(Config.ReductionDataSize) * Config.ReductionBufferLength;
  Launch.HasKLE = true;

  // An image that cannot take zerocopy gets copy, counted as ImageABI.
  // Under auto this happens only on a device without resident's pinned path
  // (auto prefers resident, which every DeviceRTL reads).
  KLETransportChoiceTy Choice = chooseKLETransport(
      benchKLETransport(DefaultKind), RecordReplay, ZeroCopySupported,
      StagedSupported, [&] { return imageSpeaksForkABI(Kernel.getImage()); });
  if (Choice.Fallback)
    Pool->noteFallback(*Choice.Fallback);
  KLETransportKindTy Want = Choice.Kind;

  if (Want != KLETransportKindTy::Copy) {
    kle::KLETakeResultTy Taken = Pool->take();
#ifdef KLE_SEED_POOL_RACE
    ++kle_seed_pool_race; // test-only race (scripts/sanitizer-check.sh seeded)
#endif
    if (!Taken)
      Want = KLETransportKindTy::Copy; // counted by the pool
    else
      Launch.Slot = *Taken;
  }

  auto BufferOrErr = reductionBuffer(
      Launch.Slot.isValid() ? &Launch.Slot : nullptr, BufferBytes,
      AsyncInfoWrapper);
  if (!BufferOrErr) {
    // Nothing reads the slot yet: return it.
    if (Launch.Slot.isValid())
      consumeError(Pool->release(Launch.Slot));
    Launch.Slot = kle::KLESlotTy();
    return BufferOrErr.takeError();
  }
  void *ReductionBuffer = *BufferOrErr;

  if (Want == KLETransportKindTy::ZeroCopy) {
    // The counters are zero at the kernel's start: zeroed on this queue ahead
    // of it at the slot's first use, and reset by the last team of every
    // launch since.
    if (!countersZeroed(Launch.Slot))
      if (Error Err = zeroSlotCounters(Launch, AsyncInfoWrapper)) {
        // The copy may have been queued: the slot waits for the queue.
        finishImpl(Launch, AsyncInfoWrapper, /*Enqueued=*/true);
        return std::move(Err);
      }
    // The slot's previous reader completed before it was released, so it can
    // be rewritten now.
    kle::encodeDeviceCountersKLE(Launch.Slot.HostPtr, ReductionBuffer,
                                 Launch.Slot.DeviceCounters);
    Launch.Kind = KLETransportKindTy::ZeroCopy;
    count(Launch.Kind);
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE transport=zerocopy slot=" DPxMOD " counters=" DPxMOD
         " ReductionBuffer=" DPxMOD "\n",
         DPxPTR(Launch.Slot.DevicePtr), DPxPTR(Launch.Slot.DeviceCounters),
         DPxPTR(ReductionBuffer));
    return static_cast<KernelLaunchEnvironmentTy *>(Launch.Slot.DevicePtr);
  }

  if (Want == KLETransportKindTy::Resident) {
    auto KLEOrErr = prepareResident(Launch, AsyncInfoWrapper, ReductionBuffer);
    // On an error the write may still have been queued: the slot then waits
    // for the queue like a launched one.
    if (!KLEOrErr)
      finishImpl(Launch, AsyncInfoWrapper, /*Enqueued=*/true);
    return KLEOrErr;
  }

  auto KLEOrErr = prepareCopy(Launch, AsyncInfoWrapper, ReductionBuffer,
                              Launch.Slot.isValid() ? &Launch.Slot : nullptr);
  // On an error a staged transfer may still have been queued: the slot then
  // waits for the queue like a launched one.
  if (!KLEOrErr)
    finishImpl(Launch, AsyncInfoWrapper, /*Enqueued=*/true);
  return KLEOrErr;
}


Expected<void *>
KLETransportTy::reductionBuffer(const kle::KLESlotTy *Slot, uint64_t Bytes,
                                AsyncInfoWrapperTy &AsyncInfoWrapper) {
  // A slot keeps its buffer only within the per-slot and the total bounds;
  // the total is reserved before allocating, so it holds exactly however
  // many slots grow at once. The slot is ours until its launch completes:
  // no lock for its bytes.
  SlotBufferTy *Cached =
      Slot && Bytes <= SlotBufferLimit
          ? reinterpret_cast<SlotBufferTy *>(static_cast<char *>(Slot->HostPtr) +
                                             SlotBufferOffset)
          : nullptr;
  if (Cached && Cached->Ptr && Cached->Bytes >= Bytes)
    return Cached->Ptr;
  bool Reserved = false;
  if (Cached) {
    uint64_t Now = SlotBufferBytesNow.load(std::memory_order_relaxed);
    while (Now + Bytes <= SlotBufferTotalLimit &&
           !SlotBufferBytesNow.compare_exchange_weak(
               Now, Now + Bytes, std::memory_order_relaxed))
      ;
    Reserved = Now + Bytes <= SlotBufferTotalLimit;
  }
  auto BufferOrErr = Device.dataAlloc(int64_t(Bytes), /*HostPtr=*/nullptr,
                                      TargetAllocTy::TARGET_ALLOC_DEVICE);
  if (!BufferOrErr) {
    if (Reserved)
      SlotBufferBytesNow.fetch_sub(Bytes, std::memory_order_relaxed);
    return BufferOrErr.takeError();
  }
  if (!Reserved) {
    // Per launch, as copy: freed after synchronization.
    AsyncInfoWrapper.freeAllocationAfterSynchronization(*BufferOrErr);
    return *BufferOrErr;
  }
  void *Old = Cached->Ptr;
  {
    std::lock_guard<std::mutex> Lock(SlotBuffersMutex);
    SlotBuffers.insert(*BufferOrErr);
    SlotBufferBytes += Bytes;
    if (Old) {
      SlotBuffers.erase(Old);
      SlotBufferBytes -= Cached->Bytes;
    }
    SlotBufferBytesPeak = std::max(SlotBufferBytesPeak, SlotBufferBytes);
  }
  const uint64_t OldBytes = Old ? Cached->Bytes : 0;
  *Cached = {*BufferOrErr, Bytes};
  SlotBufferBytesNow.fetch_sub(OldBytes, std::memory_order_relaxed);
  // The launch that last used the old buffer completed before the slot was
  // released to us. A failed free loses the old buffer, not this launch.
  if (Old)
    if (auto Err = Device.dataDelete(Old, TargetAllocTy::TARGET_ALLOC_DEVICE))
      fprintf(stderr,
              "omptarget warning: KLE: could not free a slot's old reduction "
              "buffer: %s\n",
              toString(std::move(Err)).c_str());
  return *BufferOrErr;
}

uint64_t KLETransportTy::reclaimSlotBuffers() {
  if (!Pool || Deinitialized.load(std::memory_order_acquire) ||
      SlotBufferBytesNow.load(std::memory_order_relaxed) == 0)
    return 0;
  uint64_t Freed = 0;
  Pool->forEachFreeSlot([&](const kle::KLESlotTy &Slot) {
    auto *Cached = reinterpret_cast<SlotBufferTy *>(
        static_cast<char *>(Slot.HostPtr) + SlotBufferOffset);
    if (!Cached->Ptr)
      return;
    void *Buffer = Cached->Ptr;
    const uint64_t Bytes = Cached->Bytes;
    // The slot's device KLE (resident) still names the buffer: forget that,
    // so the slot's next launch writes its new buffer's address first.
    if (residentBuffer(Slot) == Buffer)
      residentBuffer(Slot) = nullptr;
    *Cached = {nullptr, 0};
    {
      std::lock_guard<std::mutex> Lock(SlotBuffersMutex);
      SlotBuffers.erase(Buffer);
      SlotBufferBytes -= Bytes;
    }
    SlotBufferBytesNow.fetch_sub(Bytes, std::memory_order_relaxed);
    // The slot is free: the launch that last used the buffer completed.
    if (auto Err =
            Device.dataDelete(Buffer, TargetAllocTy::TARGET_ALLOC_DEVICE)) {
      static std::once_flag Warned;
      std::call_once(Warned, [&] {
        fprintf(stderr,
                "omptarget warning: KLE: could not free a slot's reduction "
                "buffer after a failed device allocation: %s\n",
                toString(std::move(Err)).c_str());
      });
      consumeError(std::move(Err));
      return;
    }
    Freed += Bytes;
  });
  if (Freed)
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE: a device allocation failed; gave back %" PRIu64
         " bytes of reduction buffers kept by free slots\n",
         Freed);
  return Freed;
}

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareCopy(KLELaunchTy &Launch,
                            AsyncInfoWrapperTy &AsyncInfoWrapper,
                            void *ReductionBuffer,
                            const kle::KLESlotTy *Staging) {
  auto AllocOrErr = Device.dataAlloc(sizeof(KernelLaunchEnvironmentTy),
                                     /*HostPtr=*/nullptr,
                                     TargetAllocTy::TARGET_ALLOC_DEVICE);
  if (!AllocOrErr)
    return AllocOrErr.takeError();
  AsyncInfoWrapper.freeAllocationAfterSynchronization(*AllocOrErr);

  // Upstream layout: counters zero and in the (device) KLE itself.
  KernelLaunchEnvironmentTy *Source;
  if (Staging) {
    Source = static_cast<KernelLaunchEnvironmentTy *>(Staging->HostPtr);
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

Error KLETransportTy::zeroSlotCounters(KLELaunchTy &Launch,
                                       AsyncInfoWrapperTy &AsyncInfoWrapper) {
  const kle::KLESlotTy &Slot = Launch.Slot;
  Launch.WroteSlot = true;
  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport=zerocopy counters=" DPxMOD " zeroed (first use)\n",
       DPxPTR(Slot.DeviceCounters));
  if (Error Err = Device.dataSubmit(Slot.DeviceCounters, zeroSource(Slot),
                                    kle::KLECounterBytes, AsyncInfoWrapper))
    return Err;
  countersZeroed(Slot) = 1;
  return Error::success();
}

Expected<KernelLaunchEnvironmentTy *>
KLETransportTy::prepareResident(KLELaunchTy &Launch,
                                AsyncInfoWrapperTy &AsyncInfoWrapper,
                                void *ReductionBuffer) {
  const kle::KLESlotTy &Slot = Launch.Slot;
  // The device block is at least 16 bytes (CounterBlockSize). Its first
  // write (the slot's first use: residentBuffer is null in a new slab) puts
  // the whole KLE there, counters zero; the last team of every teams
  // reduction leaves them zero, so afterwards only ReductionBuffer can differ
  // from what it holds.
  static_assert(sizeof(KernelLaunchEnvironmentTy) == kle::KLESize,
                "resident writes upstream's 16-byte KLE");
  auto *DeviceKLE = static_cast<KernelLaunchEnvironmentTy *>(Slot.DeviceCounters);
  Launch.Kind = KLETransportKindTy::Resident;
  count(Launch.Kind);
  void *&Written = residentBuffer(Slot);
  if (Written == ReductionBuffer) {
    INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
         "KLE transport=resident KLE=" DPxMOD " ReductionBuffer=" DPxMOD
         " (unchanged)\n",
         DPxPTR(DeviceKLE), DPxPTR(ReductionBuffer));
    return DeviceKLE;
  }
  // The slot is ours until this launch completes, and its previous reader
  // completed before it was released: rewrite its pinned bytes as the DMA
  // source and queue the copy ahead of the kernel on the launch's queue.
  auto *Source = static_cast<KernelLaunchEnvironmentTy *>(Slot.HostPtr);
  *Source = KernelLaunchEnvironmentTy();
  Source->ReductionBuffer = ReductionBuffer;
  Written = nullptr; // until the copy is queued
  Launch.WroteSlot = true;
  ResidentWrites.fetch_add(1, std::memory_order_relaxed);
  INFO(OMP_INFOTYPE_DATA_TRANSFER, Device.getDeviceId(),
       "KLE transport=resident KLE=" DPxMOD " ReductionBuffer=" DPxMOD
       " (written)\n",
       DPxPTR(DeviceKLE), DPxPTR(ReductionBuffer));
  if (auto Err = Device.dataSubmit(DeviceKLE, Source,
                                   sizeof(KernelLaunchEnvironmentTy),
                                   AsyncInfoWrapper))
    return std::move(Err);
  Written = ReductionBuffer;
  return DeviceKLE;
}

void KLETransportTy::finishImpl(KLELaunchTy &Launch,
                                AsyncInfoWrapperTy &AsyncInfoWrapper,
                                bool Enqueued) {
  if (!Launch.Slot.isValid())
    return;
  if (!Enqueued && !Launch.WroteSlot &&
      (Launch.Kind == KLETransportKindTy::ZeroCopy ||
       Launch.Kind == KLETransportKindTy::Resident)) {
    // Nothing that reads the slot was enqueued.
    consumeError(Pool->release(Launch.Slot));
  } else {
    // The launch (zerocopy, resident) or the transfer out of the slot
    // (staged, a resident write) is in the queue: the slot waits for the
    // queue to complete.
    // The first slot of a queue goes into the async info's lock-free word
    // (one launch per queue until it completes: no lock on the launch path);
    // a queue with several pending slots keeps the rest under its mutex.
    // acq_rel pairs with synchronize()/queryAsync()'s exchange, so the
    // thread that returns the slot to the pool has seen this one's writes.
    __tgt_async_info &AsyncInfo = *AsyncInfoWrapper;
    uint64_t None = kle::KLESlotTy::InvalidId;
    if (!AsyncInfo.KLESlotId.compare_exchange_strong(
            None, Launch.Slot.Id, std::memory_order_acq_rel)) {
      std::lock_guard<std::mutex> Lock(AsyncInfo.Mutex);
      AsyncInfo.KLESlotIds.push_back(Launch.Slot.Id);
    }
  }
  Launch.Slot = kle::KLESlotTy();
}

Error KLETransportTy::releaseCompletedImpl(ArrayRef<uint64_t> SlotIds) {
  // After deinit the slabs are gone already; a late synchronize has nothing
  // left to return.
  if (SlotIds.empty() || Deinitialized.load(std::memory_order_acquire))
    return Error::success();
  Error Result = Error::success();
#ifdef KLE_SEED_POOL_RACE
  ++kle_seed_pool_race; // test-only race (scripts/sanitizer-check.sh seeded)
#endif
  for (uint64_t Id : SlotIds)
    Result = joinErrors(std::move(Result), Pool->release(Id));
  return Result;
}
