// omp_pause_resource_all(omp_pause_hard) between rounds of nowait regions
// (from a parallel region's single thread and from the initial thread), then
// synchronous regions after the last pause: libomp ends and restarts its
// threads, the hidden helper team included, while libomptarget and the
// device stay up.
#include "lifecycle.h"

#define ROUNDS 3
#define K 4
#define S (N / K)

static void account(int *A, int *Want, int *OnHost) {
  for (int k = 0; k < K; ++k) {
    HostRegions += OnHost[k];
    for (int i = 0; i < S; ++i) Want[k * S + i] += OnHost[k];
  }
  expectEq("A", A, Want, N);
}

int main(void) {
  static int A[N], Want[N];
  int OnHost[K];
  for (int i = 0; i < N; ++i) A[i] = Want[i] = i;
  for (int r = 0; r < ROUNDS; ++r) {
#pragma omp parallel num_threads(2)
#pragma omp single
    {
      for (int k = 0; k < K / 2; ++k) {
        int *P = A + k * S;
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost[k:1]) nowait
        for (int i = 0; i < S; ++i) {
          if (i == 0) OnHost[k] = omp_is_initial_device();
          P[i] += 1;
        }
      }
#pragma omp taskwait
    }
    for (int k = K / 2; k < K; ++k) {
      int *P = A + k * S;
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost[k:1]) nowait
      for (int i = 0; i < S; ++i) {
        if (i == 0) OnHost[k] = omp_is_initial_device();
        P[i] += 1;
      }
    }
#pragma omp taskwait
    account(A, Want, OnHost);
    if (omp_pause_resource_all(omp_pause_hard)) {
      printf("result WRONG omp_pause_resource_all failed\n");
      Wrong = 1;
    }
  }
  for (int k = 0; k < K; ++k) {
    int *P = A + k * S;
#pragma omp target teams distribute parallel for map(tofrom : P[0:S], OnHost[k:1])
    for (int i = 0; i < S; ++i) {
      if (i == 0) OnHost[k] = omp_is_initial_device();
      P[i] += 1;
    }
  }
  account(A, Want, OnHost);
  return finish();
}
