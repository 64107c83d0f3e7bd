// fork() after offloading, on both stand-ins (fork-safe: the child's
// stand-in state is its own, test/standin/core/fork.h): the child exits at once after
// the parent's synchronous regions ("sync"), after nowait regions waited for
// ("nowait"; before the libomp fix the child hung at exit waiting for the
// parent's hidden helper team), with nowait regions still in flight in the
// parent ("inflight"), or runs 4 synchronous and 4 nowait regions itself
// ("offload"), or runs 4 synchronous regions and forks a grandchild that
// exits at once ("grandchild"; the grandchild's report once counted the
// signals its parent had inherited twice). The parent reaps the child (30 s at most: "child hung"), then
// runs 4 more nowait regions. Exact launches per process: the child's
// report ("(child)") counts only its own; the parent's 4 synchronous, 4
// nowait before the fork (not in "sync") and 4 after.
// "inflight" forks 20 ms after starting its nowait regions, with every
// stand-in operation delayed 50 to 80 ms, so the parent's work is queued at
// the fork ("queued at the fork") and no thread of the parent is inside the
// runtime then: a thread's half-done work there (an allocation not yet
// recorded, a resource pool half grown) is lost to the child, as it is in
// any fork(). The child finishes its copy of the queued work before it goes
// on (test/standin/core/fork.h). Before that, the child's teardown freed memory the work
// still used (B lifetime violations, 8 of 10 runs on the CUDA stand-in); and
// before patch 0025 the HSA child's exit could hang in AMDGPUQueueTy::deinit
// on a queue lock a parent thread held at the fork (2 of 10 runs).
// REQUIRES: cuda-standin || hsa-standin
// TSan does not support a child that starts threads after a multi-threaded
// fork, as the stand-ins' child does.
// UNSUPPORTED: tsan
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda %t.cuda sync | %fcs=CHECK,CUDA,CUDA8,CUDA-EXIT %}
// RUN: %cuda{ %cuda %t.cuda nowait | %fcs=CHECK,CUDA,CUDA12,CUDA-EXIT %}
// RUN: %cuda{ %cuda KLE_STANDIN_DELAY_US=50000:80000 %t.cuda inflight | %fcs=CHECK,CUDA,CUDA12,CUDA-EXIT,CUDA-INFLIGHT %}
// RUN: %cuda{ %cuda %t.cuda offload | %fcs=CHECK,CUDA,CUDA12,CUDA-OFFLOAD %}
// RUN: %cuda{ %cuda %t.cuda grandchild | %fcs=CHECK,CUDA,CUDA12,CUDA-GRAND %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa %t.hsa sync | %fcs=CHECK,HSA,HSA8,HSA-EXIT %}
// RUN: %hsa{ %hsa %t.hsa nowait | %fcs=CHECK,HSA,HSA12,HSA-EXIT %}
// RUN: %hsa{ %hsa KLE_STANDIN_DELAY_US=50000:80000 %t.hsa inflight | %fcs=CHECK,HSA,HSA12,HSA-EXIT,HSA-INFLIGHT %}
// RUN: %hsa{ %hsa %t.hsa offload | %fcs=CHECK,HSA,HSA12,HSA-OFFLOAD %}
// RUN: %hsa{ %hsa %t.hsa grandchild | %fcs=CHECK,HSA,HSA12,HSA-GRAND %}
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define R 4
#define S 256

static int A[3][R][S];

// R target regions on A[set]; nowait ones are waited for only if wait.
static void regions(int set, int nowait, int wait) {
  for (int k = 0; k < R; ++k) {
    int *p = A[set][k];
    if (nowait) {
#pragma omp target teams distribute parallel for map(tofrom : p[0:S]) nowait
      for (int i = 0; i < S; ++i) p[i] += 1;
    } else {
#pragma omp target teams distribute parallel for map(tofrom : p[0:S])
      for (int i = 0; i < S; ++i) p[i] += 1;
    }
  }
  if (wait) {
#pragma omp taskwait
  }
}

static int reap(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      if (WIFEXITED(st))
        printf("child status=%d\n", WEXITSTATUS(st));
      else
        printf("child signal=%d\n", WTERMSIG(st));
      fflush(stdout);
      return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  printf("child hung\n");
  fflush(stdout);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 0;
}

int main(int argc, char **argv) {
  const char *shape = argc > 1 ? argv[1] : "sync";
  regions(0, 0, 1);
  if (strcmp(shape, "sync"))
    regions(1, 1, strcmp(shape, "inflight") != 0);
  if (!strcmp(shape, "inflight")) {
    // Long enough for the hidden helpers to submit the regions, short of the
    // planted delays that keep them in flight.
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  printf("forking\n");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (!strcmp(shape, "offload")) {
      regions(2, 0, 1);
      regions(2, 1, 1);
    }
    if (!strcmp(shape, "grandchild")) {
      regions(2, 0, 1);
      pid_t grand = fork();
      if (grand == 0) {
        printf("grandchild exiting\n");
        fflush(stdout);
        exit(0);
      }
      if (!reap(grand))
        exit(1);
    }
    printf("child exiting\n");
    fflush(stdout);
    exit(0);
  }
  int good = reap(pid);
#pragma omp taskwait
  regions(2, 1, 1);
  printf("parent done\n");
  fflush(stdout);
  return !good;
}
// CHECK-NOT: VIOLATION
// CHECK: forking
// CUDA-INFLIGHT: kle-standin(child): {{[1-9][0-9]*}} operations queued at the fork
// HSA-INFLIGHT: kle-hsa-standin(child): {{[1-9][0-9]*}} packets and copies queued at the fork
// CUDA-GRAND: kle-standin(child)(child): live device=0 pinned=0 managed=0
// CUDA-GRAND: kle-standin(child)(child): launches=0 violations=0
// CUDA-GRAND: child status=0
// HSA-GRAND: kle-hsa-standin(child)(child): live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA-GRAND: kle-hsa-standin(child)(child): launches=0 violations=0
// HSA-GRAND: child status=0
// CUDA-INFLIGHT: kle-standin(child): live device=0 pinned=0 managed=0 {{.*}}at=cuDevicePrimaryCtxRelease
// CUDA: kle-standin(child): live device=0 pinned=0 managed=0
// HSA: kle-hsa-standin(child): live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// CUDA-OFFLOAD: kle-standin(child): launches=8 violations=0
// CUDA-EXIT: kle-standin(child): launches=0 violations=0
// HSA-OFFLOAD: kle-hsa-standin(child): launches=8 violations=0
// HSA-EXIT: kle-hsa-standin(child): launches=0 violations=0
// CUDA-GRAND: kle-standin(child): launches=4 violations=0
// HSA-GRAND: kle-hsa-standin(child): launches=4 violations=0
// CHECK: child status=0
// CHECK-NEXT: parent done
// CUDA: kle-standin: live device=0 pinned=0 managed=0
// CUDA8: kle-standin: launches=8 violations=0
// CUDA12: kle-standin: launches=12 violations=0
// HSA: kle-hsa-standin: live device=0 fine=0 kernarg=0 host-coarse=0 locked=0 signals=0 queues=0 executables=0 handlers=0 copies=0
// HSA8: kle-hsa-standin: launches=8 violations=0
// HSA12: kle-hsa-standin: launches=12 violations=0
