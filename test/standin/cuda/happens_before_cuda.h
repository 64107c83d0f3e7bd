//===- happens_before_cuda.h - The CUDA front's happens-before hooks -*- C++ -*-===//
//
// TEST ONLY.  Where the CUDA front feeds the happens-before check
// (../core/happens_before.h): each stream is a timeline; an async copy,
// memset or launch is an operation of its stream, enqueued in stream order;
// cuEventRecord captures the stream's clock, cuStreamWaitEvent acquires it;
// cuStreamSynchronize, cuCtxSynchronize, a successful cuStreamQuery or
// cuEventQuery, cuEventSynchronize and the driver's own wait (a copy into
// pageable memory) are host observations.  A synchronous copy is an
// operation of the host, observed as soon as it returns.  Device memory is
// cuMemAlloc memory and module globals.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_HAPPENS_BEFORE_CUDA_H
#define KLE_STANDIN_HAPPENS_BEFORE_CUDA_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace cuda_standin {

struct Alloc;
struct Event;
struct LaunchRec;
struct Op;
struct Stream;
using AllocP = std::shared_ptr<Alloc>;

/// What an async copy or memset accesses (Op::Hb), set before its enqueue.
struct HbAccess;
/// What a launch's late (KLE) accesses need (LaunchRec::Hb).
struct HbLaunch;

/// Its lock, for the fork's prepare (../core/fork.h).
void hbForkLocks(std::vector<std::mutex *> &Locks);
/// Describes the device bytes an async copy (\p SA null: a memset) of \p N
/// bytes reads and writes, in \p O, before it is enqueued; \p What names it.
void hbDescribeCopy(Op &O, const char *What, const AllocP &DA, uintptr_t Dst,
                    const AllocP &SA, uintptr_t Src, size_t N);
/// At the enqueue of \p O on \p S (S.M held, O.Seq set): its place in
/// stream order; checks and records what it accesses (a launch: every
/// device allocation its argument bytes name).  Takes g().Mtx.
void hbAtEnqueueLocked(Stream &S, Op &O);
/// A synchronous copy, executed now by the calling thread.
void hbSyncCopy(const char *What, const AllocP &DA, uintptr_t Dst,
                const AllocP &SA, uintptr_t Src, size_t N);
/// At kernel start: the device allocations its KLE names (counters,
/// reduction buffer), checked in the launch's enqueue order.  Takes g().Mtx.
void hbAtKernelStart(LaunchRec &LR);

/// The last operation enqueued on \p S (to observe after waiting for it).
uint64_t hbTail(Stream &S);
/// The host observed operations [1, Seq] of \p S complete.  hbObservedLocked:
/// S.M held.
void hbObserved(Stream &S, uint64_t Seq);
void hbObservedLocked(Stream &S, uint64_t Seq);
/// cuEventRecord of \p E on \p S (S.M held): what \p E waits for.
void hbEventRecordLocked(Event &E, Stream &S);
/// The host observed \p E complete.
void hbEventObserved(Event &E);
/// cuStreamWaitEvent: later work on \p S is ordered after \p E.
void hbStreamWaitEvent(Stream &S, Event &E);
/// \p A was released (g().Mtx held): its accesses are forgotten.
void hbAtReleaseLocked(Alloc &A);

} // namespace cuda_standin

#endif // KLE_STANDIN_HAPPENS_BEFORE_CUDA_H
