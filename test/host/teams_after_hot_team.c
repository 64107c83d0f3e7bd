// Patch 0006: a teams construct whose teams master forks a parallel region
// leaves that construct's info (th_teams_microtask, th_teams_level,
// th_teams_size) on the threads of the root's hot team; reused for an
// ordinary parallel region, they kept it, and a teams construct met by one of
// them then forked with th_set_nproc == 0 (assertion th_set_nproc >= 1, or
// SIGSEGV). Both the offload case (target teams on the host device, in a
// 1-thread then a 2-thread parallel region) and the host-only case (a league
// of 2 on the initial thread, then an orphaned teams in each thread of a
// parallel region) crashed every run before the patch.
// RUN: %clang-host -O2 %s -o %t && %run %t | %fc --match-full-lines
// RUN: %clang-nooffload -O2 %s -o %t2 && %run %t2 | %fc --match-full-lines
// RUN: %clang-host -O2 %s -o %t3 && env OMP_NUM_THREADS=4 %run %t3 | %fc --match-full-lines

#include <omp.h>
#include <stdio.h>

static void orphanedTeams(int *R) {
#pragma omp teams
  {
    if (omp_get_team_num() == 0)
      *R = omp_get_num_teams();
  }
}

int main(void) {
  int A = 0, B = 0, X = 0, R[2] = {0, 0};
#pragma omp parallel num_threads(1)
  {
#pragma omp target teams map(tofrom : A)
    A = omp_get_num_teams();
  }
#pragma omp parallel num_threads(2)
  {
#pragma omp target teams map(tofrom : B)
    {
      if (omp_get_team_num() == 0)
        B = omp_get_num_teams() >= 1;
    }
  }
  printf("target: a=%d b=%d\n", A, B); // CHECK: target: a=1 b=1

#pragma omp teams num_teams(2) thread_limit(2)
  {
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic
      X++;
    }
  }
#pragma omp parallel num_threads(2)
  orphanedTeams(&R[omp_get_thread_num()]);
  int Threads = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  Threads = omp_get_num_threads();
  printf("host: teams ran=%d orphaned=%d\n", X >= 2,
         R[0] >= 1 && (Threads < 2 || R[1] >= 1)); // CHECK-NEXT: host: teams ran=1 orphaned=1
  printf("done\n"); // CHECK-NEXT: done
  return 0;
}
