// The CUDA plugin's waits and copies back on the stand-in, with a planted
// 60/120 us wake-up for every wait that sleeps under blocking scheduling
// (the plugin's context is CU_CTX_SCHED_BLOCKING_SYNC), counted per
// construct by the stand-in (kle_standin_wait_counts). Every stream
// operation is held 20 ms, so each wait finds its work pending even on a
// loaded machine.
//  - POLL (LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=10 s): no wait sleeps; each
//    small copy back goes into the plugin's pinned staging.
//  - BLOCK (BUSYWAIT=0, upstream's wait): one wake-up per synchronous
//    construct, paid by cuStreamSynchronize. A nowait construct pays none or
//    one: upstream's __tgt_target_nowait_query turns to a blocking
//    synchronize after enough queries (its ExponentialBackoff).
//  - NOSTAGE_* (LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX=0): the copy back into
//    pageable memory waits in the driver and pays the wake-up whatever the
//    busy-wait: why both halves are needed. NOSTAGE_BLOCK is upstream's
//    plugin.
// The stand-in runs no kernel, so the bytes copied back are those copied in:
// each construct sets the host value to 0 after the copy in and prints what
// the copy back delivered (41). "pinned" and "8 KiB" count an enter and an
// exit data each: a destination the plugin pinned
// (llvm_omp_target_alloc_host) is copied into directly (direct_pinned=1);
// one over the bound (8 KiB) goes to pageable memory as before.
// Before the change every configuration counted NOSTAGE_BLOCK's lines, so
// POLL's fail (checked with the previous libomptarget).
// REQUIRES: cuda-standin
// RUN: %clang-sm90 %s -ldl -o %t
// RUN: sh -c 'for cfg in POLL:10000000:4096 BLOCK:0:4096 NOSTAGE_POLL:10000000:0 NOSTAGE_BLOCK:0:0; do \
// RUN:   p=${cfg%%%%:*}; r=${cfg#*:}; \
// RUN:   %cuda-each -p CHECK,$p LIBOMPTARGET_CUDA_STREAM_BUSYWAIT=${r%%%%:*} \
// RUN:     LIBOMPTARGET_CUDA_STAGED_COPY_BACK_MAX=${r#*:} \
// RUN:     KLE_STANDIN_DELAY_US=20000:20000 KLE_STANDIN_WAKEUP_US=60:120:50 %t || exit 1; \
// RUN: done'
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t, int);
void llvm_omp_target_free_host(void *, int);

typedef int (*CountsTy)(unsigned long long *, int);
static CountsTy Counts;
static unsigned long long Last[5];

// What the stand-in counted since the last call: waits that slept,
// wake-ups paid, copies back into pageable and into pinned memory.
static void delta(const char *What, int Value) {
  unsigned long long Now[5];
  Counts(Now, 5);
  printf("%s: value=%d slept=%llu wakeups=%llu d2h_pageable=%llu "
         "d2h_pinned=%llu\n",
         What, Value, Now[0] - Last[0], Now[1] - Last[1], Now[2] - Last[2],
         Now[3] - Last[3]);
  memcpy(Last, Now, sizeof(Last));
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int W = 1;
  // Warm-up: the image is loaded. No kernel runs on the stand-in: W stays 1.
#pragma omp target map(tofrom : W)
  W++;
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  Counts = Lib ? (CountsTy)dlsym(Lib, "kle_standin_wait_counts") : 0;
  if (!Counts) {
    printf("no kle_standin_wait_counts\n");
    return 1;
  }
  delta("warm-up", W);

  int Sum = 41;
#pragma omp target teams distribute parallel for reduction(+ : Sum)          \
    map(tofrom : Sum)
  for (int I = 0; I < 64; ++I)
    Sum += 0;
  delta("reduction", Sum);

  Sum = 41;
#pragma omp target teams distribute parallel for reduction(+ : Sum)          \
    map(tofrom : Sum) nowait
  for (int I = 0; I < 64; ++I)
    Sum += 0;
#pragma omp taskwait
  delta("reduction nowait", Sum);

  int V = 41;
#pragma omp target enter data map(to : V)
  V = 0;
  delta("enter", V);
#pragma omp target update from(V)
  delta("update", V);
  V = 0;
#pragma omp target update from(V) nowait
#pragma omp taskwait
  delta("update nowait", V);
  V = 0;
#pragma omp target exit data map(from : V)
  delta("exit", V);

  int *P = (int *)llvm_omp_target_alloc_host(sizeof(int), 0);
  *P = 41;
#pragma omp target enter data map(to : P[0 : 1])
  *P = 0;
#pragma omp target exit data map(from : P[0 : 1])
  delta("pinned", *P);
  llvm_omp_target_free_host(P, 0);

  static int Big[2048];
  Big[2047] = 41;
#pragma omp target enter data map(to : Big)
  Big[2047] = 0;
#pragma omp target exit data map(from : Big)
  delta("8 KiB", Big[2047]);
  return 0;
}
// CHECK: warm-up: value=1
// POLL-NEXT: reduction: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: reduction: value=41 slept=1 wakeups=1 d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: reduction: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: reduction: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// POLL-NEXT: reduction nowait: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: reduction nowait: value=41 slept={{[01]}} wakeups={{[01]}} d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: reduction nowait: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: reduction nowait: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// CHECK-NEXT: enter: value=0
// POLL-NEXT: update: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: update: value=41 slept=1 wakeups=1 d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: update: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: update: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// POLL-NEXT: update nowait: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: update nowait: value=41 slept={{[01]}} wakeups={{[01]}} d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: update nowait: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: update nowait: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// POLL-NEXT: exit: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: exit: value=41 slept=1 wakeups=1 d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: exit: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: exit: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// POLL-NEXT: pinned: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// BLOCK-NEXT: pinned: value=41 slept=2 wakeups=2 d2h_pageable=0 d2h_pinned=1
// NOSTAGE_POLL-NEXT: pinned: value=41 slept=0 wakeups=0 d2h_pageable=0 d2h_pinned=1
// NOSTAGE_BLOCK-NEXT: pinned: value=41 slept=2 wakeups=2 d2h_pageable=0 d2h_pinned=1
// POLL-NEXT: 8 KiB: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// BLOCK-NEXT: 8 KiB: value=41 slept=2 wakeups=2 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_POLL-NEXT: 8 KiB: value=41 slept=1 wakeups=1 d2h_pageable=1 d2h_pinned=0
// NOSTAGE_BLOCK-NEXT: 8 KiB: value=41 slept=2 wakeups=2 d2h_pageable=1 d2h_pinned=0
// POLL: copy back staged=6 direct_pinned=1 no_memory=0
// BLOCK: copy back staged=6 direct_pinned=1 no_memory=0
// NOSTAGE_POLL: copy back staged=0 direct_pinned=0 no_memory=0
// NOSTAGE_BLOCK: copy back staged=0 direct_pinned=0 no_memory=0
// CHECK: launches={{[0-9]+}} violations=0
