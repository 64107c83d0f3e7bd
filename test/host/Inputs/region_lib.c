// The shared library that test/host/num_devices_dlopen.c dlopens: one target
// region on a given device, reporting where it ran.
#include <omp.h>

int lib_region_on_initial(int Dev) {
  int Initial = -1;
#pragma omp target device(Dev) map(from : Initial)
  Initial = omp_is_initial_device();
  return Initial;
}
