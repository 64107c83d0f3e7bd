// Tiny sm_90 kernels for the CUDA stand-in's self test.  Built with
//   clang++ -x cuda --cuda-gpu-arch=sm_90 -nocudalib -nocudainc --cuda-device-only
// (no CUDA headers, hence the attribute spellings below).
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))

struct KLE { unsigned ReductionCnt, ReductionIterCnt; void *ReductionBuffer; };

__device__ int __kle_abi_version = 1;
__device__ long kle_table[4] = {11, 22, 33, 44};

// First parameter is the dyn_ptr, as for OpenMP kernels.
extern "C" __global__ void kle_kernel(KLE *dyn_ptr, int x) {
  if (dyn_ptr && dyn_ptr != (KLE *)~0ull)
    __atomic_fetch_add(&dyn_ptr->ReductionCnt, (unsigned)x, __ATOMIC_RELAXED);
}

extern "C" __global__ void no_args_kernel() {}

// An OpenMP-like kernel with a cross-team reduction: its kernel environment
// (read by the stand-in at offsets 20 and 24) asks for 8 bytes x 4 teams of
// reduction buffer, so the contract's checks D, E and Z apply to it.
struct KernelEnv { unsigned char Config[20]; int RedDataSize, RedBufLen, Pad; };
extern "C" __device__ KernelEnv red_kernel_kernel_environment = {{0}, 8, 4, 0};
extern "C" __global__ void red_kernel(KLE *dyn_ptr, int x) {
  if (dyn_ptr && dyn_ptr != (KLE *)~0ull)
    __atomic_fetch_add(&dyn_ptr->ReductionIterCnt, (unsigned)x, __ATOMIC_RELAXED);
}
