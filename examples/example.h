/* Shared helpers for the kle-offload examples.
 *
 * Each example runs its target regions on one device: argv[1] if given, else
 * the default device. It prints one line per check and, last, one summary line
 *   "<example> device=<n> uid=<uid> RESULT OK|FAIL"
 * and exits 0 only when every check passed. */
#ifndef KLE_EXAMPLE_H
#define KLE_EXAMPLE_H
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int kle_failures = 0;

static int kle_device(int argc, char **argv) {
  int dev = argc > 1 ? atoi(argv[1]) : omp_get_default_device();
  if (dev < 0 || dev > omp_get_num_devices()) {
    fprintf(stderr, "device %d out of range (0..%d)\n", dev, omp_get_num_devices());
    exit(2);
  }
  return dev;
}

#define KLE_CHECK(cond, ...)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++kle_failures;                                                          \
      printf("FAIL: ");                                                        \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

static int kle_finish(const char *name, int dev) {
  const char *uid = omp_get_uid_from_device(dev);
  printf("%s device=%d uid=%s RESULT %s\n", name, dev, uid ? uid : "?",
         kle_failures ? "FAIL" : "OK");
  return kle_failures != 0;
}
#endif
