// Two host threads map one array at the same time, round after round: one
// creates the map entry and copies it in on its stream, the other finds the
// entry while that copy may still be pending and launches on its own stream.
// Its kernel must be ordered after the copy (LIBOMPTARGET_MAP_FORCE_ATOMIC, on
// by default): the stand-ins' happens-before check (H) reports any kernel or
// copy not ordered after an earlier one that touches its device bytes. With
// the ordering switched off (LIBOMPTARGET_MAP_FORCE_ATOMIC=false) the same
// program must fail with H: the negative control. The program maps whole
// variables only, so the check also counts the kernels' argument words
// (HB_ARGS=1). Kernels take 20 ms, so that a thread's region is still in
// flight when the other thread finds the entry even on a loaded machine
// (with 0 ms, 1 of 3 runs of the control passed under lit's load). Even so
// some runs of the control see every round ordered (cause not found yet):
// it runs up to 5 times and must fail with H in one of them.
// REQUIRES: cuda-standin || hsa-standin
// DEFINE: %{env} = KLE_STANDIN_HB_ARGS=1 KLE_STANDIN_DELAY_US=500:1500 KLE_STANDIN_KERNEL_US=20000
// DEFINE: %{neg} = LIBOMPTARGET_MAP_FORCE_ATOMIC=false
// RUN: %cuda{ %clang-sm90 %s -o %t.cuda %}
// RUN: %cuda{ %cuda %{env} %t.cuda | %fcs=CHECK,CUDA %}
// RUN: %cuda{ bash -c 'for i in 1 2 3 4 5; do %cuda %{env} %{neg} %t.cuda > %t.neg.cuda || exit 0; done; exit 1' %}
// RUN: %cuda{ %fcs=NEG,NEG-CUDA < %t.neg.cuda %}
// RUN: %hsa{ %clang-gfx90a %s -o %t.hsa %}
// RUN: %hsa{ %hsa %{env} %t.hsa | %fcs=CHECK,HSA %}
// RUN: %hsa{ bash -c 'for i in 1 2 3 4 5; do %hsa %{env} %{neg} %t.hsa > %t.neg.hsa || exit 0; done; exit 1' %}
// RUN: %hsa{ %fcs=NEG,NEG-HSA < %t.neg.hsa %}
#include <stdio.h>
#define N 1024
#define ROUNDS 20
static int x[N];
int main(void) {
  for (int i = 0; i < N; ++i)
    x[i] = i;
  int regions = 0;
#pragma omp parallel num_threads(2) reduction(+ : regions)
  for (int k = 0; k < ROUNDS; ++k) {
#pragma omp barrier
    long s = 0;
#pragma omp target teams distribute parallel for num_teams(2) map(to : x) \
    map(tofrom : s) reduction(+ : s)
    for (int i = 0; i < N; ++i)
      s += x[i];
    ++regions;
  }
  printf("done regions=%d\n", regions);
  fflush(stdout);
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: done regions=40
// CUDA: kle-standin: launches=40 violations=0
// HSA: kle-hsa-standin: launches=40 violations=0
// The kernel that reads x and the copy into x, named in either order (HSA
// checks when each starts, CUDA when each is enqueued):
// NEG: VIOLATION {{.*}}: H happens-before: {{.*(launch #[0-9]+ .* not ordered after (cuMemcpyHtoDAsync|copy op #[0-9]+) of 4096 bytes|of 4096 bytes .* not ordered after launch #)}}
// NEG-CUDA: kle-standin: FAILED
// NEG-HSA: kle-hsa-standin: FAILED
