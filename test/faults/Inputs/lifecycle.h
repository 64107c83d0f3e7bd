// Shared by the fault sweep's lifecycle programs (driver-neutral: built for
// sm_90 and gfx90a alike). Kernels compute nothing on a stand-in, so a region
// that ran on the device returns its tofrom-mapped bytes unchanged, and one
// that ran on the host (a fallback) adds 1: each region reports where it ran
// and the program checks the bytes it expects from that. Prints
// "result ok host=<regions that ran on the host>" (status 0) or
// "result WRONG ..." (status 1).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096

static int Wrong;
static int HostRegions; // regions that ran on the host (a fallback)

static void expectEq(const char *What, const int *A, const int *Want, int n) {
  for (int i = 0; i < n; ++i)
    if (A[i] != Want[i]) {
      printf("result WRONG %s[%d]=%d want %d\n", What, i, A[i], Want[i]);
      Wrong = 1;
      return;
    }
}

static int finish(void) {
  if (!Wrong)
    printf("result ok host=%d\n", HostRegions);
  fflush(stdout);
  return Wrong;
}
