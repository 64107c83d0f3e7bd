// 8 host threads launch cross-team reductions at once, each into its own
// variable, under every KLE transport.
// REQUIRES: gpu
// RUN: %clang-gpu -O2 %s -o %t
// RUN: env %use-zerocopy %run %t | %fcheck %s
// RUN: env %use-staged %run %t | %fcheck %s
// RUN: env %use-copy %run %t | %fcheck %s
// RUN: env %use-resident %run %t | %fcheck %s
#include <stdio.h>

int main(void) {
  long got[8][50];
#pragma omp parallel for num_threads(8)
  for (int t = 0; t < 8; ++t)
    for (int r = 0; r < 50; ++r) {
      long s = 0;
#pragma omp target teams distribute parallel for num_teams(128)               \
    reduction(+ : s) map(tofrom : s)
      for (int i = 0; i < 100000; ++i)
        s += t + r;
      got[t][r] = s;
    }
  int bad = 0;
  for (int t = 0; t < 8; ++t)
    for (int r = 0; r < 50; ++r)
      bad += got[t][r] != 100000L * (t + r);
  printf("threads=8 launches=400 wrong=%d\n", bad);
  // Before the KLE stats line, which libomptarget prints at exit.
  fflush(stdout);
  return bad != 0;
}
// CHECK: threads=8 launches=400 wrong=0
