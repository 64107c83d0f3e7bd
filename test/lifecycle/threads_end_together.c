// Eight pthreads run nowait regions, then end at the same moment. Each
// thread's end ends the hidden helper team and waits for it to be gone;
// libomp woke one waiter (pthread_cond_signal) and every waiter joined the
// team's thread: the others waited forever (status 124) or the second
// join failed (status 134), 5 of 10 runs on the CUDA stand-in before patch
// 0020 woke them all and made one of them join. A thread that starts a new
// team while another ends the old one is still "Not covered" (DESIGN.md).
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -lpthread %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %cuda{ %cuda-run %t.cuda | %fc %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -lpthread %}
// RUN: %hsa{ %hsa-run %t.hsa | %fc %}
// RUN: %hsa{ %hsa-run %t.hsa | %fc %}
// RUN: %hsa{ %hsa-run %t.hsa | %fc %}
// CHECK: done
#include <pthread.h>
#include <stdio.h>
enum { Threads = 8 };
static pthread_barrier_t Done;
static void *work(void *Arg) {
  long X = 0;
  for (int I = 0; I < 4; ++I) {
#pragma omp target map(tofrom : X) nowait
    X += 1;
#pragma omp taskwait
  }
  pthread_barrier_wait(&Done);
  return Arg;
}
int main(void) {
  pthread_t T[Threads];
  pthread_barrier_init(&Done, 0, Threads);
  for (int I = 0; I < Threads; ++I)
    pthread_create(&T[I], 0, work, 0);
  for (int I = 0; I < Threads; ++I)
    pthread_join(T[I], 0);
  printf("done\n");
  return 0;
}
