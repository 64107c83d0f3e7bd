// Four host threads, each with its own array, four target regions each.
#include "lifecycle.h"

#define T 4
#define S (N / T)

int main(void) {
  static int A[N], Want[N];
  for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
#pragma omp parallel num_threads(T)
  {
    int t = omp_get_thread_num();
    int *P = A + t * S, *W = Want + t * S;
    for (int k = 0; k < 4; ++k) {
      int OnHost = 0;
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost)
      for (int i = 0; i < S; ++i) {
        if (i == 0) OnHost = omp_is_initial_device();
        P[i] += 1;
      }
#pragma omp atomic
      HostRegions += OnHost;
      for (int i = 0; i < S; ++i) W[i] += OnHost;
    }
  }
  expectEq("A", A, Want, N);
  return finish();
}
