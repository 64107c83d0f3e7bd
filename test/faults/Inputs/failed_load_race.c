// Two host threads; the first target region's image load fails (the test
// injects the failure) in thread 0, whose fatal error ends the program with
// abort(). The program's SIGABRT handler holds that abort open until thread 1,
// released by the handler, has run its own target region: the window in
// which a second host thread reaches the device while another one aborts
// (a crash handler that flushes logs keeps it open the same way). Thread 1
// must get a clean fatal error too (a second SIGABRT), never a SIGSEGV.
// Prints "thread 1 region done" if its region returned.
#include <omp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int Aborting; // thread 0 is in its SIGABRT handler
static atomic_int Done;     // thread 1's region returned

static void onAbort(int Sig) {
  if (atomic_exchange(&Aborting, 1)) {
    // The second abort (thread 1's fatal error): end as abort() does.
    signal(Sig, SIG_DFL);
    raise(Sig);
    return;
  }
  static const char Msg[] = "test: first abort held open\n";
  ssize_t R = write(2, Msg, sizeof(Msg) - 1);
  (void)R;
  // Up to 10 s for thread 1 to end the process (a second abort) or return.
  for (int i = 0; i < 1000 && !atomic_load(&Done); ++i) {
    struct timespec T = {0, 10 * 1000 * 1000};
    nanosleep(&T, NULL);
  }
  signal(Sig, SIG_DFL);
  raise(Sig);
}

int main(void) {
  signal(SIGABRT, onAbort);
  int A[64];
  memset(A, 0, sizeof(A));
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 1)
      while (!atomic_load(&Aborting)) {
        struct timespec T = {0, 1000 * 1000};
        nanosleep(&T, NULL);
      }
#pragma omp target map(tofrom : A)
    A[0] += 1;
    if (omp_get_thread_num() == 1) {
      printf("thread 1 region done\n");
      fflush(stdout);
      atomic_store(&Done, 1);
    }
  }
  return 0;
}
