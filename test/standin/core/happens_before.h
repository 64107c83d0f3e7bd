//===- happens_before.h - Happens-before check over device memory -*- C++ -*-===//
//
// TEST ONLY.  Every copy and every kernel is an access to device memory: a
// copy to its byte ranges (destination written, source read), a kernel to
// every device allocation whose address appears in its argument bytes or in
// its KLE (conservatively read and written).  A copy must be ordered after
// every earlier access that conflicts with it, and a kernel after every
// earlier copy that does; two kernels are the program's business.  Two
// accesses conflict when their bytes overlap and one of them writes.
//
// Ordering is tracked with vector clocks.  A timeline is what executes its
// operations in order (a CUDA stream, an HSA queue, a chain of HSA copies);
// an operation's clock says how many operations of each timeline happened
// before it.  A front builds clocks from its API: stream or queue order
// (enqueue), events and barrier-AND or copy dependencies (acquire / Clock
// joins), and host synchronizations (hostObserve): once any host thread has
// observed an operation complete, every operation enqueued later, by any
// thread, is ordered after it (one host clock for the process: the check
// never reports what a host synchronization ordered, and may miss a race
// between two host threads).
//
// A violation is one line, counted like the KLE contract's (exit status 97):
//
//   <tag>: VIOLATION launch #<n>: H happens-before: <later> ... <earlier> ...
//   <tag>: VIOLATION op: H happens-before: <later copy> ... <earlier> ...
//
// naming both accesses.  Thread safety: every function may be called from
// any thread; one internal mutex, taken last (callers may hold their own).
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_HAPPENS_BEFORE_H
#define KLE_STANDIN_HAPPENS_BEFORE_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace standin {
struct Block;
namespace hb {

/// A vector clock: entry T is the number of operations of timeline T that
/// happened before (1-based positions: op N of T is covered when at(T) >= N).
class Clock {
public:
  uint64_t at(uint32_t T) const { return T < V.size() ? V[T] : 0; }
  void set(uint32_t T, uint64_t N);
  void join(const Clock &O);
  bool covers(uint32_t T, uint64_t N) const { return at(T) >= N; }
  bool empty() const { return V.empty(); }

private:
  std::vector<uint64_t> V;
};

/// An operation: its timeline, its position there (1-based) and its clock.
struct Op {
  uint32_t T = 0;
  uint64_t Seq = 0;
  Clock C;
};

/// A new timeline named \p Name in reports ("stream 3", "queue 1").
/// \p Observable: the host observes it by position (hostObserve(T, Seq)), so
/// the clocks of its operations are kept until then; otherwise only through
/// clocks the front keeps (HSA signals).
uint32_t newTimeline(const std::string &Name, bool Observable = true);

/// The next operation of timeline \p T: ordered after the operations before
/// it on \p T, what \p T acquired, and what the host had observed when it
/// was enqueued (\p HostAt, taken by host() then; null: now).  Its clock is
/// kept until hostObserve(T, >= its Seq).
Op enqueue(uint32_t T, const Clock *HostAt = nullptr);
/// The clock of timeline \p T now (its last operation and what it acquired
/// since, joined with the host's): what an event recorded now waits for.
Clock current(uint32_t T);
/// Later operations of \p T are ordered after \p C (an event wait, a
/// barrier-AND packet's dependencies).
void acquire(uint32_t T, const Clock &C);
/// A host thread observed operations [1, Seq] of \p T complete (a stream
/// synchronization or a successful query).
void hostObserve(uint32_t T, uint64_t Seq);
/// A host thread observed what \p C covers complete (an event, a signal).
void hostObserve(const Clock &C);
/// What the host has observed.
Clock host();

/// How an access uses its bytes.
enum Mode : unsigned { Read = 1, Write = 2, ReadWrite = 3 };

/// Bytes [Lo, Hi) of the device allocation starting at \p Base.
struct Range {
  uintptr_t Base = 0, Lo = 0, Hi = 0;
  Mode M = ReadWrite;
};

/// Who accesses: a kernel (\p Launch, its launch number) or a copy (0), and
/// how reports name it ("launch #4 'k' on stream 2", "cuMemcpyDtoHAsync of 8
/// bytes on stream 3").
struct Who {
  uint64_t Launch = 0;
  bool Kernel = false;
  std::string What;
};

/// Checks the access of operation \p O to \p Rs against every access
/// recorded earlier that conflicts with it (one VIOLATION line for the first
/// one not ordered before \p O), then records it.  \p Order: the access's
/// place in enqueue order (0: now); an access recorded late (a kernel's KLE
/// read at kernel start) passes the one it got at enqueue and is checked only
/// against accesses enqueued before it.  Returns that place.
uint64_t access(const Op &O, const Who &W, const std::vector<Range> &Rs,
                uint64_t Order = 0);

/// What a kernel accesses, added to \p Rs (each range once): its dyn_ptr
/// (the word at offset 0 of its argument bytes \p Args when \p HasKle): the
/// \p KleSize KLE bytes; when \p Kle holds the KLE's 16 bytes (LLVM 22's
/// layout), its device counters (8 bytes, when tagged) and its reduction
/// buffer (\p RedBytes; 0: the whole block); and with KLE_STANDIN_HB_ARGS=1,
/// every device block (one \p IsDevice accepts) that another 8-byte word of
/// \p Args points to the start of, whole.  Argument words are opt-in: OpenMP
/// passes an array section by its base, which may lie before the section's
/// own allocation, at or inside another one (seen: a teams reduction over
/// s[t][k] whose base was another launch's KLE), so they suit programs that
/// map whole variables only.  A KLE slot, counter block or buffer is one
/// range of a slab that many launches share, never the whole slab.
void kernelRanges(const uint8_t *Args, size_t N, bool HasKle, size_t KleSize,
                  const uint8_t *Kle, size_t RedBytes,
                  bool (*IsDevice)(const Block &),
                  std::vector<Range> &Rs);

/// The allocation starting at \p Base was released: its accesses are
/// forgotten (addresses are never reused).
void forget(uintptr_t Base);

/// Violations this check reported.
uint64_t violations();

/// Its lock, for the fork's prepare (fork.h).
void forkLocks(std::vector<std::mutex *> &Locks);

} // namespace hb
} // namespace standin

#endif // KLE_STANDIN_HAPPENS_BEFORE_H
