// The library that exit_pending_dlopen.c opens with dlopen: `n` nowait teams
// reductions, never waited for here.
static long S[64];
void lib_burst(int n) {
  for (int k = 0; k < n; ++k) {
    long *p = &S[k % 64];
#pragma omp target teams distribute parallel for reduction(+ : p[0])         \
    map(tofrom : p[0]) nowait
    for (int i = 0; i < 1024; ++i)
      p[0] += i;
  }
}
