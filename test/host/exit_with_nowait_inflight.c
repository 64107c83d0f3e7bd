// Returning from main with deferred (nowait) target regions not yet waited
// for: the runtime finishes them before it unregisters the image at exit
// (patch 0004) instead of crashing in a torn-down libomptarget. Each region
// prints once from the host device and stores its sum in static storage; a
// destructor, which runs after the atexit handlers, prints the total, so the
// output shows every region ran to completion after main returned.
// RUN: %clang-host -O2 %s -o %t
// RUN: %run %t | sort | %fc
// RUN: %run %t | sort | %fc
// RUN: %run %t | sort | %fc
#include <stdio.h>

#define N 256
#define R 16

static long sums[R];

// Runs after the atexit handlers (so after the image was unregistered and
// the runtime torn down): every region must have stored its sum by then.
__attribute__((destructor)) static void report(void) {
  long total = 0;
  for (int k = 0; k < R; ++k)
    total += sums[k];
  printf("zzz sums total=%ld\n", total);
  fflush(stdout);
}

int main(void) {
  for (int k = 0; k < R; ++k) {
    long *s = &sums[k];
#pragma omp target teams distribute parallel for reduction(+ : s[0])      \
    map(tofrom : s[0]) firstprivate(k) nowait
    for (int i = 0; i < N; ++i) {
      s[0] += i + k;
      if (i == 0)
        printf("region %d ran\n", k);
    }
  }
  printf("returning with target regions in flight\n");
  fflush(stdout);
  return 0;
}
// Sorted output: the 16 region lines, main's line, then the destructor's
// total: sum over k of (N(N-1)/2 + N k) = 16 * 32640 + 256 * 120 = 552960.
// CHECK-COUNT-16: region {{[0-9]+}} ran
// CHECK-NEXT: returning with target regions in flight
// CHECK-NEXT: zzz sums total=552960
