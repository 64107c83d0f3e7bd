// Synchronous target teams reductions into iteration-private variables from
// inside a host parallel for with 1, 2, 8 and 16 threads: every iteration
// must get its own result (not thread 0 the sum of all, the others 0).
// RUN: %clang-host -O0 %s -o %t && %run %t | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t2 && %run %t2 | %fc --match-full-lines
// RUN: %clang-nooffload -O2 %s -o %t3 && %run %t3 | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t4 && env OMP_TARGET_OFFLOAD=DISABLED %run %t4 | %fc --match-full-lines

#include <omp.h>
#include <stdio.h>

#define N 64
#define MAXIT 32

static int sum[MAXIT], mn[MAXIT], mx[MAXIT], arr[MAXIT][3];

static void run(int nt, int print) {
  int iters = 2 * nt, got = 0;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int t = 0; t < iters; t++) {
    if (t == 0)
      got = omp_get_num_threads();
    int s = 0, lo = 1000000, hi = -1000000;
    int a[3] = {0, 0, 0};
#pragma omp target teams distribute parallel for reduction(+ : s)             \
    map(tofrom : s)
    for (int i = 0; i < N; i++)
      s += i + t;
#pragma omp target teams distribute parallel for reduction(min : lo)          \
    map(tofrom : lo)
    for (int i = 0; i < N; i++) {
      int v = (i * 37 + 11 * t) % 97 - t;
      lo = v < lo ? v : lo;
    }
#pragma omp target teams distribute parallel for reduction(max : hi)          \
    map(tofrom : hi)
    for (int i = 0; i < N; i++) {
      int v = (i * 53 + 7 * t) % 89 + t;
      hi = v > hi ? v : hi;
    }
#pragma omp target teams distribute parallel for reduction(+ : a[0 : 3])      \
    map(tofrom : a[0 : 3])
    for (int i = 0; i < N; i++)
      a[i % 3] += i * (t + 1);
    sum[t] = s;
    mn[t] = lo;
    mx[t] = hi;
    arr[t][0] = a[0];
    arr[t][1] = a[1];
    arr[t][2] = a[2];
  }
  long tot = 0, tmin = 0, tmax = 0, tarr = 0;
  for (int t = 0; t < iters; t++) {
    tot += sum[t];
    tmin += mn[t];
    tmax += mx[t];
    tarr += arr[t][0] + 2L * arr[t][1] + 3L * arr[t][2];
    if (print)
      printf("t=%d sum=%d min=%d max=%d arr=%d %d %d\n", t, sum[t], mn[t],
             mx[t], arr[t][0], arr[t][1], arr[t][2]);
  }
  printf("threads=%d iters=%d sum=%ld min=%ld max=%ld arr=%ld\n", got, iters,
         tot, tmin, tmax, tarr);
}

int main(void) {
  // run(1) first: a 1-thread parallel region with a target teams region
  // followed by a wider one crashed in __kmpc_fork_teams (th_set_nproc == 0)
  // before patch 0006 (teams_after_hot_team.c).
  run(1, 0);
  // CHECK: threads=1 iters=2 sum=4096 min=-1 max=177 arr=12033
  run(16, 0);
  // CHECK-NEXT: threads=16 iters=32 sum=96256 min=-481 max=3304 arr=2117808
  run(8, 1);
  // CHECK-NEXT: t=0 sum=2016 min=0 max=88 arr=693 651 672
  // CHECK-NEXT: t=1 sum=2080 min=-1 max=89 arr=1386 1302 1344
  // CHECK-NEXT: t=2 sum=2144 min=-2 max=89 arr=2079 1953 2016
  // CHECK-NEXT: t=3 sum=2208 min=-2 max=91 arr=2772 2604 2688
  // CHECK-NEXT: t=4 sum=2272 min=-4 max=92 arr=3465 3255 3360
  // CHECK-NEXT: t=5 sum=2336 min=-5 max=93 arr=4158 3906 4032
  // CHECK-NEXT: t=6 sum=2400 min=-4 max=94 arr=4851 4557 4704
  // CHECK-NEXT: t=7 sum=2464 min=-7 max=95 arr=5544 5208 5376
  // CHECK-NEXT: t=8 sum=2528 min=-7 max=96 arr=6237 5859 6048
  // CHECK-NEXT: t=9 sum=2592 min=-9 max=96 arr=6930 6510 6720
  // CHECK-NEXT: t=10 sum=2656 min=-10 max=98 arr=7623 7161 7392
  // CHECK-NEXT: t=11 sum=2720 min=-10 max=99 arr=8316 7812 8064
  // CHECK-NEXT: t=12 sum=2784 min=-12 max=99 arr=9009 8463 8736
  // CHECK-NEXT: t=13 sum=2848 min=-13 max=101 arr=9702 9114 9408
  // CHECK-NEXT: t=14 sum=2912 min=-12 max=102 arr=10395 9765 10080
  // CHECK-NEXT: t=15 sum=2976 min=-15 max=102 arr=11088 10416 10752
  // CHECK-NEXT: threads=8 iters=16 sum=39936 min=-113 max=1524 arr=545496
  run(2, 0);
  // CHECK-NEXT: threads=2 iters=4 sum=8448 min=-5 max=357 arr=40110
  printf("done\n"); // CHECK-NEXT: done
  return 0;
}
