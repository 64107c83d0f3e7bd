//===- kle_contract_hsa.h - The KLE contract on the HSA front -------------===//
//
// TEST ONLY.  The HSA front's adapter to the KLE contract (../core/
// kle_contract.h; checks A1, A2, B, C, W, Z, L, D, E, X in ../README.md, "KLE
// contract checks"), plus the front's own rules: packet sanity and kernarg
// check K.  The rest of the front calls only the functions below: at the doorbell, when a
// dispatch starts and ends, when a copy is enqueued, runs and is done, and
// before memory or an executable goes away.  This file owns the in-flight maps
// (which launch uses a KLE, counter block or kernarg buffer) and the set of
// copies not yet done, all guarded by g().Mtx.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_CONTRACT_HSA_H
#define KLE_CONTRACT_HSA_H

#include "hsa_front.h"

namespace hsafront {

/// One dispatch from its doorbell to its completion: the packet, the kernel,
/// snapshots of its kernargs and of a host KLE, and the blocks it holds.
struct Launch {
  uint64_t N = 0;
  uint64_t Index = 0; ///< packet index
  hsa_kernel_dispatch_packet_t P;
  Kernel *K = nullptr;
  BlockP KernargB;
  std::vector<uint8_t> Kernarg;
  uintptr_t Dyn = 0;     ///< the KLE's address: dyn_ptr without its host flag
  bool HostFlag = false; ///< dyn_ptr's host flag (Shared/KLEAbi.h)
  bool HasKle = false, HostKle = false;
  BlockP KleB, CntB, RedB;
  uintptr_t Cnt = 0;
  uint8_t Kle[16] = {};
  uint64_t KleCopyOp = 0; ///< device KLE: the last copy into it enqueued before the doorbell
};

/// At the doorbell (the cuLaunchKernel of HSA), for dispatch packet \p P at
/// \p Index of \p Q: checks the packet and what the host published (packet
/// sanity, K, C, W, Z, E, X), snapshots the kernargs and a host KLE, and marks
/// the memory the launch uses as pending.  Called with Q.M held; takes
/// g().Mtx.  Never returns null (a launch without a kernel is not checked
/// further).
std::shared_ptr<Launch> kleAtDoorbell(Queue &Q, uint64_t Index,
                                      const hsa_kernel_dispatch_packet_t &P);

/// When the packet processor starts \p L: checks B, K, A1 (host KLE), W (the
/// copy into a device KLE completed), Z, L and D, and
/// snapshots a device KLE.  Takes g().Mtx.
void kleAtStart(Launch &L);

/// When \p L completes, before its completion signal: checks B, K and A1
/// again, then releases the in-flight entries and pending marks \p L holds.
/// Takes g().Mtx.
void kleAtEnd(Launch &L);

/// Before block \p B is freed or unlocked by entry point \p By: reports each
/// launch and copy that still uses it (B).  Takes g().Mtx.
void kleAtFree(const BlockP &B, const char *By);

/// Before executable \p X is destroyed: reports each recorded dispatch of its
/// kernels that has not started (B).  Takes each queue's M, then g().Mtx.
void kleAtExecutableDestroy(const Executable &X);

/// At hsa_queue_destroy, with g().Mtx held: forgets the in-flight entries of
/// the launches \p Q recorded but never ran.
void kleAtQueueDestroy(const Queue &Q);

/// At the enqueue of copy \p C, before g().Mtx is taken: snapshots a small
/// fine-grained source and the host epoch (A2).
void kleAtCopyEnqueue(Copy &C);

/// At the enqueue, with g().Mtx held and C.Op set: marks both endpoints
/// pending and records a copy into device memory as the last writer of those
/// bytes (W).
void kleTrackCopy(const Copy &C);

/// When the DMA engine runs \p C, before the bytes move: checks A2 and B.
void kleAtCopyRun(const Copy &C);

/// After the bytes of \p C moved, with g().Mtx held: \p C is no longer pending.
void kleAtCopyDone(const Copy &C);

} // namespace hsafront

#endif // KLE_CONTRACT_HSA_H
