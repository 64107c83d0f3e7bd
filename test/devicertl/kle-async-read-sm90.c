// Issue 19: on sm_80 and later the DeviceRTL issues each team's read of a
// zero-copy KLE as an asynchronous copy (cp.async) into team-local memory at
// kernel start and waits for it only where the teams reduction first uses the
// values, so the round trip to host memory no longer holds the team at its
// first barrier. Issue 28: a KLE in device memory (dyn_ptr's host flag
// clear) is read at once instead, with no cp.async and no extra barrier (docs/DESIGN.md "Where zero-copy's read happens"). Checked on
// the sm_90 PTX of a reduction kernel, built the default way (-O2), with
// -foffload-lto (the PTX of the device link) and at -O0 (the DeviceRTL's own
// functions, not inlined); a kernel without a cross-team reduction has none
// of it, and sm_75 keeps the synchronous read before the barrier.
// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: %clang-sm90 -O2 -c -save-temps %s -o o2.o
// RUN: %fcs=PTX,NORED < kle-async-read-sm90-openmp-nvptx64-nvidia-cuda-sm_90.s
// RUN: %clang-sm90 -O2 -foffload-lto -save-temps %s -o prog
// RUN: %fcs=PTX,NORED < prog.nvptx64.sm_90.s
// RUN: rm -rf %t/o0 && mkdir %t/o0 && cd %t/o0
// RUN: %clang-sm90 -O0 -c -save-temps %s -o o0.o
// RUN: %fc=O0 < kle-async-read-sm90-openmp-nvptx64-nvidia-cuda-sm_90.s
// RUN: rm -rf %t/sm75 && mkdir %t/sm75 && cd %t/sm75
// RUN: %clang-nooffload --offload-arch=sm_75 -O2 -c -save-temps %s -o sm75.o
// RUN: %fc=SM75 < kle-async-read-sm90-openmp-nvptx64-nvidia-cuda-sm_75.s
#include <stdio.h>

int main(void) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(64) \
    reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < 100000; ++i)
    s += i;
  long t = 0;
#pragma omp target teams distribute parallel for num_teams(64) map(tofrom : t)
  for (int i = 0; i < 100000; ++i)
    if (i == 7)
      t = i;
  printf("%ld %ld\n", s, t);
  return 0;
}

// The reduction kernel (the first target region): dyn_ptr is its first
// parameter. The host sets its bit 0 for a zero-copy KLE, in host memory
// (Shared/KLEAbi.h); the initial thread clears it for every use and picks the
// read with it (and the KLE's 16-byte alignment), without a memory access.
// PTX-LABEL: .entry __omp_offloading_{{.*}}_main_l{{[0-9]+}}(
// PTX: ld.param.b64 %rd[[DYN:[0-9]+]], [__omp_offloading_{{.*}}_main_l{{[0-9]+}}_param_0];
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)|bar\.sync}}
// PTX: and.b64 %rd[[KLE:[0-9]+]], %rd[[DYN]], -2;
// PTX-NEXT: and.b64 %rd[[LOW:[0-9]+]], %rd[[DYN]], 15;
// PTX-NEXT: setp.ne.b64 %p[[NOTHOST:[0-9]+]], %rd[[LOW]], 1;
// PTX-NEXT: @%p[[NOTHOST]] bra $L__BB[[DEV:[0-9_]+]];
// Flag set (zero-copy): before the team's first barrier, the two copies
// (the KLE's 16 bytes, the handshake global's 4) and their commit, and no
// load other than of parameters or team-local memory.
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)|bar\.sync}}
// PTX: st.shared.b8 [_ZN12_GLOBAL__N_114KLEReadIsAsyncE], 1;
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)|bar\.sync}}
// PTX: cvta.to.global.u64 %kle_g, %rd[[KLE]];
// PTX-NEXT: cp.async.cg.shared.global [%r{{[0-9]+}}], [%kle_g], 16;
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)|bar\.sync}}
// PTX: cp.async.ca.shared.global [%r{{[0-9]+}}], [%kle_v], 4;
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)|bar\.sync}}
// PTX: cp.async.commit_group;
// Flag clear (resident, staged, copy, a stock libomptarget: device memory):
// upstream's read, at once, and nothing asynchronous.
// PTX: $L__BB[[DEV]]:
// PTX-NEXT: ld.b64 %rd{{[0-9]+}}, [%rd[[KLE]]];
// PTX-NEXT: ld.b64 %rd{{[0-9]+}}, [%rd[[KLE]]+8];
// PTX-NOT: cp.async
// PTX: st.shared.b64 [_ZN12_GLOBAL__N_111KLECountersE], %rd{{[0-9]+}};
// PTX-NOT: cp.async
// The address kept for later uses has no flag.
// PTX: st.shared.b64 [_ZL26KernelLaunchEnvironmentPtr], %rd[[KLE]];
// PTX-NOT: {{ld\.(global|const|volatile\.global|b64|b32|u64|u32)}}
// PTX: bar.sync 0;
// Nothing reads the copy's destination or the decoded pointers before the
// wait, which comes in __kmpc_reduction_get_fixed_buffer after an
// asynchronous read only: wait, decode, store, and then the barrier after
// which every thread reads the buffer pointer; after a read at once, no
// barrier.
// PTX-NOT: {{KLERaw|KLERawVersion|KLEReductionBuffer|KLECounters}}E
// PTX: ld.shared.b8 %rs{{[0-9]+}}, [_ZN12_GLOBAL__N_114KLEReadIsAsyncE];
// PTX-NOT: {{KLERaw|KLERawVersion|KLEReductionBuffer|KLECounters}}E
// PTX: cp.async.wait_group 0;
// PTX-NOT: {{KLEReductionBuffer|KLECounters}}E
// PTX: ld.shared.b32 %r{{[0-9]+}}, [_ZN12_GLOBAL__N_113KLERawVersionE];
// PTX-NEXT: ld.shared.v2.b64 {%rd{{[0-9]+}}, %rd{{[0-9]+}}}, [_ZN12_GLOBAL__N_16KLERawE];
// PTX: st.shared.b64 [_ZN12_GLOBAL__N_118KLEReductionBufferE], %rd{{[0-9]+}};
// PTX-NEXT: st.shared.b64 [_ZN12_GLOBAL__N_111KLECountersE], %rd{{[0-9]+}};
// PTX-NOT: {{KLEReductionBuffer|KLECounters}}E
// PTX: @%p{{[0-9]+}} bra $L__BB{{[0-9_]+}};
// PTX-NOT: {{ld\.|st\.|bra}}
// PTX: bar.sync 0;
// PTX-NOT: bar.sync
// PTX: ld.shared.b64 %rd{{[0-9]+}}, [_ZN12_GLOBAL__N_118KLEReductionBufferE];
// The teams reduction's master waits too (a no-op by then; after an
// asynchronous read only) before the counters' first atomic, on the decoded
// counters (kept in a register or reloaded, depending on the build).
// PTX: cp.async.wait_group 0;
// PTX-NOT: atom.
// PTX: st.shared.b64 [_ZN12_GLOBAL__N_111KLECountersE], %rd{{[0-9]+}};
// PTX-NOT: atom.
// PTX: atom.or.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}+4], 0;
// PTX: atom.inc.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], {{[0-9]+}};
// PTX-LABEL: {{^}}}

// The kernel without a reduction reads no KLE: no copy, no wait, no barrier
// of the KLE's.
// NORED-LABEL: .entry __omp_offloading_{{.*}}_main_l{{[0-9]+}}(
// NORED-NOT: cp.async
// NORED-NOT: KLERaw
// NORED: {{^}}}

// -O0: the user code calls the DeviceRTL's (optimised) functions. In
// __kmpc_target_init the copies come before the first barrier (the SPMD
// path's synchronize::threadsAligned) with no global load before them;
// __kmpc_reduction_get_fixed_buffer waits, then barriers, then reads the
// buffer pointer; the teams reduction waits before its atomics.
// O0-LABEL: {{^}}.func  (.param .b32 func_retval0) __kmpc_target_init(
// O0-NOT: {{ld\.(global|const|volatile\.global)|call.uni _ZN4ompx11synchronize14threadsAligned}}
// O0: cp.async.cg.shared.global [%r{{[0-9]+}}], [%kle_g], 16;
// O0-NOT: {{ld\.(global|const|volatile\.global)|call.uni _ZN4ompx11synchronize14threadsAligned}}
// O0: cp.async.commit_group;
// O0-NOT: {{ld\.(global|const|volatile\.global)}}
// O0: call.uni _ZN4ompx11synchronize14threadsAligned
// O0-LABEL: {{^}}.func  (.param .b32 func_retval0) __kmpc_nvptx_teams_reduce_nowait_v2(
// O0-NOT: atom.
// O0: cp.async.wait_group 0;
// O0: atom.or.b32
// O0-LABEL: {{^}}.func  (.param .b64 func_retval0) __kmpc_reduction_get_fixed_buffer()
// O0-NOT: KLEReductionBufferE
// O0: cp.async.wait_group 0;
// O0: st.shared.b64 [_ZN12_GLOBAL__N_118KLEReductionBufferE], %rd{{[0-9]+}};
// O0-NOT: KLEReductionBufferE
// O0: call.uni _ZN4ompx11synchronize14threadsAligned
// O0-NOT: call.uni
// O0: ld.shared.b64 %rd{{[0-9]+}}, [_ZN12_GLOBAL__N_118KLEReductionBufferE];

// sm_75 (before cp.async): the synchronous read from dyn_ptr (its host flag
// cleared), decoded and stored before the team's first barrier; nothing
// asynchronous anywhere.
// SM75-NOT: cp.async
// SM75-LABEL: .entry __omp_offloading_{{.*}}_main_l{{[0-9]+}}(
// SM75: ld.param.b64 %rd[[DYN:[0-9]+]], [__omp_offloading_{{.*}}_main_l{{[0-9]+}}_param_0];
// SM75: and.b64 %rd[[G:[0-9]+]], %rd[[DYN]], -2;
// SM75-NOT: bar.sync
// SM75: ld.b64 %rd{{[0-9]+}}, [%rd[[G]]];
// SM75-NOT: bar.sync
// SM75: st.shared.b64 [_ZN12_GLOBAL__N_111KLECountersE], %rd{{[0-9]+}};
// SM75: bar.sync 0;
// SM75-NOT: cp.async
