// A pthread that ran a parallel region ends while the initial thread has
// nowait regions in flight, and the initial thread then creates more. libomp
// ends that thread's root; before the libomp fix it also ended the hidden
// helper team that every thread's nowait regions run on, and the second burst
// aborted ("Assertion failure at kmp_tasking.cpp(1006)"; LLVM 22.1.8 crashes),
// with or without the hand-over to libomptarget. Then two pthreads each run
// a burst and end, and the initial thread runs a third.
// RUN: %clang-host -O2 %s -o %t -lpthread
// RUN: %run %t | %fc --match-full-lines
// RUN: %run env LIBOMPTARGET_NOWAIT_DEFER=0 %t | %fc --match-full-lines
#include <pthread.h>
#include <stdio.h>

#define K 16
#define N 1000

static long Sum[3][K];

static void burst(long *S) {
  for (int k = 0; k < K; ++k) {
    long *P = &S[k];
#pragma omp target teams distribute parallel for reduction(+ : P[0])         \
    map(tofrom : P[0]) nowait
    for (int i = 0; i < N; ++i)
      P[0] += i;
  }
}

static void *parallelThenEnd(void *Unused) {
  int Threads = 0;
#pragma omp parallel num_threads(2)
#pragma omp atomic
  Threads += 1;
  return Threads == 2 ? NULL : (void *)1;
}

static void *burstThenEnd(void *S) {
  burst((long *)S);
#pragma omp taskwait
  return NULL;
}

static int check(const char *What, long *S) {
  int Bad = 0;
  for (int k = 0; k < K; ++k)
    Bad += S[k] != (long)N * (N - 1) / 2;
  printf("%s: %d of %d sums wrong\n", What, Bad, K);
  return Bad;
}

int main(void) {
  void *Rc = NULL;
  burst(Sum[0]);
  pthread_t T;
  pthread_create(&T, NULL, parallelThenEnd, NULL);
  pthread_join(T, &Rc);
  burst(Sum[1]);
#pragma omp taskwait
  int Bad = check("before the thread ended", Sum[0]) +
            check("after it ended", Sum[1]);
  pthread_t U[2];
  long Two[2][K] = {{0}};
  for (int t = 0; t < 2; ++t)
    pthread_create(&U[t], NULL, burstThenEnd, Two[t]);
  for (int t = 0; t < 2; ++t)
    pthread_join(U[t], NULL);
  burst(Sum[2]);
#pragma omp taskwait
  Bad += check("thread 0", Two[0]) + check("thread 1", Two[1]) +
         check("after both ended", Sum[2]);
  printf("%s\n", Bad || Rc ? "FAILED" : "done");
  return Bad != 0;
}
// CHECK: before the thread ended: 0 of 16 sums wrong
// CHECK-NEXT: after it ended: 0 of 16 sums wrong
// CHECK-NEXT: thread 0: 0 of 16 sums wrong
// CHECK-NEXT: thread 1: 0 of 16 sums wrong
// CHECK-NEXT: after both ended: 0 of 16 sums wrong
// CHECK-NEXT: done
