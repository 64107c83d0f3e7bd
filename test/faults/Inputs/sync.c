// Image load, first launch, steady state (8 launches), target data with
// update to/from, exit.
#include "lifecycle.h"

int main(void) {
  static int A[N], Want[N], B[N], WantB[N];
  for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
  int OnHost = 0;
  for (int k = 0; k < 8; ++k) {
    OnHost = 0;
#pragma omp target teams distribute parallel for map(tofrom : A[0:N], OnHost)
    for (int i = 0; i < N; ++i) {
      if (i == 0) OnHost = omp_is_initial_device();
      A[i] += 1;
    }
    HostRegions += OnHost;
    for (int i = 0; i < N; ++i) Want[i] += OnHost;
    expectEq("A", A, Want, N);
  }
  // Round trip through the device copy: on the host device the updates are
  // no-ops, so B keeps what the host wrote last.
  for (int i = 0; i < N; ++i) B[i] = i;
#pragma omp target enter data map(to : B[0:N])
  for (int i = 0; i < N; ++i) B[i] = 3 * i;
#pragma omp target update to(B[0:N])
  for (int i = 0; i < N; ++i) B[i] = 0;
#pragma omp target update from(B[0:N])
  for (int i = 0; i < N; ++i) WantB[i] = OnHost ? 0 : 3 * i;
  expectEq("B", B, WantB, N);
#pragma omp target exit data map(delete : B[0:N])
  return finish();
}
