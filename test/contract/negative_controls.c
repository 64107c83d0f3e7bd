// Every KLE contract check of the HSA stand-in can fail: each run switches on
// one misbehaviour (KLE_HSA_STANDIN_BREAK, or a wrong EXPECT) and expects the
// check's VIOLATION line and exit status 97 (`not`).
// REQUIRES: hsa-standin
// Not under the sanitizer job: these runs break the runtime on purpose, and
// the plugin's crash they can provoke (see below) is caught by the sanitizer
// runtime, which then waits for the timeout instead of exiting 139. The job
// exists to find races and memory errors in a correct run.
// UNSUPPORTED: tsan, asan
// DEFINE: %{segv} = SIGSEGV in a callback the program registered with hsa_amd_signal_async_handler (not in the stand-in)
// DEFINE: %{brk} = KLE_HSA_STANDIN_BREAK
// DEFINE: %{zc} = %use-zerocopy KLE_STANDIN_EXPECT=zerocopy
// DEFINE: %{cp} = %use-copy KLE_STANDIN_EXPECT=copy
// DEFINE: %{st} = %use-staged KLE_STANDIN_EXPECT=staged
// DEFINE: %{slow} = KLE_STANDIN_KERNEL_US=500000 KLE_STANDIN_VERBOSE=1
// DEFINE: %{racy} = KLE_STANDIN_DELAY_US=2000:3000 KLE_HSA_STANDIN_BREAK=ignore-barriers
// RUN: %clang-gfx90a %s -o %t
// C, placement: a zerocopy KLE where a device KLE is expected, and the reverse.
// RUN: not %hsa %use-zerocopy KLE_STANDIN_EXPECT=copy %t | %fc=PLACE-DEV
// PLACE-DEV: VIOLATION launch #1: C placement: kernel '{{.*}}': expected transport copy but dyn_ptr {{.*}} is fine memory, not device memory
// RUN: not %hsa %use-copy KLE_STANDIN_EXPECT=zerocopy %t | %fc=PLACE-HOST
// PLACE-HOST: VIOLATION launch #1: C placement: kernel '{{.*}}': expected transport zerocopy but dyn_ptr {{.*}} is device memory, not pinned or fine-grained host memory
// C, the host flag: dyn_ptr's bit 0 (Shared/KLEAbi.h) read inverted, so a
// zero-copy KLE looks unflagged and a device KLE flagged.
// RUN: not %hsa %use-zerocopy %{brk}=flip-host-flag %t | %fc=FLAG-HOST
// FLAG-HOST: VIOLATION launch #1: C placement: kernel '{{.*}}': dyn_ptr's host flag is clear but the KLE at {{.*}} is in fine memory
// RUN: not %hsa %use-resident %{brk}=flip-host-flag %t | %fc=FLAG-DEV
// FLAG-DEV: VIOLATION launch #1: C placement: kernel '{{.*}}': dyn_ptr's host flag is set but the KLE at {{.*}} is in device memory
// W, arrival: the queue ignores barrier-AND dependencies, so a dispatch starts
// before the copy that delivers its KLE completed (long DMA delays).
// The run then either exits 97 with the violations, or dies of SIGSEGV (139)
// after printing them. The SIGSEGV is the plugin's, not the stand-in's: gdb
// shows AMDGPUStreamTy::asyncActionCallback (libomptarget), called from the
// stand-in's handler thread, loading Slot->Signal == nullptr. The plugin
// chains a stream's operations by signals and trusts the runtime to honour
// them: once the stream's last signal drops, synchronize() releases every
// slot (Signal = nullptr). A misbehaving queue (or a DMA engine that ignores
// copy dependencies) lets a later operation finish before an earlier one, so
// the stream is released while the async handler of an earlier step (the host
// memcpy of a two-step copy) is still registered; when its signal then
// reaches 0 the stand-in calls the plugin's handler as HSA must, and the
// plugin dereferences its released slot. The stand-in names such a crash on
// stderr ("SIGSEGV in a callback the program registered with
// hsa_amd_signal_async_handler"), so the status must be 97, or 139 with that
// line: a crash anywhere else, an abort or a hang fails.
// RUN: sh -c '%hsa %{racy} %{cp} %t > %t.copy; echo "status=$?" >> %t.copy'
// RUN: %fc=BARRIER < %t.copy
// RUN: sh -c 'grep -qx status=97 %t.copy || { grep -qx status=139 %t.copy && grep -q "%{segv}" %t.copy; }'
// RUN: sh -c '%hsa %{racy} %{st} %t > %t.staged; echo "status=$?" >> %t.staged'
// RUN: %fc=BARRIER < %t.staged
// RUN: sh -c 'grep -qx status=97 %t.staged || { grep -qx status=139 %t.staged && grep -q "%{segv}" %t.staged; }'
// BARRIER: W arrival: kernel '{{.*}}': the copy (op #{{[0-9]+}}) that delivers the device KLE {{.*}} had not completed when the kernel started
// Copies ignore their dependency signals. The plugin never orders a dispatch
// after a copy by the copy's dependencies (the KLE's copy -> dispatch edge is
// a barrier-AND packet, AMDGPUQueueTy::pushKernelLaunch), so this switch
// cannot make W fire. It relies on them for dispatch -> device-to-host copy
// and for the async handler -> DMA step of a two-step host-to-device copy;
// the main program below hits both only by chance (equal random delays, a
// pinned buffer still holding the previous launch's identical KLE, kernels of
// zero length): 0 to 7 violations and, in 30 of 30 runs on 2026-11-30, the
// plugin crash above, 8 of them with no violation at all. So it runs
// `d2h`: one launch whose result comes back by a device-to-host copy
// (map(from:), so no host-to-device copy and no async handler precede the
// KLE's and the plugin cannot crash), with a kernel that "runs" 500 ms. The
// copy runs at once, the target region returns ("d2h done" before "launch #1
// done"), and the runtime frees the launch's KLE (at exit: the memory manager
// kept it) while the dispatch is pending: B, with half a second of margin.
// Without the switch the copy waits for the kernel and nothing fires.
// RUN: %hsa %{slow} %{cp} %t d2h | %fc=DEPS-OK
// DEPS-OK-NOT: VIOLATION
// DEPS-OK: launch #1 done
// DEPS-OK: d2h done
// DEPS-OK: launches=1 violations=0
// RUN: not %hsa %{slow} %{brk}=ignore-copy-deps %{cp} %t d2h | %fc=DEPS
// DEPS: launch #1 queue {{[0-9]+}} packet {{[0-9]+}} kernel {{.*}} dyn_ptr [[KLE:0x[0-9a-f]+]] (device)
// DEPS-DAG: d2h done
// DEPS-DAG: VIOLATION launch #1: B lifetime: device memory [[KLE]] released by hsa_amd_memory_pool_free while the launch was pending
// DEPS: launch #1 done
// DEPS: FAILED: {{[0-9]+}} KLE contract violation(s); exiting with status 97
// Check A1, a host store into the zerocopy slot after the doorbell.
// RUN: not %hsa %{brk}=scribble-kle %{zc} %t | %fc=A1
// A1: VIOLATION launch #{{[0-9]+}}: A1 kle-bytes: kernel '{{.*}}' (kernel start): KLE bytes at dyn_ptr {{.*}} changed after the launch: expected
// Z, counters: the device counters are not zero at kernel start.
// RUN: not %hsa %{brk}=dirty-counters %{zc} %t | %fc=CNT
// CNT: VIOLATION launch #{{[0-9]+}}: Z counters: kernel '{{.*}}': KLE counters {{.*}} read 0x1 at kernel start (must be zero)
// L, layout: zerocopy KLEs (tagged) where resident expects upstream's layout.
// RUN: not %hsa %use-zerocopy KLE_STANDIN_EXPECT=resident %t | %fc=LAYOUT
// LAYOUT: VIOLATION launch #1: C placement: kernel '{{.*}}': expected transport resident but dyn_ptr {{.*}} is fine memory, not device memory
// LAYOUT: VIOLATION launch #1: L layout: kernel '{{.*}}': expected transport resident but the KLE is not upstream's layout with zero counters (word0 {{.*}}, tagged)
// Check A2, the staging source changes between the copy's enqueue and its DMA.
// RUN: not %hsa %{brk}=scribble-staging %{st} %t | %fc=A2
// A2: VIOLATION op: A2 staging-source: copy op #{{[0-9]+}}: source {{.*}} (fine-grained) changed between the enqueue and the DMA
// K: kernarg bytes change after the doorbell.
// RUN: not %hsa %{brk}=scribble-kernarg %use-zerocopy %t | %fc=KARG
// KARG: K: start: kernarg bytes at {{.*}} changed since the doorbell
// X and K: the queue signals completion before the kernel "ran", so the plugin
// recycles kernarg buffers and slots under a running dispatch.
// RUN: not %hsa %{brk}=early-completion %{zc} %t | %fc=EARLY
// EARLY: kernarg: buffer {{.*}} is shared with in-flight launch #
// Packet sanity: a group segment larger than the GROUP pool.
// RUN: not %hsa %{brk}=bad-packet %t | %fc=PACKET
// PACKET: VIOLATION launch #1: packet: group_segment_size 65537 exceeds the 65536-byte GROUP pool
// The exit status is configurable, and an unknown BREAK item is named.
// RUN: not %hsa %{brk}=bad-packet,no-such-break KLE_STANDIN_EXIT_CODE=42 %t > %t.out
// RUN: %fc=EXIT < %t.out
// EXIT: unknown KLE_HSA_STANDIN_BREAK item 'no-such-break' ignored
// EXIT: FAILED: {{[0-9]+}} KLE contract violation(s); exiting with status 42
#include <stdio.h>
#include <string.h>
#define N 1024
// One launch, nothing copied to the device before the KLE, its result copied
// back after it (the ignore-copy-deps control above).
static int d2h(void) {
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(from : s)
  for (int i = 0; i < N; ++i) s += i;
  printf("d2h done\n");
  fflush(stdout);
  return 0;
}
int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "d2h"))
    return d2h();
  static int a[N];
  for (int i = 0; i < N; ++i) a[i] = i;
#pragma omp target data map(to : a[0:N])
  for (int k = 0; k < 8; ++k) {
    long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
    for (int i = 0; i < N; ++i) s += a[i];
#pragma omp target update to(a[0:N])
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
