// omp_get_num_devices() as users call it, and device numbering, in a program
// that loads libomptarget late: the program links libomp only and dlopens
// libomptarget (RTLD_GLOBAL), then a library with a target region. libomp's
// omp_get_num_devices entry finds libomptarget's only once it is loaded, so
// the count is 0 before and the host plugin's devices after; the initial
// device is that count (patch 0007 reads it from the plugin manager on the
// launch path). A region on device 0 runs on the host plugin's device, one on
// omp_get_initial_device() on the host itself, under the default and the
// MANDATORY policy; under OMP_TARGET_OFFLOAD=DISABLED every region runs on
// the host. Stock LLVM 22.1.8 prints the same lines in these three runs.
// With "-" the library brings libomptarget itself (RTLD_LOCAL): libomp's
// lookup by name cannot find it, and stock's omp_get_num_devices returned 0
// and its checkDevice stopped at the first region ("failure of target
// construct while offloading is mandatory", under every policy). Now
// libomptarget hands libomp its entry points when it initializes (patch
// 0052) and the launch path counts libomptarget's own devices (patch 0007):
// the same lines as with the global libomptarget.
// RUN: %clang-host -O2 -fPIC -shared %S/Inputs/region_lib.c -o %t.lib.so
// RUN: %clang-nooffload -O2 %s -o %t -ldl
// RUN: %run %t %kle-prefix/lib/libomptarget.so %t.lib.so | %fc
// RUN: env OMP_TARGET_OFFLOAD=MANDATORY %run %t %kle-prefix/lib/libomptarget.so %t.lib.so | %fc
// RUN: env OMP_TARGET_OFFLOAD=DISABLED %run %t %kle-prefix/lib/libomptarget.so %t.lib.so | %fc=OFF
// RUN: %run %t - %t.lib.so | %fc
// CHECK: before 0
// CHECK-NEXT: after [[N:[1-9][0-9]*]] initial [[N]]
// CHECK-NEXT: device 0 initial 0
// CHECK-NEXT: initial device [[N]] initial 1
// CHECK-NEXT: default device initial 0
// OFF: before 0
// OFF-NEXT: after 0 initial 0
// OFF-NEXT: device 0 initial 1
// OFF-NEXT: initial device 0 initial 1
// OFF-NEXT: default device initial 1

#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  printf("before %d\n", omp_get_num_devices());
  // "-": no global libomptarget; the library brings its own, RTLD_LOCAL.
  if (argv[1][0] != '-' && !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    printf("dlopen failed: %s\n", dlerror());
    return 1;
  }
  void *Lib = dlopen(argv[2], RTLD_NOW);
  int (*Region)(int) = Lib ? (int (*)(int))dlsym(Lib, "lib_region_on_initial") : 0;
  if (!Region) {
    printf("dlopen failed: %s\n", dlerror());
    return 1;
  }
  printf("after %d initial %d\n", omp_get_num_devices(), omp_get_initial_device());
  printf("device 0 initial %d\n", Region(0));
  int Initial = omp_get_initial_device();
  printf("initial device %d initial %d\n", Initial, Region(Initial));
  printf("default device initial %d\n", Region(omp_get_default_device()));
  return 0;
}
