// omp_target_alloc(SIZE_MAX) with LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD at
// SIZE_MAX, so that the request reaches the memory manager's free lists: it
// fails with a null pointer, as in LLVM 22.1.8. With patch 0029's first form
// SIZE_MAX (the free lists' reserved DenseMap key, in bucket 0 because the
// bucket's power of two overflows) found a never-built entry once a 1-3 byte
// block had been freed: a garbage block or SIGSEGV (certain with
// MALLOC_PERTURB_ dirtying the freed heap the lists' table reuses).
// RUN: %clang-host -O2 %s -o %t
// RUN: env MALLOC_PERTURB_=165 LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=18446744073709551615 \
// RUN:   %run %t 2>&1 | %fc
// CHECK: SIZE_MAX: null
// CHECK: small block reused: yes
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  int Dev = omp_get_default_device();
  void *Small = omp_target_alloc(3, Dev);
  // Freed heap for the free list's table to land in, dirtied by the perturb.
  for (int I = 0; I < 64; ++I) {
    size_t N = 2048 + 64 * I;
    char *G = malloc(N);
    memset(G, 0xA5, N);
    free(G);
  }
  omp_target_free(Small, Dev);
  void *Huge = omp_target_alloc(SIZE_MAX, Dev);
  printf("SIZE_MAX: %s\n", Huge ? "not null" : "null");
  void *Again = omp_target_alloc(3, Dev);
  printf("small block reused: %s\n", Again == Small ? "yes" : "no");
  omp_target_free(Again, Dev);
  return 0;
}
