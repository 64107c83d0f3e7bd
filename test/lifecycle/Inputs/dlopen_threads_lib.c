// The library that dlopen_threads_at_once.c opens four copies of, one per
// thread: a synchronous teams reduction and a nowait region.
int lib_run(void) {
  int A[64], S = 0, X = 1;
  for (int I = 0; I < 64; ++I)
    A[I] = I;
#pragma omp target teams distribute parallel for reduction(+ : S) map(to : A)
  for (int I = 0; I < 64; ++I)
    S += A[I];
#pragma omp target map(tofrom : X) nowait
  X += 1;
#pragma omp taskwait
  return S * 10 + X;
}
