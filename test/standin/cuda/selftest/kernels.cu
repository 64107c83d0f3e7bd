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
