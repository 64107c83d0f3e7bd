// LIBOMPTARGET_INFO's mapping-table dump (bit 4) after every region, from 5
// threads that map, copy and update at once. The dump held the devices'
// list lock while it took each mapping table's lock, and a transfer holds
// its table's lock while its OMPT anchor counts the devices (the list's
// lock): a lock-order cycle. Before patch 0007 dumped outside the list's
// lock, 7 of 10 runs on the HSA stand-in hung (status 124 from %run's
// timeout); the CUDA stand-in's timing rarely met it. Three runs each.
// REQUIRES: cuda-standin || hsa-standin
// DEFINE: %{dump} = LIBOMPTARGET_INFO=4
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda-run %{dump} %t.cuda 2>/dev/null | %fc %}
// RUN: %cuda{ %cuda-run %{dump} %t.cuda 2>/dev/null | %fc %}
// RUN: %cuda{ %cuda-run %{dump} %t.cuda 2>/dev/null | %fc %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa-run %{dump} %t.hsa 2>/dev/null | %fc %}
// RUN: %hsa{ %hsa-run %{dump} %t.hsa 2>/dev/null | %fc %}
// RUN: %hsa{ %hsa-run %{dump} %t.hsa 2>/dev/null | %fc %}
// CHECK: done
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
enum { N = 1000, Threads = 5 };
static void work(void) {
  int *A = malloc(N * sizeof(int));
  for (int I = 0; I < N; ++I)
    A[I] = I;
  for (int R = 0; R < 5; ++R) {
#pragma omp target teams distribute parallel for map(tofrom : A[0 : N])
    for (int I = 0; I < N; ++I)
      A[I] += 1;
#pragma omp target map(tofrom : A[0 : N]) nowait
    for (int I = 0; I < N; ++I)
      A[I] += 1;
#pragma omp taskwait
  }
#pragma omp target data map(tofrom : A[0 : N])
  {
#pragma omp target update to(A[0 : 1])
#pragma omp target
    A[0] += 1;
#pragma omp target update from(A[0 : 1])
  }
  int Dev = omp_get_default_device(), Host = omp_get_initial_device();
  void *D = omp_target_alloc(N * sizeof(int), Dev);
  omp_target_memcpy(D, A, N * sizeof(int), 0, 0, Dev, Host);
  omp_target_memcpy(A, D, N * sizeof(int), 0, 0, Host, Dev);
  omp_target_free(D, Dev);
  free(A);
}
int main(void) {
#pragma omp parallel num_threads(Threads)
  work();
  printf("done\n");
  return 0;
}
