//===- happens_before_hsa.h - The HSA front's happens-before hooks -*- C++ -*-===//
//
// TEST ONLY.  Where the HSA front feeds the happens-before check
// (../core/happens_before.h).  Each AQL queue is a timeline (its packet
// processor runs packets in order); a barrier-AND packet acquires what its
// dependency signals released; copies run on the DMA engine in any order, each
// after what its dependency signals released, on the first copy "lane" whose
// last copy is ordered before it (a new lane otherwise).  A signal carries the
// clock of what released it: an operation's completion joins its clock, a
// host store replaces it with the host's, a host subtract joins the host's;
// a host wait or acquire load, and an async handler's call, are host
// observations of it.  hsa_amd_memory_fill and hsa_memory_copy are
// operations of the host, observed when they return.  Device memory is the
// GPU's coarse-grained pool.
//
// Clocks are taken when a dispatch or copy starts, not when it is enqueued:
// the dependencies a barrier or a copy waits for are only released then.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_HSA_HAPPENS_BEFORE_HSA_H
#define KLE_HSA_HAPPENS_BEFORE_HSA_H

#include "hsa_front.h"

namespace hsafront {

struct Launch;

/// Its lock, for the fork's prepare (../core/fork.h).
void hbForkLocks(std::vector<std::mutex *> &Locks);
/// A barrier-AND packet of \p Q stopped waiting for \p Deps: later packets
/// of \p Q are ordered after what they released; then its completion signal
/// \p Done (may be null) releases the queue's clock.
void hbAtBarrier(const Queue &Q, const std::vector<Signal *> &Deps,
                 Signal *Done);
/// At the doorbell that announces \p L, and at the enqueue of copy \p C:
/// what the host has observed by then (the operation is ordered after it).
void hbAtDoorbell(const Launch &L);
void hbAtCopyEnqueue(const Copy &C);
/// Dispatch \p L of \p Q starts (after kleAtStart): its place in queue order;
/// checks and records every device allocation its kernarg bytes and its KLE
/// name (read and written).
void hbAtDispatchStart(const Queue &Q, const Launch &L);
/// Dispatch completion: \p Done (may be null) releases the queue's clock.
void hbAtDispatchDone(const Queue &Q, Signal *Done);
/// Copy \p C starts on the DMA engine: checks and records its device bytes;
/// then, when it is done, its completion signal releases its clock
/// (hbAtCopyDone).
void hbAtCopyRun(Copy &C);
void hbAtCopyDone(const Copy &C);
/// A host-synchronous access (hsa_amd_memory_fill, hsa_memory_copy):
/// writes [Dst, Dst+N) of \p DB, reads [Src, Src+N) of \p SB (either null).
void hbHostAccess(const char *What, const BlockP &DB, uintptr_t Dst,
                  const BlockP &SB, uintptr_t Src, size_t N);
/// Host signal operations: a store (\p Replace) or subtract releases the
/// host's clock into \p S; a wait, an acquire load or an async handler's
/// call observes what \p S released.
void hbHostRelease(Signal &S, bool Replace);
void hbHostAcquire(Signal &S);
/// Block \p B is freed: its accesses are forgotten.
void hbAtFree(const Block &B);

} // namespace hsafront

#endif // KLE_HSA_HAPPENS_BEFORE_HSA_H
