// test/host/no_image_registered.test: one target region and
// omp_get_num_devices in a program linked without offloading.
#include <omp.h>
#include <stdio.h>
int main(void) {
  int x = 0, on_host = -1;
#pragma omp target map(tofrom : x, on_host)
  { x = 42; on_host = omp_is_initial_device(); }
  printf("x=%d on_host=%d devices=%d\n", x, on_host, omp_get_num_devices());
  return x != 42;
}
