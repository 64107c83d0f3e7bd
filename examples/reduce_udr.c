/* A user-defined reduction (declare reduction) across teams: component-wise
 * sum of a small struct plus a running maximum. */
#include "example.h"

typedef struct {
  long count;
  double sum;
  int max;
} stats_t;

#pragma omp declare reduction(merge : stats_t :                                \
    omp_out.count += omp_in.count, omp_out.sum += omp_in.sum,                  \
    omp_out.max = omp_in.max > omp_out.max ? omp_in.max : omp_out.max)         \
    initializer(omp_priv = (stats_t){0, 0.0, -2147483647})

int main(int argc, char **argv) {
  int dev = kle_device(argc, argv);
  const int N = 50000;
  stats_t st = {0, 0.0, -2147483647};
#pragma omp target teams distribute parallel for device(dev) num_teams(64)    \
    reduction(merge : st) map(tofrom : st)
  for (int i = 0; i < N; ++i) {
    st.count += 1;
    st.sum += 2.0;
    st.max = i > st.max ? i : st.max;
  }
  KLE_CHECK(st.count == N, "count=%ld want %d", st.count, N);
  KLE_CHECK(st.sum == 2.0 * N, "sum=%f want %f", st.sum, 2.0 * N);
  KLE_CHECK(st.max == N - 1, "max=%d want %d", st.max, N - 1);
  return kle_finish("reduce_udr", dev);
}
