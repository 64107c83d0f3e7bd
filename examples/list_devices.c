/* Prints one line per offload device: "<n> <uid>". Used by the example runner. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  for (int d = 0; d < omp_get_num_devices(); ++d) {
    const char *uid = omp_get_uid_from_device(d);
    printf("%d %s\n", d, uid ? uid : "?");
  }
  return 0;
}
