// Deferred (nowait) target teams reductions issued from 1, 2, 8 and 16 host
// threads, each waited for with its own taskwait.
// Before patch 0005 about one run in seven crashed in libomp (SIGSEGV in
// __kmpc_give_task <- __kmp_push_task <- __kmpc_omp_task): a host thread bound
// its next target nowait task to the team and task team its shadow hidden
// helper thread held at that moment, which were a serial team and NULL while
// that helper ran a (serialized, one-team) host teams region. Before patch
// 0002 it hung. hidden_helper_task_binding.c is the stress version.
// RUN: %clang-host -O0 %s -o %t && %run %t | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t2 && %run %t2 | %fc --match-full-lines
// RUN: %clang-nooffload -O2 %s -o %t3 && %run %t3 | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t4 && env OMP_TARGET_OFFLOAD=DISABLED %run %t4 | %fc --match-full-lines

#include <omp.h>
#include <stdio.h>

#define N 64
#define MAXT 16

static void run(int nt) {
  int sum[MAXT], mn[MAXT], mx[MAXT], got = 0;
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
#pragma omp single
    got = omp_get_num_threads();
    int s = 0, lo = 1000000, hi = -1000000;
#pragma omp target teams distribute parallel for reduction(+ : s)             \
    map(tofrom : s) nowait
    for (int i = 0; i < N; i++)
      s += i + t;
#pragma omp target teams distribute parallel for reduction(min : lo)          \
    reduction(max : hi) map(tofrom : lo, hi) nowait
    for (int i = 0; i < N; i++) {
      int v = i * (t + 1) - 3 * t;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
#pragma omp taskwait
    sum[t] = s;
    mn[t] = lo;
    mx[t] = hi;
  }
  long tot = 0, tmin = 0, tmax = 0;
  int ok = 0;
  for (int t = 0; t < got; t++) {
    tot += sum[t];
    tmin += mn[t];
    tmax += mx[t];
    ok += sum[t] == 2016 + 64 * t && mn[t] == -3 * t &&
          mx[t] == 63 * (t + 1) - 3 * t;
  }
  printf("threads=%d ok=%d sum=%ld min=%ld max=%ld\n", got, ok, tot, tmin,
         tmax);
}

int main(void) {
  run(1); // CHECK: threads=1 ok=1 sum=2016 min=0 max=63
  run(2); // CHECK-NEXT: threads=2 ok=2 sum=4096 min=-3 max=186
  run(8); // CHECK-NEXT: threads=8 ok=8 sum=17920 min=-84 max=2184
  run(16); // CHECK-NEXT: threads=16 ok=16 sum=39936 min=-360 max=8208
  printf("done\n"); // CHECK-NEXT: done
  return 0;
}
