// Two shapes of host-run ('if(0)') nowait target tasks, which run on libomp's
// hidden helper threads, and how those threads sleep (patch 0051):
// "nested": the task's body runs a nested parallel region that creates a
// task, so the helper running it waits as the primary thread of a team of
// its own; it must not sleep on the hidden helper semaphore there (nobody
// posts it when the team's other thread arrives): it hung every run.
// "share": one region releases 8 dependent successors, each a 300 ms host
// body; the helper that releases them queues them on its own deque and
// wakes the others, which share them: in about 0.8 s, not 8 x 0.3 s one
// after another (2.5 s every run when it did not wake them).
// RUN: %clang-sm90 %s -o %t
// RUN: %cuda OMP_MAX_ACTIVE_LEVELS=2 %t nested | %fc --check-prefix=NESTED
// RUN: %cuda %t share | %fc --check-prefix=SHARE
// REQUIRES: cuda-standin
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec T;
  clock_gettime(CLOCK_MONOTONIC, &T);
  return T.tv_sec + T.tv_nsec / 1e9;
}
static void busy(double Seconds) { // a host body that takes its time
  struct timespec T = {0, (long)(Seconds * 1e9)};
  nanosleep(&T, NULL);
}
int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "nested")) {
    int Count = 0;
#pragma omp target nowait if(0) map(tofrom : Count)
    {
#pragma omp parallel num_threads(2)
      {
#pragma omp task
        {
#pragma omp atomic
          Count++;
        }
      }
    }
#pragma omp taskwait
    printf("nested: %d tasks\n", Count);
    return 0;
  }
  int X = 0;
  double T0 = now();
#pragma omp target nowait depend(out : X) if(0)
  busy(0.1);
  for (int K = 0; K < 8; ++K) {
#pragma omp target nowait depend(in : X) if(0)
    busy(0.3);
  }
#pragma omp taskwait
  double Wall = now() - T0;
  printf("share: %s (%.2f s)\n", Wall < 1.5 ? "shared" : "one after another",
         Wall);
  return 0;
}
// NESTED: nested: 2 tasks
// SHARE: share: shared
