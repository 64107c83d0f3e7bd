//===- selftest.cpp - direct HSA-API test of the HSA stand-in -------------===//
//
// Usage: kle_hsa_standin_selftest <case>
// Drives libhsa-runtime64.so.1 (the stand-in, dlopen()ed from
// KLE_HSA_STANDIN_LIB) through the HSA API with a synthetic gfx90a code
// object holding one kernel "k" (16 kernarg bytes, dyn_ptr first) and its
// k_kernel_environment, so every dispatch carries a KLE. Each negative case
// makes one deliberate mistake; run-selftest.sh checks the VIOLATION it must
// cause. "correct" (host KLE and device KLE delivered by a completed copy)
// must end with violations=0 and status 0.
//
// KLE_HSA_STANDIN_DELAY_US defaults to 100000:100000 here (set before the
// dlopen), so every dispatch waits 100 ms after its doorbell: the races below
// happen inside that window deterministically.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include "hsa.h"
#include "hsa_ext_amd.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <string>
#include <vector>

#ifndef KLE_HSA_STANDIN_LIB
#define KLE_HSA_STANDIN_LIB "libhsa-runtime64.so.1"
#endif

static void *Lib;
template <typename T> static void sym(T &P, const char *N) {
  P = reinterpret_cast<T>(dlsym(Lib, N));
  if (!P) {
    fprintf(stderr, "selftest: missing symbol %s\n", N);
    exit(2);
  }
}
#define DECL(R, NAME, ...) static R (*p_##NAME)(__VA_ARGS__);
DECL(hsa_status_t, hsa_init)
DECL(hsa_status_t, hsa_shut_down)
DECL(hsa_status_t, hsa_iterate_agents, hsa_status_t (*)(hsa_agent_t, void *), void *)
DECL(hsa_status_t, hsa_agent_get_info, hsa_agent_t, hsa_agent_info_t, void *)
DECL(hsa_status_t, hsa_amd_agent_iterate_memory_pools, hsa_agent_t,
     hsa_status_t (*)(hsa_amd_memory_pool_t, void *), void *)
DECL(hsa_status_t, hsa_amd_memory_pool_get_info, hsa_amd_memory_pool_t,
     hsa_amd_memory_pool_info_t, void *)
DECL(hsa_status_t, hsa_amd_memory_pool_allocate, hsa_amd_memory_pool_t, size_t, uint32_t, void **)
DECL(hsa_status_t, hsa_amd_memory_pool_free, void *)
DECL(hsa_status_t, hsa_amd_agents_allow_access, uint32_t, const hsa_agent_t *, const uint32_t *,
     const void *)
DECL(hsa_status_t, hsa_amd_memory_async_copy, void *, hsa_agent_t, const void *, hsa_agent_t,
     size_t, uint32_t, const hsa_signal_t *, hsa_signal_t)
DECL(hsa_status_t, hsa_signal_create, hsa_signal_value_t, uint32_t, const hsa_agent_t *,
     hsa_signal_t *)
DECL(hsa_status_t, hsa_signal_destroy, hsa_signal_t)
DECL(void, hsa_signal_store_relaxed, hsa_signal_t, hsa_signal_value_t)
DECL(void, hsa_signal_store_screlease, hsa_signal_t, hsa_signal_value_t)
DECL(hsa_signal_value_t, hsa_signal_wait_scacquire, hsa_signal_t, hsa_signal_condition_t,
     hsa_signal_value_t, uint64_t, hsa_wait_state_t)
DECL(hsa_status_t, hsa_queue_create, hsa_agent_t, uint32_t, hsa_queue_type32_t,
     void (*)(hsa_status_t, hsa_queue_t *, void *), void *, uint32_t, uint32_t, hsa_queue_t **)
DECL(hsa_status_t, hsa_queue_destroy, hsa_queue_t *)
DECL(uint64_t, hsa_queue_add_write_index_relaxed, const hsa_queue_t *, uint64_t)
DECL(hsa_status_t, hsa_code_object_reader_create_from_memory, const void *, size_t,
     hsa_code_object_reader_t *)
DECL(hsa_status_t, hsa_code_object_reader_destroy, hsa_code_object_reader_t)
DECL(hsa_status_t, hsa_executable_create_alt, hsa_profile_t, hsa_default_float_rounding_mode_t,
     const char *, hsa_executable_t *)
DECL(hsa_status_t, hsa_executable_load_agent_code_object, hsa_executable_t, hsa_agent_t,
     hsa_code_object_reader_t, const char *, hsa_loaded_code_object_t *)
DECL(hsa_status_t, hsa_executable_freeze, hsa_executable_t, const char *)
DECL(hsa_status_t, hsa_executable_destroy, hsa_executable_t)
DECL(hsa_status_t, hsa_executable_get_symbol_by_name, hsa_executable_t, const char *,
     const hsa_agent_t *, hsa_executable_symbol_t *)
DECL(hsa_status_t, hsa_executable_symbol_get_info, hsa_executable_symbol_t,
     hsa_executable_symbol_info_t, void *)

#define CHECK(X)                                                                               \
  do {                                                                                         \
    hsa_status_t S_ = (X);                                                                     \
    if (S_ != HSA_STATUS_SUCCESS) {                                                            \
      fprintf(stderr, "selftest: %s failed: %#x (line %d)\n", #X, unsigned(S_), __LINE__);     \
      exit(3);                                                                                 \
    }                                                                                          \
  } while (0)

static hsa_agent_t Cpu, Gpu;
static hsa_amd_memory_pool_t FinePool, KernargPool, DevPool;
static bool HaveFine, HaveKernarg, HaveDev;
static hsa_queue_t *Q;
static uint64_t KernelObject;
static hsa_executable_t Exe;

/// A minimal gfx90a ET_DYN image: one PT_LOAD with k.kd (64-byte descriptor,
/// kernarg size 16) and k_kernel_environment (32 bytes, no reduction).
static std::vector<uint8_t> image() {
  std::vector<uint8_t> I(0x2c0, 0);
  Elf64_Ehdr Eh{};
  memcpy(Eh.e_ident, ELFMAG, SELFMAG);
  Eh.e_ident[EI_CLASS] = ELFCLASS64;
  Eh.e_ident[EI_DATA] = ELFDATA2LSB;
  Eh.e_ident[EI_VERSION] = EV_CURRENT;
  Eh.e_type = ET_DYN;
  Eh.e_machine = 224; // EM_AMDGPU
  Eh.e_version = EV_CURRENT;
  Eh.e_flags = 0x3f;  // gfx90a
  Eh.e_phoff = 64;
  Eh.e_shoff = 0x200;
  Eh.e_ehsize = sizeof(Elf64_Ehdr);
  Eh.e_phentsize = sizeof(Elf64_Phdr);
  Eh.e_phnum = 1;
  Eh.e_shentsize = sizeof(Elf64_Shdr);
  Eh.e_shnum = 3;
  memcpy(&I[0], &Eh, sizeof(Eh));
  Elf64_Phdr Ph{};
  Ph.p_type = PT_LOAD;
  Ph.p_filesz = Ph.p_memsz = 0x200;
  memcpy(&I[64], &Ph, sizeof(Ph));
  uint32_t Kernarg = 16;
  memcpy(&I[0x100 + 8], &Kernarg, 4); // descriptor: kernarg size
  const char Str[] = "\0k.kd\0k_kernel_environment\0";
  memcpy(&I[0x1d0], Str, sizeof(Str));
  Elf64_Sym Sy[3]{};
  Sy[1].st_name = 1;
  Sy[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
  Sy[1].st_shndx = 1;
  Sy[1].st_value = 0x100;
  Sy[1].st_size = 64;
  Sy[2].st_name = 6;
  Sy[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
  Sy[2].st_shndx = 1;
  Sy[2].st_value = 0x140;
  Sy[2].st_size = 32;
  memcpy(&I[0x180], Sy, sizeof(Sy));
  Elf64_Shdr Sh[3]{};
  Sh[1].sh_type = SHT_DYNSYM;
  Sh[1].sh_offset = 0x180;
  Sh[1].sh_size = sizeof(Sy);
  Sh[1].sh_link = 2;
  Sh[1].sh_entsize = sizeof(Elf64_Sym);
  Sh[2].sh_type = SHT_STRTAB;
  Sh[2].sh_offset = 0x1d0;
  Sh[2].sh_size = sizeof(Str);
  memcpy(&I[0x200], Sh, sizeof(Sh));
  return I;
}

static hsa_status_t poolCb(hsa_amd_memory_pool_t P, void *D) {
  bool IsGpu = D != nullptr;
  hsa_amd_segment_t Seg;
  CHECK(p_hsa_amd_memory_pool_get_info(P, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &Seg));
  if (Seg != HSA_AMD_SEGMENT_GLOBAL)
    return HSA_STATUS_SUCCESS;
  uint32_t F = 0;
  CHECK(p_hsa_amd_memory_pool_get_info(P, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &F));
  if (IsGpu) {
    DevPool = P, HaveDev = true;
  } else if (F & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) {
    KernargPool = P, HaveKernarg = true;
  } else if (F & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) {
    FinePool = P, HaveFine = true;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t agentCb(hsa_agent_t A, void *) {
  hsa_device_type_t T;
  CHECK(p_hsa_agent_get_info(A, HSA_AGENT_INFO_DEVICE, &T));
  if (T == HSA_DEVICE_TYPE_CPU)
    Cpu = A;
  else if (T == HSA_DEVICE_TYPE_GPU)
    Gpu = A;
  return HSA_STATUS_SUCCESS;
}

static void setup() {
  setenv("KLE_HSA_STANDIN_DELAY_US", "100000:100000", /*overwrite=*/0);
  const char *Path = getenv("KLE_HSA_STANDIN_LIB");
  Lib = dlopen(Path && *Path ? Path : KLE_HSA_STANDIN_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!Lib) {
    fprintf(stderr, "selftest: %s\n", dlerror());
    exit(2);
  }
#define S(N) sym(p_##N, #N)
  S(hsa_init); S(hsa_shut_down); S(hsa_iterate_agents); S(hsa_agent_get_info);
  S(hsa_amd_agent_iterate_memory_pools); S(hsa_amd_memory_pool_get_info);
  S(hsa_amd_memory_pool_allocate); S(hsa_amd_memory_pool_free); S(hsa_amd_agents_allow_access);
  S(hsa_amd_memory_async_copy); S(hsa_signal_create); S(hsa_signal_destroy);
  S(hsa_signal_store_relaxed); S(hsa_signal_store_screlease); S(hsa_signal_wait_scacquire);
  S(hsa_queue_create); S(hsa_queue_destroy); S(hsa_queue_add_write_index_relaxed);
  S(hsa_code_object_reader_create_from_memory); S(hsa_code_object_reader_destroy);
  S(hsa_executable_create_alt); S(hsa_executable_load_agent_code_object);
  S(hsa_executable_freeze); S(hsa_executable_destroy); S(hsa_executable_get_symbol_by_name);
  S(hsa_executable_symbol_get_info);
#undef S
  CHECK(p_hsa_init());
  CHECK(p_hsa_iterate_agents(agentCb, nullptr));
  if (!Cpu.handle || !Gpu.handle) {
    fprintf(stderr, "selftest: no CPU or GPU agent\n");
    exit(3);
  }
  CHECK(p_hsa_amd_agent_iterate_memory_pools(Cpu, poolCb, nullptr));
  CHECK(p_hsa_amd_agent_iterate_memory_pools(Gpu, poolCb, &Gpu));
  if (!HaveFine || !HaveKernarg || !HaveDev) {
    fprintf(stderr, "selftest: missing a pool (fine %d kernarg %d device %d)\n", HaveFine,
            HaveKernarg, HaveDev);
    exit(3);
  }
  static std::vector<uint8_t> Img = image();
  hsa_code_object_reader_t R;
  CHECK(p_hsa_code_object_reader_create_from_memory(Img.data(), Img.size(), &R));
  CHECK(p_hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, "",
                                    &Exe));
  CHECK(p_hsa_executable_load_agent_code_object(Exe, Gpu, R, "", nullptr));
  CHECK(p_hsa_executable_freeze(Exe, ""));
  CHECK(p_hsa_code_object_reader_destroy(R));
  hsa_executable_symbol_t Sym;
  CHECK(p_hsa_executable_get_symbol_by_name(Exe, "k.kd", &Gpu, &Sym));
  CHECK(p_hsa_executable_symbol_get_info(Sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                         &KernelObject));
  CHECK(p_hsa_queue_create(Gpu, 64, HSA_QUEUE_TYPE_MULTI, nullptr, nullptr, UINT32_MAX,
                           UINT32_MAX, &Q));
}

static void *alloc(hsa_amd_memory_pool_t P, size_t N) {
  void *Ptr = nullptr;
  CHECK(p_hsa_amd_memory_pool_allocate(P, N, 0, &Ptr));
  CHECK(p_hsa_amd_agents_allow_access(1, &Gpu, nullptr, Ptr));
  return Ptr;
}

static hsa_signal_t signal(hsa_signal_value_t V) {
  hsa_signal_t S;
  CHECK(p_hsa_signal_create(V, 0, nullptr, &S));
  return S;
}

static void waitZero(hsa_signal_t S) {
  while (p_hsa_signal_wait_scacquire(S, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                     HSA_WAIT_STATE_BLOCKED) != 0) {
  }
}

/// Writes kernargs {DynPtr, 0} and publishes one dispatch of k.
static void dispatch(void *Kernarg, void *DynPtr, hsa_signal_t Done, uint16_t Wg = 64) {
  uint64_t Args[2] = {reinterpret_cast<uint64_t>(DynPtr), 0};
  memcpy(Kernarg, Args, sizeof(Args));
  uint64_t I = p_hsa_queue_add_write_index_relaxed(Q, 1);
  auto *P = reinterpret_cast<hsa_kernel_dispatch_packet_t *>(
      static_cast<uint8_t *>(Q->base_address) + (I % Q->size) * 64);
  memset(reinterpret_cast<uint8_t *>(P) + 2, 0, 62);
  P->setup = 1;
  P->workgroup_size_x = Wg;
  P->workgroup_size_y = P->workgroup_size_z = 1;
  P->grid_size_x = 1024;
  P->grid_size_y = P->grid_size_z = 1;
  P->kernel_object = KernelObject;
  P->kernarg_address = Kernarg;
  P->completion_signal = Done;
  uint16_t H = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
               (1 << 8 /*barrier bit*/) |
               (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE) |
               (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE);
  __atomic_store_n(reinterpret_cast<uint16_t *>(P), H, __ATOMIC_RELEASE);
  p_hsa_signal_store_relaxed(Q->doorbell_signal, hsa_signal_value_t(I));
}

static void *hostKle() {
  void *K = alloc(FinePool, 256); // pool allocations are page-aligned: 128-byte aligned
  memset(K, 0, 16);
  return K;
}

static void finish() {
  CHECK(p_hsa_queue_destroy(Q));
  CHECK(p_hsa_executable_destroy(Exe));
  CHECK(p_hsa_shut_down());
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  std::string C = argv[1];
  setup();
  hsa_signal_t Done = signal(1);
  void *Ka = alloc(KernargPool, 64);
  if (C == "correct") {
    // Host (zerocopy-style) KLE: published, completed, then rewritten and freed.
    void *Kle = hostKle();
    dispatch(Ka, Kle, Done);
    waitZero(Done);
    memset(Kle, 0xAB, 16);
    // Device KLE delivered by a copy that completed before the dispatch.
    void *DevKle = alloc(DevPool, 256);
    hsa_signal_t Copied = signal(1);
    CHECK(p_hsa_amd_memory_async_copy(DevKle, Gpu, Kle, Gpu, 16, 0, nullptr, Copied));
    waitZero(Copied);
    p_hsa_signal_store_screlease(Done, 1);
    dispatch(Ka, DevKle, Done);
    waitZero(Done);
    // Two dispatches in flight with their own kernargs and KLEs.
    void *Ka2 = alloc(KernargPool, 64);
    void *Kle2 = hostKle();
    hsa_signal_t Done2 = signal(1);
    memset(Kle, 0, 16);
    p_hsa_signal_store_screlease(Done, 1);
    dispatch(Ka, Kle, Done);
    dispatch(Ka2, Kle2, Done2);
    waitZero(Done);
    waitZero(Done2);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(Kle2));
    CHECK(p_hsa_amd_memory_pool_free(DevKle));
    CHECK(p_hsa_amd_memory_pool_free(Ka2));
    CHECK(p_hsa_signal_destroy(Copied));
    CHECK(p_hsa_signal_destroy(Done2));
  } else if (C == "kle-rewrite") {
    // A1: the host rewrites the KLE between the doorbell and completion.
    void *Kle = hostKle();
    dispatch(Ka, Kle, Done);
    memset(Kle, 0x5A, 16);
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
  } else if (C == "kle-free") {
    // B: the KLE is freed while the dispatch that reads it is pending.
    void *Kle = hostKle();
    dispatch(Ka, Kle, Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    waitZero(Done);
  } else if (C == "kernarg-free") {
    // B: the kernarg buffer is freed while its dispatch is pending.
    void *Kle = hostKle();
    void *Ka2 = alloc(KernargPool, 64);
    dispatch(Ka2, Kle, Done);
    CHECK(p_hsa_amd_memory_pool_free(Ka2));
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
  } else if (C == "kernarg-shared") {
    // K: one kernarg buffer for two dispatches in flight.
    void *Kle = hostKle(), *Kle2 = hostKle();
    hsa_signal_t Done2 = signal(1);
    dispatch(Ka, Kle, Done);
    dispatch(Ka, Kle2, Done2);
    waitZero(Done);
    waitZero(Done2);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(Kle2));
    CHECK(p_hsa_signal_destroy(Done2));
  } else if (C == "kernarg-rewrite") {
    // K: kernarg bytes change after the doorbell.
    void *Kle = hostKle();
    dispatch(Ka, Kle, Done);
    static_cast<uint8_t *>(Ka)[8] ^= 1;
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
  } else if (C == "kernarg-pool") {
    // K: kernargs in plain fine-grained memory (not KERNARG_INIT).
    void *Kle = hostKle();
    void *Bad = alloc(FinePool, 64);
    dispatch(Bad, Kle, Done);
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Bad));
    CHECK(p_hsa_amd_memory_pool_free(Kle));
  } else if (C == "kle-shared") {
    // X: one KLE for two dispatches in flight.
    void *Kle = hostKle();
    void *Ka2 = alloc(KernargPool, 64);
    hsa_signal_t Done2 = signal(1);
    dispatch(Ka, Kle, Done);
    dispatch(Ka2, Kle, Done2);
    waitZero(Done);
    waitZero(Done2);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(Ka2));
    CHECK(p_hsa_signal_destroy(Done2));
  } else if (C == "no-signal") {
    // packet: a dispatch with no completion signal. Wait for it through a
    // second dispatch behind it (the queue is in order).
    void *Kle = hostKle(), *Kle2 = hostKle();
    void *Ka2 = alloc(KernargPool, 64);
    dispatch(Ka2, Kle2, hsa_signal_t{0});
    dispatch(Ka, Kle, Done);
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(Kle2));
    CHECK(p_hsa_amd_memory_pool_free(Ka2));
  } else if (C == "bad-wg") {
    // packet: work-group size 0.
    void *Kle = hostKle();
    dispatch(Ka, Kle, Done, /*Wg=*/0);
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
  } else if (C == "copy-late") {
    // C: a device KLE whose copy waits on a signal the host sets only after
    // the dispatch has started (no barrier-AND orders them).
    void *Kle = hostKle();
    void *DevKle = alloc(DevPool, 256);
    hsa_signal_t Gate = signal(1), Copied = signal(1);
    CHECK(p_hsa_amd_memory_async_copy(DevKle, Gpu, Kle, Gpu, 16, 1, &Gate, Copied));
    dispatch(Ka, DevKle, Done);
    waitZero(Done);
    p_hsa_signal_store_screlease(Gate, 0);
    waitZero(Copied);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(DevKle));
    CHECK(p_hsa_signal_destroy(Gate));
    CHECK(p_hsa_signal_destroy(Copied));
  } else if (C == "slab-neighbour") {
    // Two device KLEs in one slab (resident's layout: one block per slot,
    // many slots per allocation). A's copy completed; B's copy into the same
    // slab is still gated when A's dispatch starts. A's dispatch must not be
    // blamed for B's pending copy (check C is per range, not per allocation).
    void *Kle = hostKle();
    uint8_t *Slab = static_cast<uint8_t *>(alloc(DevPool, 256));
    hsa_signal_t CopiedA = signal(1), Gate = signal(1), CopiedB = signal(1);
    CHECK(p_hsa_amd_memory_async_copy(Slab, Gpu, Kle, Gpu, 16, 0, nullptr, CopiedA));
    waitZero(CopiedA);
    CHECK(p_hsa_amd_memory_async_copy(Slab + 64, Gpu, Kle, Gpu, 16, 1, &Gate, CopiedB));
    dispatch(Ka, Slab, Done);
    waitZero(Done);
    p_hsa_signal_store_screlease(Gate, 0);
    waitZero(CopiedB);
    CHECK(p_hsa_amd_memory_pool_free(Kle));
    CHECK(p_hsa_amd_memory_pool_free(Slab));
    CHECK(p_hsa_signal_destroy(CopiedA));
    CHECK(p_hsa_signal_destroy(Gate));
    CHECK(p_hsa_signal_destroy(CopiedB));
  } else if (C == "no-copy") {
    // C: a device KLE nothing was copied into.
    void *DevKle = alloc(DevPool, 256);
    dispatch(Ka, DevKle, Done);
    waitZero(Done);
    CHECK(p_hsa_amd_memory_pool_free(DevKle));
  } else {
    fprintf(stderr, "selftest: unknown case %s\n", C.c_str());
    return 2;
  }
  CHECK(p_hsa_amd_memory_pool_free(Ka));
  CHECK(p_hsa_signal_destroy(Done));
  finish();
  return 0;
}
