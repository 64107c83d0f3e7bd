//===- kle_contract.h - The KLE contract both stand-ins check ---*- C++ -*-===//
//
// TEST ONLY.  The kernel launch environment (KLE / dyn_ptr) contract, once
// for every front: the transport KLE checks expect, one set of named checks
// (table in ../README.md, "KLE contract checks") and one report format,
//
//   <tag>: VIOLATION launch #<n>: <id> <name>: <text>
//   <tag>: VIOLATION op: <id> <name>: <text>      (a copy, not a launch)
//
// and the rules themselves, in terms of what a front knows at its API
// events: the memory class of an address, the bytes it holds, whether the
// copy that delivers them was enqueued and has completed.  A front keeps
// its API and its ordering rules (which write is ordered before which
// launch; HSA's packet and kernarg checks) and calls these at its events.
//
// Thread safety: every function may be called from any thread; InFlight
// takes no lock of its own (the caller's lock guards it).
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_KLE_CONTRACT_H
#define KLE_STANDIN_KLE_CONTRACT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace standin {

/// The transport the KLE checks expect (`KLE_STANDIN_EXPECT`, parsed once by
/// init into Config::Expect).
enum class Transport { Any, ZeroCopy, Copy, Staged, Resident };
/// "any", "zerocopy", "copy", "staged", "resident".
const char *transportName(Transport T);
/// Parses one of those names; returns false (T unchanged) otherwise.
bool parseTransport(const std::string &Name, Transport &T);

namespace contract {

/// The named checks.  Each has one id (the enumerator) and one short name.
enum class Check {
  A1, ///< kle-bytes: the KLE reads at start and end what the launch published
  A2, ///< staging-source: a copy's host source unchanged from enqueue to DMA
  B,  ///< lifetime: nothing a pending launch or copy uses is freed
  C,  ///< placement: dyn_ptr's memory suits the expected transport
  W,  ///< arrival: a device KLE's copy enqueued before the launch, done at start
  Z,  ///< counters: device counters 8 live device bytes, zero at kernel start
  L,  ///< layout: resident KLEs keep upstream's layout with zero counters
  D,  ///< reduction-buffer: the KLE's buffer is big enough and live
  E,  ///< kle-present: a kernel with a cross-team reduction gets a KLE
  X,  ///< exclusive: no two in-flight launches share a KLE or counter block
};
const char *checkId(Check C);
const char *checkName(Check C);

/// "VIOLATION launch #<Launch>: <id> <name>: <text>" via core violation().
void report(uint64_t Launch, Check C, const char *Fmt, ...)
    __attribute__((format(printf, 3, 4)));
/// "VIOLATION op: <id> <name>: <text>" via core opViolation().
void reportOp(Check C, const char *Fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// The transport the checks expect (cfg().Expect).
Transport expected();

/// What the placement rule needs to know of the memory an address lies in.
enum class Place {
  Device,   ///< device memory
  HostPinned, ///< pinned (CUDA) or fine-grained (HSA) host memory
  Other,    ///< other device-visible memory (managed, module globals,
            ///< coarse-grained host)
  Kernarg,  ///< a kernarg pool / segment
  None,     ///< not live device-visible memory (pageable, freed, code)
};

/// The fields of an LLVM 22 KLE the contract reads (Shared/KLEAbi.h): word 0
/// (in-KLE counters, or the address of device counters when bit 0 of word 1
/// is set), word 1 (the reduction buffer, that tag bit cleared).
struct KleWords {
  uint64_t Word0 = 0;
  uintptr_t ReductionBuffer = 0;
  bool DeviceCounters = false;
};
/// Decodes the first 16 bytes at \p P.
KleWords decode(const uint8_t *P);

/// True if a kernel with this reduction (bytes per team x teams) needs a KLE.
inline bool needsKle(uint64_t DataSize, uint64_t Length) {
  return DataSize > 0 && Length > 0;
}

/// E: \p Needs (needsKle) but no KLE was passed (dyn_ptr \p Dyn).
void checkPresent(uint64_t Launch, const char *Kernel, bool Needs, bool HasKle,
                  uintptr_t Dyn);

/// The KLE's address in dyn_ptr \p Raw of a launch that has a KLE: bit 0
/// (the host flag, Shared/KLEAbi.h) cleared; \p Flagged says whether it was
/// set.
uintptr_t kleAddress(uintptr_t Raw, bool &Flagged);

/// C: the host flag is set exactly when the KLE is in host memory (\p P).
void checkHostFlag(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                   bool Flagged, Place P, const char *KindName);

/// C: dyn_ptr \p Dyn in memory of class \p P (front's kind name \p KindName)
/// for the expected transport: device for copy, staged and resident; pinned
/// or fine-grained host for zerocopy; any live device-visible memory for
/// any.  Returns false if it reported.
bool checkPlacement(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                    Place P, const char *KindName);
/// C, staged: the copy that filled a device KLE read from a pinned staging
/// slot (\p Src of class \p P); nothing for other transports.
void checkStagedSource(uint64_t Launch, const char *Kernel, Place P,
                       const char *KindName);
/// C, zerocopy: the slot is 128-byte aligned and carries the device-counters
/// tag (HSA's slot layout; a front calls it where it applies).
void checkZeroCopySlot(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                       const KleWords &W);

/// W: a copy into the device KLE was enqueued before the launch
/// (\p Enqueued); \p How names the ordering the front requires.
void checkArrivalEnqueued(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                          bool Enqueued, const char *How);
/// W: the copy (\p What, e.g. "op #7") that delivers the device KLE had
/// completed when the kernel started (\p Completed).
void checkArrivalCompleted(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                           const char *What, bool Completed);

/// A1: the \p N KLE bytes at \p Dyn (\p KindName memory) at \p Phase ("start"
/// or "end") are \p Expected.  Returns false if it reported.
bool checkUnchanged(uint64_t Launch, const char *Kernel, const char *Phase,
                    uintptr_t Dyn, const char *KindName,
                    const uint8_t *Expected, const uint8_t *Now, size_t N);

/// Z, at kernel start.  Device counters (W.DeviceCounters): \p P is the class
/// of the 8 bytes at W.Word0 (None: not live), \p Value what they hold.
/// In-KLE counters: W.Word0 must be zero.
void checkCounters(uint64_t Launch, const char *Kernel, const KleWords &W,
                   Place P, const char *KindName, uint64_t Value);

/// L: under resident, the KLE keeps upstream's layout (untagged) with zero
/// in-KLE counters.
void checkResidentLayout(uint64_t Launch, const char *Kernel,
                         const KleWords &W);

/// D: the reduction buffer \p Buf must be \p Need bytes of live device
/// memory (\p Ok: the front resolved it so).
void checkReductionBuffer(uint64_t Launch, const char *Kernel, uintptr_t Buf,
                          size_t Need, bool Ok);

/// B: \p What (e.g. "device memory 0x..") is released by \p By while launch
/// \p Launch is pending (\p Where: e.g. " on stream 3", may be "").
void reportFreedWhilePending(uint64_t Launch, const char *What,
                             const char *By, const char *Where);
/// B: at \p Phase the launch finds \p What (e.g. "KLE 0x..") freed.
void reportFreedAt(uint64_t Launch, const char *Phase, const char *What);
/// B: a copy (op \p Op) reads or writes (\p Verb) freed memory, or is pending
/// when it is freed.
void reportOpOnFreed(uint64_t Op, const char *Text);

/// A2: the source bytes of a copy, as enqueued.
struct SourceWatch {
  std::vector<uint8_t> Bytes; ///< empty: not watched
  bool watched() const { return !Bytes.empty(); }
};
/// Small host-to-device copies from pinned host memory are watched.
constexpr size_t WatchMax = 4096;
/// Snapshot of \p N bytes at \p Src (the caller decides whether the copy is
/// one to watch and hides the racy read from ThreadSanitizer).
SourceWatch watchSource(const uint8_t *Src, size_t N);
/// True if the bytes at \p Now differ from the snapshot.
bool sourceChanged(const SourceWatch &W, const uint8_t *Now);

/// X: who holds each KLE / counter block in flight (guarded by the caller).
class InFlight {
public:
  /// Records \p Launch as holder of \p Addr; reports X if another launch
  /// holds it (\p What: "KLE", "counter block").
  void claim(uint64_t Launch, uintptr_t Addr, const char *What);
  /// Drops \p Addr if \p Launch holds it.
  void release(uint64_t Launch, uintptr_t Addr);
  /// Drops every entry of \p Launch.
  void forget(uint64_t Launch);

private:
  std::map<uintptr_t, uint64_t> Holder;
};

} // namespace contract
} // namespace standin

#endif // KLE_STANDIN_KLE_CONTRACT_H
