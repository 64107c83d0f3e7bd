//===- kle_contract_cuda.h - The CUDA front's KLE contract adapter -*- C++ -*-===//
//
// TEST ONLY.  Where the CUDA front calls the KLE contract (../core/
// kle_contract.h, checks named in ../README.md): A1, A2, B, C, W, Z, L, D,
// E; X is HSA's only.  The rest of the front calls the points below and
// nowhere else; every violation is reported by the contract module.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_STANDIN_KLE_CONTRACT_CUDA_H
#define KLE_STANDIN_KLE_CONTRACT_CUDA_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace standin { namespace contract { struct SourceWatch; } }

namespace cuda_standin {

struct Alloc;
struct LaunchRec;
struct Stream;
enum class MemKind;
using AllocP = std::shared_ptr<Alloc>;

/// The front's contract settings (the expected transport is the core's,
/// standin::cfg().Expect): _KLE_SIZE (bytes compared, default 16 = LLVM 22
/// layout), _KLE_LAYOUT (llvm22: also check KLE.ReductionBuffer at offset 8).
struct KleConfig {
  size_t KleSize = 16;
  bool Llvm22Layout = true;
};

/// Reads KLE_CUDA_STANDIN_KLE_SIZE and _KLE_LAYOUT (core::init must have run).
KleConfig kleConfigFromEnv();

/// At the enqueue of a write of [Lo, Lo+N) into \p Dst on \p S (null: a
/// synchronous write): records it for the placement check (C).  Caller holds
/// g().Mtx.
void kleAtWriteLocked(Alloc &Dst, uintptr_t Lo, size_t N, Stream *S,
                      MemKind SrcKind, bool SrcPageable);

/// The source bytes of an async copy, as enqueued (A2).
using KleSourceSnapshot = std::shared_ptr<standin::contract::SourceWatch>;
/// At the enqueue of an async copy of \p N bytes from \p Src: a snapshot of a
/// small pinned-to-device copy's source, null for every other copy.
KleSourceSnapshot kleWatchCopySource(Stream *S, const AllocP &SA,
                                     const AllocP &DA, uintptr_t Src,
                                     size_t N);
/// When the copy executes: true if the source \p From no longer holds the
/// snapshot's \p N bytes (a null snapshot never changed).
bool kleCopySourceChanged(const KleSourceSnapshot &At, const uint8_t *From,
                          size_t N);
/// After a write of [Lo, Lo+N) into \p Dst executed on the stream of \p LR,
/// which is queued behind it: \p LR expects the delivered bytes (A1); if
/// \p SrcChanged the copy's pinned source (\p SrcAddr) was recycled before it
/// ran (A2).  Caller holds the stream's lock.
void kleAfterQueuedWrite(LaunchRec &LR, Alloc &Dst, uintptr_t Lo, size_t N,
                         bool SrcChanged, uintptr_t SrcAddr);

/// At cuLaunchKernel, before the launch is queued: a kernel that needs a
/// reduction buffer must get a KLE (E).
void kleAtLaunch(const LaunchRec &LR);
/// At cuLaunchKernel, with the launch stream's lock held (takes g().Mtx), as
/// the launch is queued: registers \p LR with the allocation at dyn_ptr (B),
/// snapshots its KleSize bytes (A1) and checks the placement (C).  A dyn_ptr
/// that is not a live allocation is reported at kernel start.
void kleAtEnqueue(LaunchRec &LR);

/// At kernel start, on the stream's worker: the KLE live and unchanged (A1,
/// B), the reduction buffer (D), the counters zero and, for resident,
/// upstream's layout.  Takes g().Mtx.
void kleAtKernelStart(LaunchRec &LR);
/// At kernel end: the KLE live and unchanged again; \p LR stops being
/// pending (no later free is reported against it).  Takes g().Mtx.
void kleAtKernelEnd(LaunchRec &LR);

/// At the release of \p A (\p By names the releaser): reports every launch
/// still queued or running that uses it (B).  Caller holds g().Mtx.
void kleAtReleaseLocked(Alloc &A, const char *By);

} // namespace cuda_standin

#endif // KLE_STANDIN_KLE_CONTRACT_CUDA_H
