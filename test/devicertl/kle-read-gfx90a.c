// Issue 19 on gfx90a: the amdgcn DeviceRTL keeps the synchronous KLE read
// in state::init (one bitcode for every gfx, and clang-22 has no link-time
// way to use the global-to-LDS load that gfx90a has and gfx11/gfx12 lack:
// docs/DESIGN.md "Where zero-copy's read happens"), but it issues the KLE's
// 16-byte load before the handshake global's volatile load, so that the two
// overlap and the team waits once, not twice, before its first barrier.
// No LDS DMA (global_load ... lds) anywhere, at -O2 or -O0.
// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: %clang-gfx90a -O2 %s -o prog -Wl,--save-temps
// RUN: %objdump -d --mcpu=gfx90a prog.amdgcn.gfx90a.img | %fc
// RUN: %clang-gfx90a -O0 %s -o prog0 -Wl,--save-temps
// RUN: %objdump -d --mcpu=gfx90a prog0.amdgcn.gfx90a.img | %fc=O0
#include <stdio.h>

int main(void) {
  long s = 0;
#pragma omp target teams distribute parallel for num_teams(64) \
    reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < 100000; ++i)
    s += i;
  printf("%ld\n", s);
  return 0;
}

// CHECK-NOT: {{ lds$| lds |load_lds}}
// CHECK-LABEL: <__omp_offloading_{{.*}}_main_l{{[0-9]+}}>:
// dyn_ptr, the kernel's first argument, from the kernarg segment:
// CHECK: s_load_dwordx2 s{{\[}}[[D:[0-9]+]]:{{[0-9]+}}], s{{\[}}4:5], 0x0
// CHECK-NOT: s_barrier
// dyn_ptr's host flag (bit 0, Shared/KLEAbi.h) cleared, then the KLE's 16
// bytes from there:
// CHECK: v_pk_mov_b32 v{{\[}}[[LO:[0-9]+]]:{{[0-9]+}}], s{{\[}}[[D]]:{{[0-9]+}}], s{{\[}}[[D]]:{{[0-9]+}}]
// CHECK-NOT: s_barrier
// CHECK: v_and_b32_e32 v[[LO]], -2, v[[LO]]
// CHECK-NEXT: flat_load_dwordx4 v{{\[[0-9]+:[0-9]+\]}}, v{{\[}}[[LO]]:{{[0-9]+}}]
// CHECK-NOT: {{s_waitcnt vmcnt|s_barrier}}
// CHECK: flat_load_dword v{{[0-9]+}}, v{{\[[0-9]+:[0-9]+\]}} glc
// CHECK-NEXT: s_waitcnt vmcnt(0)
// CHECK-NOT: s_barrier
// CHECK: ds_write_b128
// CHECK: s_barrier
// CHECK-NOT: {{ lds$| lds |load_lds}}

// O0-NOT: {{ lds$| lds |load_lds}}
// O0: <__kmpc_target_init>:
// O0-NOT: {{ lds$| lds |load_lds}}
