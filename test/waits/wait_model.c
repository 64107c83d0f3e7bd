// The CUDA stand-in's model of host waits, through the driver API alone:
// a copy back into pageable memory returns only once it executed (pinned:
// at once, asynchronous); a wait that finds its work pending sleeps under
// CU_CTX_SCHED_BLOCKING_SYNC and, with KLE_STANDIN_WAKEUP_US, pays the
// planted wake-up, realised no earlier than its target; under spin and auto
// scheduling it polls (it slept before, as blocking-sync waits do, so the
// raw-driver floor on an auto context paid a wake-up the driver does not
// charge); a wait on finished work, cuStreamQuery and cuEventQuery never
// wait. Every stream operation is held 20 ms
// (DELAY_US), so "pending at the call" is certain. Before the wake-up model
// there were no wait counters to read (kle_standin_wait_counts) and no
// wake-up at all.
// REQUIRES: cuda-standin
// RUN: %clang-nooffload %s -L%standin-dir -lcuda -o %t
// RUN: %standin-env KLE_STANDIN_DELAY_US=20000:20000 KLE_STANDIN_WAKEUP_US=300:300:50 KLE_STANDIN_STATS=1 \
// RUN:   %run %t blocking 2>&1 | %fcs=CHECK,BLOCK
// RUN: %standin-env KLE_STANDIN_DELAY_US=20000:20000 KLE_STANDIN_WAKEUP_US=300:300:50 KLE_STANDIN_STATS=1 \
// RUN:   %run %t spin 2>&1 | %fcs=CHECK,POLL
// RUN: %standin-env KLE_STANDIN_DELAY_US=20000:20000 KLE_STANDIN_WAKEUP_US=300:300:50 KLE_STANDIN_STATS=1 \
// RUN:   %run %t auto 2>&1 | %fcs=CHECK,POLL
// Two scheduling modes at once: refused, as the driver refuses them.
// RUN: %standin-env not %run %t spin+blocking 2>&1 | %fcs=TWOMODES
// TWOMODES: cuCtxCreate_v2(&C, Flags, Dev) failed: 1
// Unset WAKEUP_US: waits still counted, no wake-up.
// RUN: %standin-env KLE_STANDIN_DELAY_US=20000:20000 KLE_STANDIN_STATS=1 \
// RUN:   %run %t blocking 2>&1 | %fcs=CHECK,NOWAKE
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef void *CUcontext, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuCtxGetFlags(unsigned *);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemFreeHost(void *);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventDestroy_v2(CUevent);
int kle_standin_wait_counts(unsigned long long *Out, int N);

static unsigned long long Last[6];
// Prints what changed since the last call: waits slept, wake-ups paid,
// copies back into pageable / pinned memory, waits polled; and whether every
// wake-up was realised no earlier than the planted 300 us.
static void delta(const char *What) {
  unsigned long long Now[6];
  kle_standin_wait_counts(Now, 6);
  unsigned long long Wakeups = Now[1] - Last[1], Ns = Now[4] - Last[4];
  printf("%s: slept=%llu wakeups=%llu d2h_pageable=%llu d2h_pinned=%llu "
         "polled=%llu realised_at_least_target=%d\n",
         What, Now[0] - Last[0], Wakeups, Now[2] - Last[2], Now[3] - Last[3],
         Now[5] - Last[5], Ns >= Wakeups * 300000ull);
  memcpy(Last, Now, sizeof(Last));
}

#define CK(X)                                                                  \
  do {                                                                         \
    CUresult R__ = (X);                                                        \
    if (R__) {                                                                 \
      printf("%s failed: %d\n", #X, R__);                                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  unsigned Flags = !strcmp(argv[1], "blocking") ? 4
                   : !strcmp(argv[1], "spin")   ? 1
                   : !strcmp(argv[1], "spin+blocking") ? 5
                                                       : 0;
  int Dev;
  CUcontext C;
  CK(cuInit(0));
  CK(cuDeviceGet(&Dev, 0));
  CK(cuCtxCreate_v2(&C, Flags, Dev));
  unsigned Got;
  CK(cuCtxGetFlags(&Got));
  printf("flags=%u\n", Got);
  CUstream S;
  CK(cuStreamCreate(&S, 0));
  CUdeviceptr D;
  CK(cuMemAlloc_v2(&D, 4));
  int V = 42, *Pinned;
  CK(cuMemcpyHtoD_v2(D, &V, 4));
  CK(cuMemAllocHost_v2((void **)&Pinned, 4));
  delta("start");

  // Pageable destination: the copy executed before the call returned.
  int Pageable = -1;
  CK(cuMemcpyDtoHAsync_v2(&Pageable, D, 4, S));
  printf("pageable: value=%d query=%d\n", Pageable, cuStreamQuery(S));
  delta("pageable");

  // Pinned destination: asynchronous; the bytes land by the synchronize.
  *Pinned = -1;
  CK(cuMemcpyDtoHAsync_v2(Pinned, D, 4, S));
  printf("pinned: value=%d query=%d\n", *Pinned, cuStreamQuery(S));
  delta("pinned enqueue");
  CK(cuStreamSynchronize(S));
  printf("pinned: after sync value=%d\n", *Pinned);
  delta("stream sync");
  CK(cuStreamSynchronize(S));
  delta("stream sync idle");

  CUevent E;
  CK(cuEventCreate(&E, 0));
  CK(cuMemcpyHtoDAsync_v2(D, &V, 4, S));
  CK(cuEventRecord(E, S));
  printf("event query=%d\n", cuEventQuery(E));
  delta("event query");
  CK(cuEventSynchronize(E));
  delta("event sync");

  CK(cuMemcpyHtoDAsync_v2(D, &V, 4, S));
  CK(cuCtxSynchronize());
  delta("ctx sync");

  CK(cuEventDestroy_v2(E));
  CK(cuMemFreeHost(Pinned));
  CK(cuMemFree_v2(D));
  CK(cuStreamDestroy_v2(S));
  CK(cuCtxDestroy_v2(C));
  return 0;
}
// BLOCK: flags=4
// CHECK: start:
// CHECK-NEXT: pageable: value=42 query=0
// BLOCK-NEXT: pageable: slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0 polled=0 realised_at_least_target=1
// NOWAKE-NEXT: pageable: slept=1 wakeups=0 d2h_pageable=1 d2h_pinned=0 polled=0
// POLL-NEXT: pageable: slept=0 wakeups=0 d2h_pageable=1 d2h_pinned=0 polled=1
// CHECK-NEXT: pinned: value=-1 query=600
// CHECK-NEXT: pinned enqueue: slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1 polled=0
// CHECK-NEXT: pinned: after sync value=42
// BLOCK-NEXT: stream sync: slept=1 wakeups=1 d2h_pageable=0 d2h_pinned=0 polled=0 realised_at_least_target=1
// NOWAKE-NEXT: stream sync: slept=1 wakeups=0 {{.*}} polled=0
// POLL-NEXT: stream sync: slept=0 wakeups=0 {{.*}} polled=1
// CHECK-NEXT: stream sync idle: slept=0 wakeups=0 {{.*}} polled=0
// CHECK-NEXT: event query=600
// CHECK-NEXT: event query: slept=0 wakeups=0 {{.*}} polled=0
// BLOCK-NEXT: event sync: slept=1 wakeups=1 {{.*}} polled=0 realised_at_least_target=1
// NOWAKE-NEXT: event sync: slept=1 wakeups=0 {{.*}} polled=0
// POLL-NEXT: event sync: slept=0 wakeups=0 {{.*}} polled=1
// BLOCK-NEXT: ctx sync: slept=1 wakeups=1 {{.*}} polled=0 realised_at_least_target=1
// NOWAKE-NEXT: ctx sync: slept=1 wakeups=0 {{.*}} polled=0
// POLL-NEXT: ctx sync: slept=0 wakeups=0 {{.*}} polled=1
// BLOCK: kle-standin: waits slept=4 wakeups=4 d2h_pageable=1 d2h_pinned=1
// BLOCK: kle-standin: wakeup planted=300:300:50 paid=4 mean_target_us=300.0
// NOWAKE: kle-standin: waits slept=4 wakeups=0 d2h_pageable=1 d2h_pinned=1 polled=0
// NOWAKE-NOT: paid={{[1-9]}}
// POLL: kle-standin: waits slept=0 wakeups=0 d2h_pageable=1 d2h_pinned=1 polled=4
// POLL-NOT: paid={{[1-9]}}
// CHECK: launches=0 violations=0
