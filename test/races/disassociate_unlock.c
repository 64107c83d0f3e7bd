// omp_target_disassociate_ptr deleted the map entry while a lock_guard held
// the entry's mutex, and the guard then unlocked the freed mutex (LLVM
// 22.1.8's MappingInfoTy::disassociatePtr): a heap-use-after-free, reported
// by the sanitizer job's ThreadSanitizer build (the run fails there; plain
// runs show nothing). Patch 0035 deletes the entry after its lock is
// released.
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-run %t.hsa | %fc %}
// CHECK: disassociated 8 of 8
#include <omp.h>
#include <stdio.h>
enum { N = 8 };
int main(void) {
  int Dev = omp_get_default_device(), Done = 0, Sum = 0;
  int A[N];
  void *D[N];
  for (int I = 0; I < N; ++I) {
    D[I] = omp_target_alloc(sizeof(int), Dev);
    if (!D[I] || omp_target_associate_ptr(&A[I], D[I], sizeof(int), 0, Dev))
      return 1;
    A[I] = 1;
#pragma omp target update to(A[I : 1]) device(Dev)
#pragma omp target map(tofrom : Sum) map(to : A[I : 1]) device(Dev)
    Sum += A[I];
  }
  for (int I = 0; I < N; ++I) {
    Done += omp_target_disassociate_ptr(&A[I], Dev) == 0;
    omp_target_free(D[I], Dev);
  }
  printf("disassociated %d of %d (%d)\n", Done, N, Sum);
  return 0;
}
