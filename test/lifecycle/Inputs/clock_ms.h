// Milliseconds on a clock (CLOCK_MONOTONIC, a CPU-time clock), for the
// lifecycle tests that compare a wait's CPU time with its wall time.
#include <time.h>
static double ms(clockid_t Clock) {
  struct timespec T;
  clock_gettime(Clock, &T);
  return T.tv_sec * 1e3 + T.tv_nsec / 1e6;
}
