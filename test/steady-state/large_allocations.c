// The stand-in never reuses a device address, so its reserved address range
// bounds the bytes a process may allocate over its life, freed or not. 20
// allocations of 79 GiB (each freed before the next) must all succeed, as on
// an 80 GB device: with a 1 TiB range the 13th failed (a new user's
// nearly-all-free-memory tests then looked like a runtime defect).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -o %t
// RUN: %cuda %use-copy %t | %fc
#include <omp.h>
#include <stdio.h>
int main(void) {
  int Dev = omp_get_default_device(), Ok = 0;
  for (int I = 0; I < 20; ++I) {
    void *P = omp_target_alloc((size_t)79 << 30, Dev);
    if (P) {
      ++Ok;
      omp_target_free(P, Dev);
    }
  }
  printf("allocated %d of 20\n", Ok);
  fflush(stdout);
  return Ok != 20;
}
// CHECK: allocated 20 of 20
// CHECK: kle-standin: launches=0 violations=0
