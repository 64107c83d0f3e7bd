// A wait that fails names the driver call that failed: a failed poll
// (cuStreamQuery inside the plugin's polling wait) is reported as
// cuStreamQuery's error, a failed blocking wait as cuStreamSynchronize's,
// so an error never blames a call that was not made (the fault sweep's
// BAD:unnamed). Every stream operation is held 20 ms, so the first wait
// finds its work pending.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: not --crash %standin-env OMP_TARGET_OFFLOAD=MANDATORY KLE_STANDIN_DELAY_US=20000:20000 \
// RUN:   KLE_STANDIN_FAIL=cuStreamQuery:1+:999 %run %t 2>&1 | %fc=POLL
// RUN: not --crash %standin-env OMP_TARGET_OFFLOAD=MANDATORY KLE_STANDIN_DELAY_US=20000:20000 \
// RUN:   LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=0 KLE_STANDIN_FAIL=cuStreamSynchronize:1+:999 \
// RUN:   %run %t 2>&1 | %fc=BLOCK
// POLL: error in cuStreamQuery: unknown error
// POLL-NOT: error in cuStreamSynchronize
// POLL: fatal error
// BLOCK: error in cuStreamSynchronize: unknown error
// BLOCK: fatal error
#include <stdio.h>

int main(void) {
  int X = 1;
#pragma omp target map(tofrom : X)
  X += 1;
  printf("X=%d\n", X);
  return 0;
}
