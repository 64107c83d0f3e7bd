// Deferred (nowait) target teams reductions executed by hidden helper threads
// must complete at the next taskwait and produce exact results.
// RUN: %clang-host -O0 %s -o %t && %run %t | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t2 && %run %t2 | %fc --match-full-lines
// RUN: %clang-nooffload -O2 %s -o %t3 && %run %t3 | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t4 && env OMP_TARGET_OFFLOAD=DISABLED %run %t4 | %fc --match-full-lines

#include <omp.h>
#include <stdio.h>

#define N 64

int main(void) {
  int s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)             \
    map(tofrom : s) nowait
  for (int i = 0; i < N; i++)
    s += i;
#pragma omp taskwait
  printf("single sum=%d\n", s); // CHECK: single sum=2016

  // Several deferred reductions in flight before one taskwait.
  int a = 0, mn = 1000000, mx = -1000000, b = 0;
  int arr[4] = {0, 0, 0, 0};
  double d = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : a)             \
    map(tofrom : a) nowait
  for (int i = 0; i < N; i++)
    a += i * i;
#pragma omp target teams distribute parallel for reduction(min : mn)          \
    map(tofrom : mn) nowait
  for (int i = 0; i < N; i++) {
    int v = (i * 37 + 11) % 97 + 5;
    mn = v < mn ? v : mn;
  }
#pragma omp target teams distribute parallel for reduction(max : mx)          \
    map(tofrom : mx) nowait
  for (int i = 0; i < N; i++) {
    int v = (i * 53 + 7) % 89 - 40;
    mx = v > mx ? v : mx;
  }
#pragma omp target teams distribute parallel for reduction(+ : arr[0 : 4])    \
    map(tofrom : arr[0 : 4]) nowait
  for (int i = 0; i < N; i++)
    arr[i % 4] += i;
#pragma omp target teams distribute parallel for reduction(+ : d)             \
    map(tofrom : d) nowait
  for (int i = 0; i < N; i++)
    d += 0.5 * i;
  // teams-only reduction (no distribute parallel for); only team 0
  // contributes so the result does not depend on the number of teams.
#pragma omp target teams reduction(+ : b) map(tofrom : b) nowait
  {
    if (omp_get_team_num() == 0)
      b += 5;
  }
#pragma omp taskwait
  printf("sum sq=%d\n", a); // CHECK-NEXT: sum sq=85344
  printf("min=%d\n", mn); // CHECK-NEXT: min=5
  printf("max=%d\n", mx); // CHECK-NEXT: max=48
  printf("arr=%d %d %d %d\n", arr[0], arr[1], arr[2], arr[3]); // CHECK-NEXT: arr=480 496 512 528
  printf("double=%.1f\n", d); // CHECK-NEXT: double=1008.0
  printf("teams=%d\n", b); // CHECK-NEXT: teams=5
  printf("done\n"); // CHECK-NEXT: done
  return 0;
}
