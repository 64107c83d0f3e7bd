// A pthread that ran a parallel region ends while the initial thread's nowait
// regions are in flight, and the initial thread then creates more; then two
// pthreads each run a burst and end, and the initial thread runs a third.
// Five bursts of 16 nowait teams reductions (80 launches; with the argument
// "first", the first two bursts only and the program returns after their
// taskwait); prints how many sums of each burst are wrong (the driver
// stand-ins compute nothing: only the host device's are checked), then
// "done". Built by
// test/host/root_thread_ends.test and test/lifecycle/root_thread_ends.test.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define K 16
#define N 1000

static long Sum[3][K];
static long Two[2][K];

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

static void report(const char *What, long *S) {
  int Bad = 0;
  for (int k = 0; k < K; ++k)
    Bad += S[k] != (long)N * (N - 1) / 2;
  printf("%s: %d of %d sums wrong\n", What, Bad, K);
}

// Two pthreads each run a burst and end, then the initial thread a third.
static void moreThreads(void) {
  pthread_t U[2];
  for (int t = 0; t < 2; ++t)
    pthread_create(&U[t], NULL, burstThenEnd, Two[t]);
  for (int t = 0; t < 2; ++t)
    pthread_join(U[t], NULL);
  burst(Sum[2]);
#pragma omp taskwait
  report("thread 0", Two[0]);
  report("thread 1", Two[1]);
  report("after both ended", Sum[2]);
}

int main(int argc, char **argv) {
  void *Rc = NULL;
  burst(Sum[0]);
  pthread_t T;
  pthread_create(&T, NULL, parallelThenEnd, NULL);
  pthread_join(T, &Rc);
  burst(Sum[1]);
#pragma omp taskwait
  report("before the thread ended", Sum[0]);
  report("after it ended", Sum[1]);
  if (!(argc > 1 && !strcmp(argv[1], "first")))
    moreThreads();
  printf("%s\n", Rc ? "parallel region had the wrong team size" : "done");
  fflush(stdout);
  return Rc != NULL;
}
