// nowait regions chained by depend, target update ... nowait, taskwait; then
// nowait regions still in flight when main returns (exit with work pending).
#include "lifecycle.h"

#define R 8
#define S (N / R)

int main(void) {
  static int A[N], Want[N], Tail[N];
  static int OnHost[R];
  for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int r = 0; r < R; ++r) {
      int *P = A + r * S;
#pragma omp target enter data map(to : P[0:S]) depend(inout : P[0]) nowait
#pragma omp target teams distribute parallel for map(tofrom : OnHost[r:1]) depend(inout : P[0]) nowait
      for (int i = 0; i < S; ++i) {
        if (i == 0) OnHost[r] = omp_is_initial_device();
        P[i] += 1;
      }
#pragma omp target update from(P[0:S]) depend(inout : P[0]) nowait
#pragma omp target exit data map(release : P[0:S]) depend(inout : P[0]) nowait
    }
#pragma omp taskwait
  }
  for (int r = 0; r < R; ++r) {
    HostRegions += OnHost[r];
    for (int i = 0; i < S; ++i) Want[r * S + i] += OnHost[r];
  }
  expectEq("A", A, Want, N);
  int Rc = finish();
  // In flight at exit: the runtime must finish them (or fail cleanly).
  for (int r = 0; r < 4; ++r) {
    int *P = Tail + r * S;
#pragma omp target teams distribute parallel for map(tofrom : P[0:S]) nowait
    for (int i = 0; i < S; ++i) P[i] += 1;
  }
  return Rc;
}
