// A child forked after 'target ... nowait' regions exits. Before the libomp
// fix the child's exit waited forever in __kmp_hidden_helper_threads_deinitz_wait
// (from __kmp_internal_end_library) for a hidden helper team that exists
// only in the parent: libomp's atfork child handler reset the runtime but
// not the hidden helper state. Each shape forks after nowait regions were
// waited for; the child then calls exit(0) at once ("exit"), runs target
// regions itself first, synchronous and nowait ("offload": a new hidden
// helper team in the child), or returns from a parallel region's single
// thread after forking there ("parallel"). The parent waits at most 30 s
// for the child (a hang is reported, the child killed), then runs regions
// itself. Counts: regions that returned the right value.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t exit | %fc --match-full-lines
// RUN: %run %t offload | %fcs=CHECK,OFFLOAD --match-full-lines
// RUN: %run %t parallel | %fc --match-full-lines
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define R 8

static int regions(int nowait) {
  int ok = 0;
  int v[R] = {0};
  for (int k = 0; k < R; ++k) {
    int *p = &v[k];
    if (nowait) {
#pragma omp target map(tofrom : p[0:1]) firstprivate(k) nowait
      p[0] = k + 1;
    } else {
#pragma omp target map(tofrom : p[0:1]) firstprivate(k)
      p[0] = k + 1;
    }
  }
#pragma omp taskwait
  for (int k = 0; k < R; ++k)
    ok += v[k] == k + 1;
  return ok;
}

// Waits for the child at most 30 s: "child status=<exit status>", or
// "child signal=<n>", or "child hung" (then kills it).
static int reap(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) {
      if (WIFEXITED(st))
        printf("child status=%d\n", WEXITSTATUS(st));
      else
        printf("child signal=%d\n", WTERMSIG(st));
      return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  printf("child hung\n");
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 0;
}

static void child(const char *shape) {
  if (!strcmp(shape, "offload")) {
    int a = regions(0), b = regions(1);
    printf("child ok=%d+%d\n", a, b);
    fflush(stdout);
    exit(a + b == 2 * R ? 0 : 1);
  }
  exit(0);
}

int main(int argc, char **argv) {
  const char *shape = argc > 1 ? argv[1] : "exit";
  printf("parent ok=%d\n", regions(1));
  fflush(stdout);
  int good = 1;
  if (!strcmp(shape, "parallel")) {
#pragma omp parallel num_threads(2) reduction(& : good)
#pragma omp single
    {
      good = regions(1) == R;
      pid_t pid = fork();
      if (pid == 0)
        child(shape);
      good = good && reap(pid);
    }
  } else {
    pid_t pid = fork();
    if (pid == 0)
      child(shape);
    good = reap(pid);
  }
  printf("parent after ok=%d+%d\n", regions(0), regions(1));
  return !good;
}
// CHECK: parent ok=8
// OFFLOAD-NEXT: child ok=8+8
// CHECK-NEXT: child status=0
// CHECK-NEXT: parent after ok=8+8
