// A pthread that ran a parallel region ends while the initial thread's nowait
// regions are with libomptarget's completer (kernels of 2-5 ms); the initial
// thread then waits for them and returns. libomp ends the hidden helper team
// when any thread that used OpenMP ends (upstream's behaviour; regions
// created after that fail, as in LLVM 22.1.8); the end now first lets the
// team run what is queued or handed over. Before, the handed-over tasks'
// bottom halves were queued to the ended team and exit waited for them
// forever (every run, both stand-ins); LIBOMPTARGET_NOWAIT_DEFER=0 (no
// hand-over) passed before too. Each region launches once.
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

static long Sum[K];

static void *parallelThenEnd(void *Unused) {
#pragma omp parallel num_threads(2)
  {}
  return NULL;
}

int main(void) {
  for (int k = 0; k < K; ++k) {
    long *P = &Sum[k];
#pragma omp target teams distribute parallel for reduction(+ : P[0])         \
    map(tofrom : P[0]) nowait
    for (int i = 0; i < 256; ++i)
      P[0] += i;
  }
  pthread_t T;
  pthread_create(&T, NULL, parallelThenEnd, NULL);
  pthread_join(T, NULL);
#pragma omp taskwait
  printf("done\n");
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done
// CHECK: {{kle-(hsa-)?standin}}: launches=24 violations=0
