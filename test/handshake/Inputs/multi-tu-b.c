// Second translation unit of multi-tu.test: another teams reduction.
long reduce_b(int n) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(4) reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < n; ++i)
    s += 2 * i;
  return s;
}
