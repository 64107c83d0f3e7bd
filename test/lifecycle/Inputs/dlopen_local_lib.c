// Library for dlopen_local_after_libomp.c: 4 nowait regions, then a taskwait.
#include <omp.h>
#include <stdio.h>
int run(void) {
  int v[4] = {0};
  for (int r = 0; r < 4; ++r) {
#pragma omp target map(tofrom : v[r : 1]) nowait
    v[r] = 1;
  }
#pragma omp taskwait
  printf("lib: devices %d\n", omp_get_num_devices());
  return 0;
}
