// A detached task fulfilled by a thread outside the team, while nowait
// regions with 1 s kernels keep the waiting thread asleep in its taskgroup
// (kmp_deferred_target_wait.h): omp_fulfill_event wakes it, one futex
// wake-up made by the fulfilling thread (Inputs/futex_wakes.h). Before,
// nothing woke it: it slept on until its timeout (up to 1 ms a time). Over
// 3 rounds at least one fulfill must wake it (the waiter is awake,
// re-checking, a few µs per ms). Each region and each task runs once.
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: none is handed over.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -ldl -lpthread %}
// RUN: %cuda{ %cuda KLE_STANDIN_KERNEL_US=1000000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -ldl -lpthread %}
// RUN: %hsa{ %hsa KLE_STANDIN_KERNEL_US=1000000 KLE_STANDIN_STATS=1 %t.hsa | %fc %}
#include "Inputs/futex_wakes.h"
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define R 4
#define ROUNDS 3

static omp_event_handle_t Event;
static long FulfillWakes;

static void *fulfiller(void *Arg) {
  (void)Arg;
  struct timespec T = {0, 20 * 1000 * 1000};
  nanosleep(&T, NULL);
  long Before = ThreadFutexWakes;
  omp_fulfill_event(Event);
  FulfillWakes += ThreadFutexWakes - Before;
  return NULL;
}

int main(void) {
  int v[R] = {0}, Ran = 0;
#pragma omp target map(tofrom : v[0 : 1])
  v[0] = 0;
  for (int r = 0; r < R; ++r) {
#pragma omp target map(tofrom : v[r : 1]) nowait
    v[r] = 1;
  }
  for (int k = 0; k < ROUNDS; ++k) {
    pthread_t T;
#pragma omp taskgroup
    {
#pragma omp task detach(Event) shared(Ran)
      ++Ran;
      pthread_create(&T, NULL, fulfiller, NULL);
    }
    pthread_join(T, NULL);
  }
#pragma omp taskwait
  printf("tasks %d, fulfill woke the waiter: %s\n", Ran,
         FulfillWakes > 0 ? "yes" : "no");
  fflush(stdout);
  return 0;
}
// CHECK: tasks 3, fulfill woke the waiter: yes
// CUDA: kle-standin: calls cuLaunchKernel=5{{$}}
// CHECK: {{kle-(hsa-)?standin}}: launches=5 violations=0
