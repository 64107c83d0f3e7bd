// __kle_bench_set_wait (the benchmark-only switch, KLEBenchSwitch.h) changes
// the CUDA plugin's busy-wait from the next wait: with
// LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=10 s in the environment, 0 makes a
// synchronous region's wait block and pay the planted wake-up, -1 restores
// the environment's polling, and -2 is refused without a change. Counts from
// the stand-in (kle_standin_wait_counts); every stream operation is held
// 20 ms, so each wait finds its work pending.
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -ldl -o %t
// RUN: %standin-env LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=10000000 KLE_STANDIN_DELAY_US=20000:20000 \
// RUN:   KLE_STANDIN_WAKEUP_US=60:120:50 %run %t 2>&1 | %fc
// Bad values of the two knobs: one warning line each, then the default or
// the maximum; the program runs on.
// RUN: %standin-env LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=abc LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX=100000 \
// RUN:   %run %t 2>&1 | %fc=BAD
// One warning per process, not one per device that reads the knob.
// RUN: %standin-env KLE_CUDA_STANDIN_DEVICES=3 LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=-3 %run %t 2>&1 | %fc=ONCE
#include <dlfcn.h>
#include <stdio.h>

int __kle_bench_set_wait(long long BusyWaitUs);

typedef int (*CountsTy)(unsigned long long *, int);

static int region(void) {
  int V = 41;
#pragma omp target map(tofrom : V)
  V++;
  return V;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  region(); // the image is loaded, libcuda is open
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CountsTy Counts = Lib ? (CountsTy)dlsym(Lib, "kle_standin_wait_counts") : 0;
  if (!Counts)
    return 1;
  long long Settings[] = {-1, 0, -2, -1, 2000000, 0};
  for (int I = 0; I < 6; ++I) {
    int Rc = __kle_bench_set_wait(Settings[I]);
    unsigned long long A[2], B[2];
    Counts(A, 2);
    int V = region();
    Counts(B, 2);
    printf("set_wait(%lld)=%d value=%d slept=%llu wakeups=%llu\n", Settings[I],
           Rc, V, B[0] - A[0], B[1] - A[1]);
  }
  return 0;
}
// CHECK: set_wait(-1)=0 value=41 slept=0 wakeups=0
// CHECK-NEXT: set_wait(0)=0 value=41 slept=1 wakeups=1
// CHECK-NEXT: set_wait(-2)=1 value=41 slept=1 wakeups=1
// CHECK-NEXT: set_wait(-1)=0 value=41 slept=0 wakeups=0
// CHECK-NEXT: set_wait(2000000)=0 value=41 slept=0 wakeups=0
// CHECK-NEXT: set_wait(0)=0 value=41 slept=1 wakeups=1
// CHECK: launches={{[0-9]+}} violations=0
// BAD-DAG: warning: ignoring invalid value 'abc' for LIBOMPTARGET_CUDA_STREAM_BUSYWAIT (want a whole number from 0); using the default
// BAD-DAG: message: warning: LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX=100000 is above 65536 bytes; using 65536
// BAD: set_wait(-1)=0 value=41
// BAD: launches={{[0-9]+}} violations=0
// ONCE: warning: ignoring invalid value '-3' for LIBOMPTARGET_CUDA_STREAM_BUSYWAIT (want a whole number from 0); using the default
// ONCE-NOT: ignoring invalid value
