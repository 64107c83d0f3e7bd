// The shared library that test/host/dlclose_pending_host_task.c dlopens: one
// target region, so its constructor registers an offload image and its
// dlclose unregisters it (__tgt_unregister_lib).
#include <stdio.h>

long lib_work(void) {
  long sum = 0;
#pragma omp target map(tofrom : sum)
  for (int i = 0; i < 100; ++i)
    sum += i;
  return sum;
}
