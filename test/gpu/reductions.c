// Cross-team reductions on a real GPU under every KLE transport: sum, min,
// max, an array section and a user-defined reduction, from 1 team up to 65535.
// REQUIRES: gpu
// RUN: %clang-gpu -O2 %s -o %t
// RUN: env %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: env %use-staged LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,STAGED %s
// RUN: env %use-copy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,COPY %s
// RUN: env %use-resident LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,RESIDENT %s
#include <stdio.h>

typedef struct {
  long count;
  int max;
} stats_t;
#pragma omp declare reduction(merge : stats_t : omp_out.count += omp_in.count, \
    omp_out.max = omp_in.max > omp_out.max ? omp_in.max : omp_out.max)        \
    initializer(omp_priv = (stats_t){0, -2147483647})

int main(void) {
  const int N = 1 << 20;
  int teams[] = {1, 2, 64, 1024, 65535};
  int bad = 0;
  for (int t = 0; t < 5; ++t) {
    int nt = teams[t];
    long sum = 0;
    int lo = 1 << 30, hi = -(1 << 30);
    long hist[8] = {0};
    stats_t st = {0, -2147483647};
#pragma omp target teams distribute parallel for num_teams(nt)                \
    reduction(+ : sum) reduction(min : lo) reduction(max : hi)                 \
    reduction(+ : hist[0 : 8]) reduction(merge : st)                           \
    map(tofrom : sum, lo, hi, hist[0 : 8], st)
    for (int i = 0; i < N; ++i) {
      sum += i;
      int v = (int)(((long)i * 7919) % N) - 3;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
      hist[i % 8] += 1;
      st.count += 1;
      st.max = i > st.max ? i : st.max;
    }
    int ok = sum == (long)N * (N - 1) / 2 && lo == -3 && hi == N - 4 &&
             st.count == N && st.max == N - 1;
    for (int b = 0; b < 8; ++b)
      ok &= hist[b] == N / 8;
    printf("teams=%d %s sum=%ld min=%d max=%d hist0=%ld udr=%ld/%d\n", nt,
           ok ? "OK" : "FAIL", sum, lo, hi, hist[0], st.count, st.max);
    bad += !ok;
  }
  // Before the KLE stats line, which libomptarget prints at exit.
  fflush(stdout);
  return bad;
}
// CHECK-NOT: FAIL
// CHECK: teams=1 OK
// CHECK: teams=2 OK
// CHECK: teams=64 OK
// CHECK: teams=1024 OK
// CHECK: teams=65535 OK
// ZEROCOPY: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=5 resident=0;
// STAGED: omptarget KLE stats: device 0: launches copy=0 staged=5 zerocopy=0 resident=0;
// COPY: omptarget KLE stats: device 0: launches copy=5 staged=0 zerocopy=0 resident=0;
// RESIDENT: omptarget KLE stats: device 0: launches copy=0 staged=0 zerocopy=0 resident=5;
