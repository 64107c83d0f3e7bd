// omp_pause_resource_all(omp_pause_hard) that returned 0 has ended the
// runtime: when it returns, no thread of libomp is left (its workers and the
// hidden helper team's threads are joined). Before the libomp fix the
// pausing thread did not wait for the hidden helper team's thread to
// unregister its root; finding that root still registered, the pause ended
// only the caller's root and returned 0 with the runtime up, and the
// caller's next construct could use a null __kmp_threads entry (SIGSEGV in
// __kmp_push_num_threads, 1 run in about 13 of pause_hard_nowait.c with one
// hidden helper thread). Each round: a parallel region with num_threads, a
// nowait region (starts the hidden helper team) waited for, the hard pause,
// then the threads of the process are counted (/proc/self/task). "extra" is
// the most threads beyond the initial one seen after any pause.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | %fc --match-full-lines
// RUN: env LIBOMP_NUM_HIDDEN_HELPER_THREADS=1 %run %t | %fc --match-full-lines
#include <dirent.h>
#include <omp.h>
#include <stdio.h>

#define ROUNDS 20

static int threads(void) {
  DIR *D = opendir("/proc/self/task");
  int N = 0;
  if (!D)
    return -1;
  for (struct dirent *E; (E = readdir(D));)
    N += E->d_name[0] != '.';
  closedir(D);
  return N;
}

int main(void) {
  int wrong = 0, paused = 0, extra = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    int x = 0, y = 0;
#pragma omp parallel num_threads(2)
#pragma omp atomic
    y += 1;
#pragma omp target map(tofrom : x) nowait
    x = r + 1;
#pragma omp taskwait
    wrong += (x != r + 1) + (y != 2);
    paused += omp_pause_resource_all(omp_pause_hard) == 0;
    int n = threads() - 1;
    if (n > extra)
      extra = n;
  }
  printf("rounds=%d paused=%d wrong=%d extra=%d\n", ROUNDS, paused, wrong, extra);
  return wrong != 0 || extra != 0;
}
// CHECK: rounds=20 paused=20 wrong=0 extra=0
