// sm_90: the fork's nvptx DeviceRTL (the bitcode the device link uses) decodes
// the KLE once per team in __kmpc_target_init and runs the teams reduction's
// atomics on the decoded counters (team-local pointer), never on the KLE; the
// user kernel passes dyn_ptr to __kmpc_target_init; and the linked sm_90
// image keeps the ABI-version global the plugin reads (handshake). The
// bitcode linked into each unit only references that global, from
// __kmpc_target_init (so only units with kernels do); its definition is a
// separate member of libompdevice.a.
// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: %clang-sm90 -O2 --offload-device-only -S -emit-llvm %s -o user.ll
// RUN: %fc=USER < user.ll
// RUN: llvm-dis %kle-prefix/lib/nvptx64-nvidia-cuda/libomptarget-nvptx.bc -o - | %fc=RTL
// RUN: llvm-ar t %kle-prefix/lib/nvptx64-nvidia-cuda/libompdevice.a | %fc=AR
// RUN: %clang-sm90 -O2 %s -o prog -Wl,--save-temps
// RUN: llvm-readelf --syms prog.nvptx64.sm_90.img | %fc=SYM
// RUN: llvm-readelf -r prog.nvptx64.sm_90.img | %fc=RELOC
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

// USER: define {{.*}}ptx_kernel void @__omp_offloading_{{.*}}_main_l{{[0-9]+}}(ptr noalias noundef %[[DYN:[0-9]+]],
// USER: call i32 @__kmpc_target_init(ptr {{.*}}_kernel_environment, ptr %[[DYN]])
// USER: call i32 @__kmpc_nvptx_teams_reduce_nowait_v2(

// RTL: @__kle_offload_abi_version = external protected constant i32
// RTL: @[[BUF:_ZN12_GLOBAL__N_118KLEReductionBufferE]] = internal unnamed_addr addrspace(3) global ptr
// RTL: @[[CNTS:_ZN12_GLOBAL__N_111KLECountersE]] = internal unnamed_addr addrspace(3) global ptr
// RTL-LABEL: define {{.*}}@__kmpc_target_init(ptr {{.*}}%0, ptr {{.*}}%1)
// RTL: call void asm sideeffect "", "l"(ptr nonnull @__kle_offload_abi_version)
// dyn_ptr (%1) without its host flag (bit 0), and the flag picking the read:
// RTL: %[[RAW:[0-9]+]] = ptrtoint ptr %1 to i64
// RTL: %[[HID:[0-9]+]] = tail call i64 asm "", "=l,0"(i64 %[[RAW]])
// RTL: %[[ADDR:[0-9]+]] = and i64 %[[HID]], -2
// RTL: %[[KLE:[0-9]+]] = inttoptr i64 %[[ADDR]] to ptr
// RTL: and i64 %[[HID]], 15
// RTL: getelementptr inbounds nuw i8, ptr %[[KLE]], i64 8
// RTL: load volatile i32, ptr @__kle_offload_abi_version
// RTL: and i64 %{{[0-9]+}}, 1
// RTL: store ptr %{{[0-9]+}}, ptr addrspace(3) @[[BUF]]
// RTL: store ptr %{{[0-9]+}}, ptr addrspace(3) @[[CNTS]]
// RTL-NOT: atomicrmw
// RTL-LABEL: {{^}}}
// RTL-LABEL: define {{.*}}@__kmpc_nvptx_teams_reduce_nowait_v2(
// RTL: %[[C:[0-9]+]] = load ptr, ptr addrspace(3) @[[CNTS]]
// RTL: %[[IC:[0-9]+]] = getelementptr inbounds nuw i8, ptr %[[C]], i64 4
// RTL: atomicrmw or ptr %[[IC]], i32 0 acquire
// RTL: atomicrmw uinc_wrap ptr %[[C]], i32 %{{[0-9]+}} seq_cst
// RTL: atomicrmw add ptr %[[IC]], i32 %{{[0-9]+}} seq_cst
// RTL-LABEL: {{^}}}

// AR: libomptarget-nvptx.bc
// AR-NEXT: KLEAbiVersion.cpp.o

// SYM: OBJECT WEAK DEFAULT {{.*}} __kle_offload_abi_version

// The per-kernel proof the plugin reads: a relocation against the global in
// the kernel's own text.
// RELOC: Relocation section '.rela.text.__omp_offloading_{{.*}}_main_l{{[0-9]+}}'
// RELOC: __kle_offload_abi_version + 0
