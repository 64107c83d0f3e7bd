//===-- kle-floor.cu - The floor's kernel: kle-bench's no-KLE work --------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kle-bench's no-reduction kernel without the OpenMP runtime, for the floor.
// The int comes first: the stand-in reads an 8-byte parameter 0 as dyn_ptr.
//
//===----------------------------------------------------------------------===//

extern "C" __global__ void kle_floor_kernel(int N, long *S) {
  for (int I = blockIdx.x * blockDim.x + threadIdx.x; I < N;
       I += gridDim.x * blockDim.x)
    if (I == 0)
      *S = 1;
}
