// fork() after nowait regions (waited for); the child offloads itself
// (synchronous and nowait regions, on its own array) and exits with its own
// result; the parent reaps the child and runs more regions. The program's
// outcome is the worse of the two: a child killed by a signal is re-raised
// in the parent once it finished (so a child's fatal error is the
// program's), a child's failure status is the program's. A child that
// offloads while the parent has regions in flight at the fork can wait
// forever on a libomptarget lock a parent thread held then (docs/DESIGN.md):
// not swept; test/lifecycle/fork_shapes.c covers regions in flight with a child that
// does not offload.
#include "lifecycle.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define K 4
#define S (N / K)

static int Parent[N], Child[N], Want[N], OnHost[K];
static int *A = Parent;

// K regions over A, nowait or not; the caller waits for nowait ones.
static void regions(int Nowait) {
  for (int k = 0; k < K; ++k) {
    int *P = A + k * S;
    if (Nowait) {
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost[k:1]) nowait
      for (int i = 0; i < S; ++i) {
        if (i == 0) OnHost[k] = omp_is_initial_device();
        P[i] += 1;
      }
    } else {
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost[k:1])
      for (int i = 0; i < S; ++i) {
        if (i == 0) OnHost[k] = omp_is_initial_device();
        P[i] += 1;
      }
    }
  }
}

static void account(void) {
  for (int k = 0; k < K; ++k) {
    HostRegions += OnHost[k];
    for (int i = 0; i < S; ++i) Want[k * S + i] += OnHost[k];
  }
  expectEq("A", A, Want, N);
}

int main(void) {
  for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
  regions(0);
  account();
  fflush(stdout);
  regions(1);
#pragma omp taskwait
  account();
  fflush(stdout);
  pid_t Pid = fork();
  if (Pid == 0) {
    A = Child;
    for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
    HostRegions = 0;
    regions(0);
    account();
    regions(1);
#pragma omp taskwait
    account();
    exit(finish());
  }
  int St = 0;
  if (Pid < 0 || waitpid(Pid, &St, 0) != Pid) {
    printf("result WRONG fork or waitpid failed\n");
    Wrong = 1;
  }
  regions(1);
#pragma omp taskwait
  account();
  int Rc = finish();
  if (WIFSIGNALED(St)) {
    signal(WTERMSIG(St), SIG_DFL);
    raise(WTERMSIG(St));
  }
  return Rc ? Rc : WIFEXITED(St) ? WEXITSTATUS(St) : 1;
}
