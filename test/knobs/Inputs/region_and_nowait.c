// One synchronous region and one nowait region, so the CUDA plugin and the
// nowait completer both read their knobs.
#include <stdio.h>
int main(void) {
  int A = 1, B = 2;
#pragma omp target map(tofrom : A)
  A++;
#pragma omp target map(tofrom : B) nowait
  B++;
#pragma omp taskwait
  printf("regions done\n");
  return 0;
}
