//===- core.h - Driver-independent core of the CPU driver stand-ins -------===//
//
// TEST ONLY.  What every driver stand-in (cuda/, hsa/) needs whatever the
// driver API: configuration from the environment, greppable output, contract
// violations and the exit status they force, fault injection by entry point,
// calls per entry point, the address-ordered memory table with a PROT_NONE
// device address range and a separate poisoned backing store.  The delayed
// workers' shared parts (random delays, wake-up, stop and join) are in
// worker.h.  A front calls into this; the core never knows a driver API.
//
// Thread safety: every function here may be called from any thread at any
// time, including from the front's own worker threads and during exit.
// State is heap allocated and never destroyed (the plugin calls into the
// stand-in from its own destructors, possibly after ours ran).
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_CORE_H
#define KLE_STANDIN_CORE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kle_contract.h"

namespace standin {

/// One `KLE_STANDIN_FAIL=entry:N:code` item: the Nth call (1-based) of Entry, or
/// with OrLater the Nth and every later one, returns Code.
struct Fault {
  std::string Entry;
  uint64_t N = 0;
  bool OrLater = false;
  int Code = 0;
};

/// The settings every front shares.  Environment variables are read once,
/// by core::init, as `KLE_STANDIN_<NAME>` (the same name for every front):
///   DELAY_US=min:max   random delay (microseconds) before each queued
///                      operation runs (default 0:50)
///   KERNEL_US=n        simulated kernel run time between start and end checks
///   EXPECT=any|zerocopy|copy|staged|resident  the transport the KLE checks
///                      expect (kle_contract.h)
///   FAIL=entry:N[+]:code[,...]        fault injection (see Fault)
///   STATS=1            print calls per entry point at shutdown and at exit
///   STATS_FILE=path    also write "<entry> <n>" lines there
///   EXIT_CODE=n        exit status forced after violations (default 97)
///   VERBOSE=1          log every launch
///   SEED=n             seed of the delay generator
///   <EnvPrefix>BREAK=a,b,...  negative controls: make the stand-in misbehave
///                      on purpose (front-defined names, so the front's own
///                      prefix; see breaks())
struct Config {
  uint64_t DelayMin = 0, DelayMax = 50; ///< microseconds
  uint64_t KernelUs = 0;                ///< microseconds
  Transport Expect = Transport::Any; ///< EXPECT, parsed once
  std::vector<Fault> Faults;
  bool Stats = false;
  std::string StatsFile;
  int ExitCode = 97;
  bool Verbose = false;
  uint64_t Seed = 12345;
  std::set<std::string> Breaks;
};

/// Parses a front's status name or number ("HSA_STATUS_ERROR", "4096",
/// "0x1000") into its integer value; returns false if unknown.
using StatusParser = bool (*)(const std::string &Text, int &Out);
/// Maps an entry point's name to the name faults and call counts use
/// (e.g. strips CUDA's `_v2`); may be null (identity).
using BaseNamer = std::string (*)(const std::string &Name);

/// Reads the environment once.  \p Tag prefixes every output line
/// ("kle-hsa-standin"), \p EnvPrefix the front's own variables
/// ("KLE_HSA_STANDIN_": DEVICES, BREAK and what the front reads itself).
/// Malformed values print one warning line naming the variable and keep the
/// default.  Idempotent: later calls return the first configuration.
const Config &init(const char *Tag, const char *EnvPrefix, StatusParser Parse,
                   BaseNamer Namer);
/// The configuration (init must have run).
const Config &cfg();
/// True if BREAK lists \p Name (a negative control is on).
bool broken(const char *Name);
/// getenv of `KLE_STANDIN_<Name>` (a knob every front shares), or nullptr.
const char *env(const char *Name);
/// getenv of `<EnvPrefix><Name>` (a knob of this front only), or nullptr.
const char *frontEnv(const char *Name);
/// At the final report (once; later calls do nothing): one "note:" line per
/// FAIL item that injected nothing, because its entry point was never called
/// (misspelled, or not reached) or was called fewer than N times.  Fronts
/// with their own final report call it there; core's exit handler does too.
void faultsNotReached();
/// \p S as a decimal number (digits only, any count) that fits 64 bits and
/// is at most \p Hi: stores it in \p Out and returns true; else false.
bool parseDecimal(const char *S, uint64_t Hi, uint64_t &Out);
/// Ends the process (exit status 2) with one line, `<tag>: error:
/// KLE_STANDIN_<Name>="<Value>" is not valid: want <Want>`: for knobs a front
/// must not run without (sizes, planted costs).  badFrontEnv: the same for
/// `<EnvPrefix><Name>`.
[[noreturn]] void badEnv(const char *Name, const char *Value, const char *Want);
[[noreturn]] void badFrontEnv(const char *Name, const char *Value,
                              const char *Want);
/// Reads <EnvPrefix><Name> (a front's knob) as a decimal number in [Lo, Hi] into \p Out and
/// returns true; unset leaves \p Out alone and returns false; any other
/// value (empty, not a number, out of range) prints one "ignoring ... (want
/// <Want>)" line and returns false, so the caller keeps its default.
bool envNumber(const char *Name, uint64_t Lo, uint64_t Hi, uint64_t &Out,
               const char *Want);
/// The front's output tag ("kle-hsa-standin") and variable prefix
/// ("KLE_HSA_STANDIN_"), as given to init.
const char *tag();
const char *envPrefix();

/// The number of devices `<EnvPrefix>DEVICES` (per front) asks for: \p Default when
/// unset, else a decimal number from 0 to \p Max.  Anything else (empty,
/// malformed, signed, larger than \p Max) ends the process with exit status 2
/// and one line naming the variable and the accepted range: a front must
/// never size its tables from an unchecked number.  In device_count.cpp.
int deviceCount(int Default, int Max);

/// One line "<tag>: <text>" on stderr (serialised, flushed).
void say(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
/// "<tag>: VIOLATION launch #<n>: <text>"; counts a violation.
void violation(uint64_t Launch, const char *Fmt, ...)
    __attribute__((format(printf, 2, 3)));
/// "<tag>: VIOLATION op: <text>" (not attributable to a launch); counts one.
void opViolation(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
/// Violations so far.
uint64_t violations();
/// Lowercase hex of N bytes.
std::string hex(const uint8_t *P, size_t N);

/// Launch numbering shared by the front's checks (1-based, process-wide).
uint64_t nextLaunch();
uint64_t launches();

/// Per-entry-point accounting.  A front keeps one EntryStat per exported
/// function (a function-local static), and calls enter() first thing.
struct EntryStat {
  const char *Name;
  std::string Base;
  std::atomic<uint64_t> Calls{0};           ///< calls of this exported name
  std::atomic<uint64_t> *BaseCalls = nullptr; ///< calls of its base name
};
EntryStat *registerEntry(const char *Name);
/// Counts the call; returns 0, or the status injected for this call (and says
/// so on stderr).
int enter(EntryStat &E);
/// How statsReport names entry points: by base name (the default; counts of
/// every spelling summed, every base name in STATS_FILE), or by exported name
/// (CUDA: `cuMemAlloc_v2`; only entries called, nothing printed while the
/// total is unchanged since the last report).
enum class StatsNames { Base, Exported };
void setStatsNames(StatsNames N);
/// "<tag>: calls <entry>=<n>" for every entry called (plus the STATS_FILE),
/// if STATS is on; nothing if no call happened since the last report, unless
/// \p Force.
void statsReport(bool Force = false);

/// Flushes stdio and _exit(ExitCode) if any violation happened; otherwise
/// returns.  \p Where names the point for the final line (" (at <where>)");
/// nullptr: no suffix (the CUDA front's line).
void exitIfViolations(const char *Where);
/// Installs an atexit handler and library destructor that print the final
/// "launches=L violations=V" line and call exitIfViolations.  \p Final (may
/// be null) runs first, e.g. the front's live-object report.  A front that
/// does not call this (CUDA: its final report depends on its contexts) runs
/// its own exit handlers; the core's destructor then does nothing.
void installExitHandlers(void (*Final)(const char *Where));

/// fork.cpp's use of the core: the core's locks (output, stats, generator,
/// memory table), taken across fork(); and, in a forked child, its own output
/// tag ("<tag>(child)"), launch and violation counts from zero, and no
/// STATS_FILE.  See fork.h.
void coreForkLocks(std::vector<std::mutex *> &Locks);
void coreAfterForkChild();

/// Uniform random number in [0, N) from the shared generator, seeded by
/// SEED (thread-safe; 0 when N is 0).  Delays: see worker.h.
uint64_t randomBelow(uint64_t N);
uint64_t nowNs();

/// Device-side reads of host memory that the contract checks make on
/// purpose while the host may be writing it (a snapshot of a fine-grained
/// copy source at enqueue, compared again when the DMA runs: check A2 is
/// exactly "did it change?"). Real DMA engines read host memory without
/// the host's locks; ThreadSanitizer would report these reads as races with
/// the plugin's host stores, so they are hidden from it. Everything else
/// the stand-in does stays visible to ThreadSanitizer.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KLE_STANDIN_TSAN 1
#endif
#endif
#ifdef KLE_STANDIN_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char *File, int Line);
extern "C" void AnnotateIgnoreReadsEnd(const char *File, int Line);
struct DeviceReadScope {
  DeviceReadScope() { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
  ~DeviceReadScope() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
};
#else
struct DeviceReadScope {
  DeviceReadScope() {} // user-provided: no unused-variable warning
};
#endif

//===----------------------------------------------------------------------===//
// Memory table
//===----------------------------------------------------------------------===//

/// One allocation.  Kind is the front's classification (pool, pinned, ...);
/// the core only counts per kind.  Device allocations have a backing store:
/// Addr is in the PROT_NONE device range and the bytes live at Backing.  Host
/// allocations have Backing == Addr.  Addresses are never reused.
struct Block {
  uint64_t Id = 0;
  int Kind = 0;
  uintptr_t Addr = 0;
  size_t Size = 0;
  uint8_t *Backing = nullptr;
  size_t Mapped = 0;             ///< bytes mmap'd at Backing
  bool Device = false;
  std::atomic<bool> Freed{false};
  /// Return the memory when the last reference to a freed block goes away
  /// (device backing unmapped, host range made PROT_NONE, its addresses still
  /// never reused); otherwise it is kept for stale readers.  See allocate().
  bool ReturnOnDrop = false;
  bool Counted = true;           ///< in live/peak counts
  uint64_t AllowedAgents = 0;    ///< front-defined bit mask
  std::multiset<uint64_t> Pending; ///< launches/copies that read or write it
  /// Queued copies writing into it, by destination range: start -> {end,
  /// op}; a later copy with the same start replaces the entry.  Kept per
  /// range, not per block, so a pending copy into one slot of a slab is not
  /// blamed on a launch that reads another slot of it.
  std::map<uintptr_t, std::pair<uintptr_t, uint64_t>> Writes;
  /// The newest queued copy overlapping [P, P+N), or 0 when none did.
  /// O(number of distinct copy destinations below P+N).  Caller holds the
  /// front's lock that guards Writes.
  uint64_t lastWriteOp(uintptr_t P, size_t N) const {
    uint64_t Op = 0;
    for (auto It = Writes.begin(), E = Writes.lower_bound(P + N); It != E; ++It)
      if (It->second.first > P && It->second.second > Op)
        Op = It->second.second;
    return Op;
  }
  /// Host bytes of [P, P+N) (P must be inside this block).
  uint8_t *bytes(uintptr_t P) const { return Backing + (P - Addr); }
  virtual ~Block();
};
using BlockP = std::shared_ptr<Block>;

/// Number of kinds the table counts (front kinds are 0 .. MaxKinds-1).
constexpr int MaxKinds = 8;

/// The table.  All members take the table mutex themselves; the returned
/// shared pointers stay valid after a free (the block is marked Freed).
class MemTable {
public:
  /// Allocates Size bytes.  Device: an address from the PROT_NONE range,
  /// backing filled with \p Poison; host: mmap'd memory, page aligned, filled
  /// with \p Poison.  Poison < 0: not filled (fresh mmap memory reads 0).
  /// Returns nullptr when out of space.
  /// \p Into: a front-derived block to fill in (the front's own fields stay
  /// as it set them); \p DevGranule: device addresses are multiples of it,
  /// with one granule of gap between blocks (default a page).
  /// \p ReturnOnDrop: see Block (the table keeps only the freed start).
  BlockP allocate(int Kind, size_t Size, bool Device, int Poison = 0xCD,
                  bool Counted = true, BlockP Into = nullptr,
                  size_t DevGranule = 0, bool ReturnOnDrop = false);
  /// Registers host memory the front did not allocate (locked ranges).
  BlockP registerHost(int Kind, uintptr_t Addr, size_t Size);
  /// The live block containing [P, P+N), or nullptr.
  BlockP resolve(uintptr_t P, size_t N = 1);
  /// The block (live or freed) that starts at P, or nullptr (a freed
  /// ReturnOnDrop block: nullptr, see wasFreed).
  BlockP byStart(uintptr_t P);
  /// The live block that starts at P, or nullptr.
  BlockP liveByStart(uintptr_t P);
  /// True if a block that started at P was freed.
  bool wasFreed(uintptr_t P);
  /// Marks it freed (host memory is unmapped, backing released); counts.
  void release(const BlockP &B);
  /// True if P lies in the device range (live, freed or never allocated).
  bool inDeviceRange(uintptr_t P);
  /// Live and peak counts/bytes per kind.
  void counts(size_t LiveN[MaxKinds], size_t LiveB[MaxKinds],
              size_t PeakN[MaxKinds], size_t PeakB[MaxKinds]);
  /// Every live block (snapshot).
  std::vector<BlockP> live();
  std::mutex &mutex() { return Mtx; }

private:
  void reserve();
  std::mutex Mtx;
  std::map<uintptr_t, BlockP> Live;
  std::map<uintptr_t, BlockP> Freed; ///< by start, for stale-pointer reports
  std::set<uintptr_t> FreedStarts;   ///< freed ReturnOnDrop blocks
  uint64_t NextId = 1;
  uintptr_t DevBase = 0, DevEnd = 0, DevNext = 0;
  size_t LiveN[MaxKinds] = {}, LiveB[MaxKinds] = {}, PeakN[MaxKinds] = {},
         PeakB[MaxKinds] = {};
};

MemTable &mem();

} // namespace standin

#endif
