// Times a wait for the lifecycle tests that tell sleeping from spinning:
// its wall time and its CPU time on a CPU-time clock (the thread's or the
// process's), printed as "NAME slept: ..." when the CPU time is under
// 1/Divisor of the wall time, else "NAME spun: ...".
#include <stdio.h>
#include <time.h>
typedef struct {
  clockid_t Clock;
  double Wall, Cpu;
} WaitSpanTy;
static double ms(clockid_t Clock) {
  struct timespec T;
  clock_gettime(Clock, &T);
  return T.tv_sec * 1e3 + T.tv_nsec / 1e6;
}
static WaitSpanTy waitStart(clockid_t Clock) {
  WaitSpanTy S = {Clock, ms(CLOCK_MONOTONIC), ms(Clock)};
  return S;
}
static void waitReport(WaitSpanTy S, const char *Name, int Divisor) {
  double Wall = ms(CLOCK_MONOTONIC) - S.Wall, Cpu = ms(S.Clock) - S.Cpu;
  printf("%s %s: cpu %.1f ms, wall %.1f ms\n", Name,
         Cpu * Divisor < Wall ? "slept" : "spun", Cpu, Wall);
  fflush(stdout);
}
