// multi-tu.test: a target region in a header, instantiated by two units.
// clang names both units' kernels after this header's file id.
template <typename T> T hsum(int n) {
  T s = 0;
#pragma omp target teams distribute parallel for num_teams(8) reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < n; ++i)
    s += (T)i;
  return s;
}
