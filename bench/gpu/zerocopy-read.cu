//===-- zerocopy-read.cu - Cost of a GPU read of mapped host memory ------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the zero-copy KLE read costs a team, without the OpenMP runtime
// (docs/DESIGN.md "Where zero-copy's read happens"):
//   chase    ns per dependent 8-byte read, mapped host and device memory
//   read16   thread 0 of one block per SM reads 16 bytes: the same bytes,
//            distinct lines or distinct pages (latency, kernel time)
//   cpasync  16 bytes from mapped host memory by cp.async (sm_80+)
//
// Usage: zerocopy-read [--only same|lines|pages] (--only: one read16 launch,
// for ncu). Exit status 1 on a CUDA error or wrong bytes.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(X)                                                               \
  do {                                                                         \
    cudaError_t E = (X);                                                       \
    if (E != cudaSuccess) {                                                    \
      std::fprintf(stderr, "zerocopy-read: error: %s: %s\n", #X,               \
                   cudaGetErrorString(E));                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

constexpr int ChaseLen = 256;
constexpr size_t ChaseStride = 4096; // bytes between chase nodes

__device__ uint64_t globalNs() {
  uint64_t T;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(T));
  return T;
}

/// One thread: ChaseLen dependent loads starting at \p P; writes the total
/// ns (globaltimer) to Out[0] and the end pointer to Out[1].
__global__ void chase(uint64_t *const *P, uint64_t *Out) {
  const volatile uint64_t *Q = reinterpret_cast<const volatile uint64_t *>(P);
  uint64_t T0 = globalNs();
  for (int I = 0; I < ChaseLen; ++I)
    Q = reinterpret_cast<const volatile uint64_t *>(*Q);
  uint64_t T1 = globalNs();
  Out[0] = T1 - T0;
  Out[1] = reinterpret_cast<uint64_t>(Q);
}

/// Thread 0 of block B reads 16 bytes at Base + B * Stride; Cycles[B] gets
/// the read's latency in SM cycles, Sum[B] the bytes (so the read stays).
__global__ void read16(const uint4 *Base, size_t Stride, long long *Cycles,
                       unsigned *Sum) {
  if (threadIdx.x)
    return;
  const char *P = reinterpret_cast<const char *>(Base) + blockIdx.x * Stride;
  unsigned X, Y, Z, W;
  long long T0 = clock64();
  // One 16-byte load, as the DeviceRTL's read of the KLE.
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(X), "=r"(Y), "=r"(Z), "=r"(W)
               : "l"(__cvta_generic_to_global(P))
               : "memory");
  unsigned S = X + Y + Z + W;
  long long T1 = clock64();
  Cycles[blockIdx.x] = T1 - T0;
  Sum[blockIdx.x] = S;
}

__global__ void empty() {}

/// Thread 0: cp.async 16 bytes from \p Src (mapped host memory) into shared
/// memory, wait, copy them to Out[0..3]; Out[4] gets issue-to-wait cycles.
__global__ void cpasync(const uint4 *Src, unsigned *Out) {
  __shared__ __align__(16) unsigned Buf[4];
  if (threadIdx.x)
    return;
#if __CUDA_ARCH__ >= 800
  unsigned Dst = static_cast<unsigned>(__cvta_generic_to_shared(Buf));
  long long T0 = clock64();
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n\t"
               "cp.async.commit_group;\n\t"
               "cp.async.wait_group 0;" ::"r"(Dst),
               "l"(__cvta_generic_to_global(Src))
               : "memory");
  long long T1 = clock64();
  for (int I = 0; I < 4; ++I)
    Out[I] = Buf[I];
  Out[4] = static_cast<unsigned>(T1 - T0);
#else
  Out[4] = ~0u;
#endif
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  return V.empty() ? 0 : V[V.size() / 2];
}

/// Median kernel time in microseconds over \p Reps launches of \p Launch.
template <typename F> double kernelUs(int Reps, F Launch) {
  cudaEvent_t A, B;
  CHECK(cudaEventCreate(&A));
  CHECK(cudaEventCreate(&B));
  std::vector<double> Us;
  for (int R = 0; R < Reps; ++R) {
    CHECK(cudaEventRecord(A));
    Launch();
    CHECK(cudaEventRecord(B));
    CHECK(cudaEventSynchronize(B));
    float Ms;
    CHECK(cudaEventElapsedTime(&Ms, A, B));
    Us.push_back(Ms * 1e3);
  }
  CHECK(cudaEventDestroy(A));
  CHECK(cudaEventDestroy(B));
  return median(Us);
}

} // namespace

int main(int argc, char **argv) {
  const int Reps = 200;
  struct Mode {
    const char *Name;
    size_t Stride;
  } Modes[] = {{"same", 0}, {"lines", 128}, {"pages", 4096}};
  const Mode *Only = nullptr;
  if (argc != 1 && (argc != 3 || std::strcmp(argv[1], "--only"))) {
    std::fprintf(stderr, "usage: zerocopy-read [--only same|lines|pages]\n");
    return 2;
  }
  for (const Mode &M : Modes)
    if (argc == 3 && !std::strcmp(M.Name, argv[2]))
      Only = &M;
  if (argc == 3 && !Only) {
    std::fprintf(
        stderr,
        "zerocopy-read: error: --only wants same, lines or pages, not \"%s\"\n",
        argv[2]);
    return 2;
  }
  int Dev = 0, SMs = 0, ClockKHz = 0, Major = 0;
  CHECK(cudaSetDevice(Dev));
  CHECK(cudaDeviceGetAttribute(&SMs, cudaDevAttrMultiProcessorCount, Dev));
  CHECK(cudaDeviceGetAttribute(&Major, cudaDevAttrComputeCapabilityMajor, Dev));
  if (cudaDeviceGetAttribute(&ClockKHz, cudaDevAttrClockRate, Dev) != cudaSuccess)
    ClockKHz = 0;
  const int Blocks = SMs;

  // Host (mapped, as the zero-copy slot) and device buffers; the read16
  // buffer has a 4 KiB page per block.
  const size_t ChaseBytes = ChaseLen * ChaseStride;
  const size_t ReadBytes = static_cast<size_t>(Blocks) * 4096;
  char *HostChase, *HostRead;
  CHECK(cudaHostAlloc(&HostChase, ChaseBytes, cudaHostAllocMapped));
  CHECK(cudaHostAlloc(&HostRead, ReadBytes, cudaHostAllocMapped));
  for (size_t I = 0; I < ReadBytes; ++I)
    HostRead[I] = static_cast<char>(I * 7 + 1);
  char *DevChase;
  CHECK(cudaMalloc(&DevChase, ChaseBytes));
  uint64_t *Out;
  long long *Cycles;
  unsigned *Sum, *CpOut;
  CHECK(cudaMalloc(&Out, 2 * sizeof(uint64_t)));
  CHECK(cudaMalloc(&Cycles, Blocks * sizeof(long long)));
  CHECK(cudaMalloc(&Sum, Blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&CpOut, 5 * sizeof(unsigned)));
  char *HostReadDev;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&HostReadDev), HostRead, 0));

  if (Only) {
    read16<<<Blocks, 32>>>(reinterpret_cast<const uint4 *>(HostReadDev),
                           Only->Stride, Cycles, Sum);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::printf("read16 %s: %d blocks, one launch (for ncu)\n", Only->Name,
                Blocks);
    return 0;
  }
  std::printf("device: %d SMs, compute capability %d, SM clock %d kHz\n", SMs, Major, ClockKHz);

  // chase: a ring of ChaseLen nodes, ChaseStride apart, on host and device.
  for (int Where = 0; Where < 2; ++Where) {
    char *Base = DevChase;
    if (Where == 0)
      CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&Base), HostChase, 0));
    std::vector<uint64_t> Ring(ChaseBytes / 8);
    for (int I = 0; I < ChaseLen; ++I)
      Ring[I * ChaseStride / 8] = reinterpret_cast<uint64_t>(Base + ((I + 1) % ChaseLen) * ChaseStride);
    if (Where == 0)
      std::memcpy(HostChase, Ring.data(), ChaseBytes);
    else
      CHECK(cudaMemcpy(DevChase, Ring.data(), ChaseBytes, cudaMemcpyHostToDevice));
    std::vector<double> Ns;
    for (int R = 0; R < std::max(5, Reps / 20); ++R) {
      chase<<<1, 1>>>(reinterpret_cast<uint64_t *const *>(Base), Out);
      CHECK(cudaGetLastError());
      uint64_t H[2];
      CHECK(cudaMemcpy(H, Out, sizeof(H), cudaMemcpyDeviceToHost));
      if (H[1] != reinterpret_cast<uint64_t>(Base)) {
        std::fprintf(stderr, "zerocopy-read: error: the chase ended at the wrong node\n");
        return 1;
      }
      if (R) // the first one warms the TLB
        Ns.push_back(static_cast<double>(H[0]) / ChaseLen);
    }
    std::printf("chase %s: %.0f ns per dependent read (median of %zu runs of %d reads)\n",
                Where == 0 ? "host-mapped" : "device", median(Ns), Ns.size(), ChaseLen);
  }

  // read16: same 16 bytes vs distinct lines vs distinct pages.
  double EmptyUs = kernelUs(Reps, [&] { empty<<<Blocks, 32>>>(); });
  std::printf("empty kernel, %d blocks: %.2f us (median of %d)\n", Blocks, EmptyUs, Reps);
  for (const Mode &M : Modes) {
    double Us = kernelUs(Reps, [&] {
      read16<<<Blocks, 32>>>(reinterpret_cast<const uint4 *>(HostReadDev), M.Stride, Cycles, Sum);
    });
    CHECK(cudaGetLastError());
    std::vector<long long> C(Blocks);
    CHECK(cudaMemcpy(C.data(), Cycles, Blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> Lat(C.begin(), C.end());
    double Med = median(Lat), Max = *std::max_element(Lat.begin(), Lat.end());
    std::printf("read16 %-5s %d blocks: kernel %.2f us (%.2f us over empty); per-block read "
                "median %.0f cycles, max %.0f cycles",
                M.Name, Blocks, Us, Us - EmptyUs, Med, Max);
    if (ClockKHz)
      std::printf(" (%.0f / %.0f ns at %d kHz)", Med * 1e6 / ClockKHz, Max * 1e6 / ClockKHz, ClockKHz);
    std::printf("\n");
  }

  // cpasync: legal and correct on mapped host memory?
  if (Major >= 8) {
    cpasync<<<1, 32>>>(reinterpret_cast<const uint4 *>(HostReadDev), CpOut);
    CHECK(cudaGetLastError());
    unsigned H[5];
    CHECK(cudaMemcpy(H, CpOut, sizeof(H), cudaMemcpyDeviceToHost));
    bool Ok = !std::memcmp(H, HostRead, 16);
    std::printf("cpasync host-mapped 16 bytes: %s, issue to wait %u cycles\n",
                Ok ? "bytes correct" : "BYTES WRONG", H[4]);
    if (!Ok)
      return 1;
  } else {
    std::printf("cpasync: skipped (compute capability %d < 8)\n", Major);
  }
  return 0;
}
