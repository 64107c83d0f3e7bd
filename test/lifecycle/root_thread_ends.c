// A pthread that ran a parallel region ends while the initial thread's nowait
// regions are in flight (kernels of 2-5 ms, so they are with libomptarget's
// completer), then the initial thread creates more and waits. Before the
// libomp fix the pthread's end also ended the hidden helper team: the first
// burst's bottom halves were queued to the ended team and exit waited for
// them forever (every run); with LIBOMPTARGET_NOWAIT_DEFER=0 the second burst
// aborted. Each region launches once; test/host/root_thread_ends.c checks
// the results.
// REQUIRES: cuda-standin || hsa-standin
// DEFINE: %{delay} = KLE_STANDIN_DELAY_US=2000:5000
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -lpthread %}
// RUN: %cuda{ %cuda %{delay} %t.cuda | %fc %}
// RUN: %cuda{ %cuda %{delay} LIBOMPTARGET_NOWAIT_DEFER=0 %t.cuda | %fc %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -lpthread %}
// RUN: %hsa{ %hsa %{delay} %t.hsa | %fc %}
// RUN: %hsa{ %hsa %{delay} LIBOMPTARGET_NOWAIT_DEFER=0 %t.hsa | %fc %}
#include <pthread.h>
#include <stdio.h>

#define K 24

static long Sum[2][K];

static void burst(long *S) {
  for (int k = 0; k < K; ++k) {
    long *P = &S[k];
#pragma omp target teams distribute parallel for reduction(+ : P[0])         \
    map(tofrom : P[0]) nowait
    for (int i = 0; i < 256; ++i)
      P[0] += i;
  }
}

static void *parallelThenEnd(void *Unused) {
#pragma omp parallel num_threads(2)
  {}
  return NULL;
}

int main(void) {
  burst(Sum[0]);
  pthread_t T;
  pthread_create(&T, NULL, parallelThenEnd, NULL);
  pthread_join(T, NULL);
  burst(Sum[1]);
#pragma omp taskwait
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: {{kle-(hsa-)?standin}}: launches=48 violations=0
