// The sanitizer job's ThreadSanitizer suppressions (test/races/tsan.supp)
// must not hide races between OpenMP threads. Until 2026-11-30 they held
// `race:__kmp_`, which matched the creation stack of every libomp worker and
// hidden helper thread, so this plain data race between the workers of a
// parallel region in user code went unreported (exit status 0, no report);
// the seeded slot-pool race (scripts/sanitizer-check.sh "seeded") covers the
// transport's own code. Runs only in the sanitizer job (KLE_SANITIZER=thread),
// which must not set KLE_SANITIZER_LOG for it (the report is read from stderr).
// REQUIRES: cuda-standin, tsan
// RUN: %clang-sm90 -Xarch_host -fsanitize=thread -shared-libsan %s -o %t
// RUN: %standin-env not %run %t 2>&1 | %fc
// CHECK: WARNING: ThreadSanitizer: data race
// CHECK: Location is global 'shared_counter'
#include <stdio.h>
int shared_counter;
int main(void) {
  long s = 0;
#pragma omp parallel num_threads(4)
  {
    shared_counter++; // unsynchronized on purpose
  }
#pragma omp target teams distribute parallel for reduction(+ : s)
  for (int i = 0; i < 64; ++i)
    s += i;
  printf("s=%ld counter=%d\n", s, shared_counter);
  return 0;
}
