// A detached task fulfilled by a thread outside the team, while nowait
// regions with 1 s kernels keep the waiting thread asleep in its
// taskgroup (kmp_deferred_target_wait.h): omp_fulfill_event wakes it (one
// futex wake-up made by the fulfilling thread, counted through syscall(),
// which this program interposes). Before, nothing woke it: it slept on
// until its timeout (up to 1 ms a time). Over 3 rounds at least one
// fulfill must wake it (the waiter is awake, re-checking, a few µs per
// ms). Each region and each task runs once.
// The sanitizer job's TSan runs load Archer, an OMPT tool, and with an OMPT
// tool libomp re-runs target tasks as upstream does: none is handed over.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda -ldl -lpthread %}
// RUN: %cuda{ %cuda KLE_STANDIN_KERNEL_US=1000000 KLE_STANDIN_STATS=1 %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa -ldl -lpthread %}
// RUN: %hsa{ %hsa KLE_STANDIN_KERNEL_US=1000000 KLE_STANDIN_STATS=1 %t.hsa | %fc %}
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>

#define R 4
#define ROUNDS 3
static __thread long Wakes; // FUTEX_WAKE calls this thread made

long syscall(long Number, ...) {
  static long (*Real)(long, ...);
  if (!Real)
    Real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list Ap;
  va_start(Ap, Number);
  long A[6];
  for (int I = 0; I < 6; ++I)
    A[I] = va_arg(Ap, long);
  va_end(Ap);
  if (Number == SYS_futex && (A[1] & FUTEX_CMD_MASK) == FUTEX_WAKE)
    ++Wakes;
  return Real(Number, A[0], A[1], A[2], A[3], A[4], A[5]);
}

static omp_event_handle_t Event;
static long FulfillWakes;

static void *fulfiller(void *Arg) {
  (void)Arg;
  struct timespec T = {0, 20 * 1000 * 1000};
  nanosleep(&T, NULL);
  long Before = Wakes;
  omp_fulfill_event(Event);
  FulfillWakes += Wakes - Before;
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
