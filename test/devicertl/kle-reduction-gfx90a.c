// The gfx90a device code of a real teams-reduction program, as linked (LTO)
// against the fork's DeviceRTL: the kernel reads the KLE through dyn_ptr
// once (the counters word at +0, the tagged ReductionBuffer word at +8),
// keeps the decoded pointers in team-local (LDS) memory, and the reduction's
// device-scope atomics go through the decoded counters pointer, never
// through dyn_ptr itself. The image exports the KLE ABI version (handshake).
// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: %clang-gfx90a -O2 %s -o prog -Wl,--save-temps
// RUN: llvm-dis prog.amdgcn.gfx90a.img.0.5.precodegen.bc -o - | %fc
// RUN: llvm-readelf --dyn-syms prog.amdgcn.gfx90a.img | %fc=SYM
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

// CHECK: @__kle_offload_abi_version = weak protected addrspace(4) constant i32 2
// CHECK: define {{.*}}amdgpu_kernel void @__omp_offloading_{{.*}}_main_l{{[0-9]+}}(ptr noalias noundef %[[DYN:[0-9]+]],
// dyn_ptr without its host flag (bit 0, Shared/KLEAbi.h):
// CHECK: %[[RAW:[0-9]+]] = ptrtoint ptr %[[DYN]] to i64
// CHECK: %[[HID:[0-9]+]] = tail call i64 asm "", "=v,0"(i64 %[[RAW]])
// CHECK: %[[ADDR:[0-9]+]] = and i64 %[[HID]], -2
// CHECK: %[[KLE:[0-9]+]] = inttoptr i64 %[[ADDR]] to ptr
// Decode once: the counters word (+0) and the ReductionBuffer word (+8),
// its tag bit tested, stored to team-local memory.
// CHECK: load i64, ptr %[[KLE]]
// CHECK: getelementptr inbounds {{(nuw )?}}i8, ptr %[[KLE]], i64 8
// CHECK: and i64 %{{[0-9]+}}, 1
// CHECK: store ptr %{{[0-9]+}}, ptr addrspace(3) {{.*}}.lds, i32 0, i32 {{[0-9]+}})
// CHECK: store ptr %{{[0-9]+}}, ptr addrspace(3) {{.*}}.lds, i32 0, i32 [[CNTF:[0-9]+]])
// CHECK-NOT: atomicrmw {{.*}}ptr {{(addrspace\(1\) )?}}%[[KLE]],
// CHECK-NOT: atomicrmw {{.*}}ptr %[[DYN]],
// The teams-reduction counters: loaded from team-local memory, then atomics.
// CHECK: %[[CNT:[0-9]+]] = load ptr, ptr addrspace(3) {{.*}}.lds, i32 0, i32 [[CNTF]])
// CHECK-NOT: atomicrmw {{.*}}ptr {{(addrspace\(1\) )?}}%[[KLE]],
// CHECK: atomicrmw uinc_wrap ptr %[[CNT]], i32 {{[0-9]+}} syncscope("agent") seq_cst
// CHECK-LABEL: {{^}}}

// SYM: __kle_offload_abi_version
