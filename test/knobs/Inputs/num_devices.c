// Prints the number of offload devices, then runs one target region.
#include <omp.h>
#include <stdio.h>

int main(void) {
  printf("devices=%d\n", omp_get_num_devices());
  int X = 1;
#pragma omp target map(tofrom : X)
  X += 1;
  printf("region done\n");
  return 0;
}
