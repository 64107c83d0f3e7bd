// Counts the futex wake-ups made through syscall() (libomp's wake of a
// thread sleeping in a wait for target tasks; glibc's own locks do not call
// syscall()), by interposing syscall() in the test program: FutexWakes for
// the process, ThreadFutexWakes for the calling thread. Link with -ldl.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>

static long FutexWakes;
static __thread long ThreadFutexWakes;

long syscall(long Number, ...) {
  static long (*Real)(long, ...);
  if (!Real)
    Real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list Ap;
  va_start(Ap, Number);
  long A[6];
  for (int I = 0; I < 6; ++I)
    A[I] = va_arg(Ap, long);
  va_end(Ap);
  if (Number == SYS_futex && (A[1] & FUTEX_CMD_MASK) == FUTEX_WAKE) {
    __atomic_fetch_add(&FutexWakes, 1, __ATOMIC_RELAXED);
    ++ThreadFutexWakes;
  }
  return Real(Number, A[0], A[1], A[2], A[3], A[4], A[5]);
}
