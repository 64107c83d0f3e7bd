// A pointer associated with a size that wraps (its entry ends before it
// begins) is not found by the next map of it, which creates a second entry
// with the same key; the map keeps the first, and the region must use the
// entry in the map, as LLVM 22.1.8 does (DynRefCount=INF). Patch 0031 once
// used the new entry, which is in no map (DynRefCount=1), when it inserted
// with a reused node: the first region leaves spare nodes.
// RUN: %clang-host -O2 %s -o %t
// RUN: env LIBOMPTARGET_INFO=8 %run %t 2>&1 | %fc
// CHECK: associated 0x[[P:[0-9a-f]+]]
// CHECK: Creating new map entry with HstPtrBase=0x{{0*}}[[P]],{{.*}}DynRefCount=INF,
// CHECK: done 0
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  int *P = malloc(64), *Q = malloc(16);
  void *D = omp_target_alloc(64, 0);
#pragma omp target map(tofrom : Q[0 : 4]) device(0)
  Q[0] = 1;
  if (omp_target_associate_ptr(P, D, SIZE_MAX, 0, 0))
    return 1;
  fprintf(stderr, "associated 0x%lx\n", (unsigned long)(uintptr_t)P);
#pragma omp target map(tofrom : P[0 : 4]) device(0)
  P[0] = 1;
  fprintf(stderr, "done %d\n", omp_target_disassociate_ptr(P, 0));
  return 0;
}
