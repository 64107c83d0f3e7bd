// interop init/use/destroy with depend(...) must wait for their predecessor
// tasks under every offload policy. With OMP_TARGET_OFFLOAD=DISABLED the
// runtime returned (omp_interop_none, or at once for a use/destroy of it)
// before the wait, so the host read after each construct saw the
// predecessor's write missing (llvm/llvm-project#62627's shape). Patch 0011.
// RUN: %clang-host %s -o %t
// RUN: env OMP_TARGET_OFFLOAD=DISABLED %run %t 2>&1 | %fc
// RUN: env OMP_TARGET_OFFLOAD=DEFAULT %run %t 2>&1 | %fc
// RUN: env OMP_TARGET_OFFLOAD=MANDATORY %run %t 2>&1 | %fc
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 5

int main(void) {
  int missed[3] = {0, 0, 0};
  for (int r = 0; r < ROUNDS; ++r) {
    int x = 0;
    omp_interop_t o = omp_interop_none;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task depend(out : x) shared(x)
      { usleep(20000); x = 1; }
#pragma omp interop init(targetsync : o) depend(inout : x)
      missed[0] += x != 1;
#pragma omp task depend(out : x) shared(x)
      { usleep(20000); x = 2; }
#pragma omp interop use(o) depend(inout : x)
      missed[1] += x != 2;
#pragma omp task depend(out : x) shared(x)
      { usleep(20000); x = 3; }
#pragma omp interop destroy(o) depend(inout : x)
      missed[2] += x != 3;
    }
  }
  printf("missed init=%d use=%d destroy=%d of %d\n", missed[0], missed[1],
         missed[2], ROUNDS);
  return 0;
}
// CHECK: missed init=0 use=0 destroy=0 of 5
