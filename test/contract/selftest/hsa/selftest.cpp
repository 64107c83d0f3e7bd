//===- selftest.cpp - direct HSA-API test of the HSA stand-in -------------===//
//
// Usage: kle_hsa_standin_selftest <case>
// Drives libhsa-runtime64.so.1 (the stand-in, dlopen()ed from
// KLE_HSA_STANDIN_LIB) through the HSA API with a synthetic gfx90a code
// object holding two kernels, each with 16 kernarg bytes (dyn_ptr first) and a
// <name>_kernel_environment, so every dispatch carries a KLE: "k" (no
// reduction) and "r" (a cross-team reduction of RedDataSize x RedBufLen
// bytes, so its KLE is mandatory and must name that much device memory).
// "correct" must end with violations=0 and status 0: a host KLE; a device KLE
// delivered by a completed copy; two dispatches in flight with their own
// buffers; r with a zerocopy KLE (tagged, zeroed device counters, a reduction
// buffer of the right size) and with upstream's layout in device memory; a
// copy whose source the host fills before it signals the copy's dependency
// (A2's exception). Each other case makes one deliberate mistake and
// run-selftest.sh checks the VIOLATION it must cause (the list, with the check
// each one fires, is in test/standin/CMakeLists.txt, KLE_HSA_SELFTEST_CASES, and
// test/standin/README.md):
//   kle-rewrite (A1), kle-free and kernarg-free (B), kernarg-shared,
//   kernarg-rewrite and kernarg-pool (K), kle-shared (X), no-signal and
//   bad-wg (packet), copy-late and no-copy (C, device KLE arrival),
//   red-buffer (D), red-no-kle (E), staging-rewrite (A2), counters-pool,
//   counters-dirty (C, zerocopy counters) and counters-shared (X, counters);
//   slab-neighbour is correct too (C is per address range); hb-kernel-read
//   and hb-copy-back (H: a dispatch and a copy of the same device memory with
//   no barrier-AND packet or copy dependency between them), hb-ok (the same
//   ordered correctly); fork-unannounced is correct too (a packet reserved
//   but not announced at a fork is the parent's, not the child's to run).
//
// KLE_STANDIN_DELAY_US defaults to 100000:100000 here (set before the
// dlopen), so every dispatch waits 100 ms after its doorbell and every copy
// 100 ms after its enqueue: the races below happen inside that window
// deterministically.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include "hsa.h"
#include "hsa_ext_amd.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <dlfcn.h>
#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>
#include <initializer_list>
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
DECL(hsa_status_t, hsa_amd_memory_fill, void *, uint32_t, size_t)
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
static uint64_t KernelObject, RedKernelObject; // k, r
static hsa_executable_t Exe;

/// The reduction kernel r: ReductionDataSize x ReductionBufferLength bytes of
/// device memory per launch (check D), and a KLE is mandatory (check E).
constexpr int32_t RedDataSize = 8, RedBufLen = 64;
constexpr size_t RedBytes = size_t(RedDataSize) * RedBufLen;

/// A minimal gfx90a ET_DYN image: one PT_LOAD with two kernels, each a
/// 64-byte descriptor (kernarg size 16) and a 32-byte <name>_kernel_environment
/// (ConfigurationEnvironmentTy first: ReductionDataSize at byte 20,
/// ReductionBufferLength at 24, as the stand-in reads them). k has no
/// reduction; r has a cross-team one (RedDataSize x RedBufLen).
static std::vector<uint8_t> image() {
  std::vector<uint8_t> I(0x380, 0);
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
  Eh.e_shoff = 0x2c0;
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
  memcpy(&I[0x100 + 8], &Kernarg, 4); // k's descriptor: kernarg size
  memcpy(&I[0x180 + 8], &Kernarg, 4); // r's descriptor: kernarg size
  memcpy(&I[0x1c0 + 20], &RedDataSize, 4);
  memcpy(&I[0x1c0 + 24], &RedBufLen, 4);
  struct {
    const char *Name;
    uint64_t Off, Size;
  } Objs[] = {{"k.kd", 0x100, 64},
              {"k_kernel_environment", 0x140, 32},
              {"r.kd", 0x180, 64},
              {"r_kernel_environment", 0x1c0, 32}};
  constexpr size_t NSyms = 1 + sizeof(Objs) / sizeof(Objs[0]);
  std::string Str(1, '\0');
  Elf64_Sym Sy[NSyms]{};
  for (size_t S = 1; S < NSyms; ++S) {
    Sy[S].st_name = uint32_t(Str.size());
    Str += Objs[S - 1].Name;
    Str += '\0';
    Sy[S].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    Sy[S].st_shndx = 1;
    Sy[S].st_value = Objs[S - 1].Off;
    Sy[S].st_size = Objs[S - 1].Size;
  }
  memcpy(&I[0x200], Sy, sizeof(Sy));         // .dynsym, 0x200..0x278
  memcpy(&I[0x280], Str.data(), Str.size()); // .dynstr, 0x280..0x2b6
  Elf64_Shdr Sh[3]{};
  Sh[1].sh_type = SHT_DYNSYM;
  Sh[1].sh_offset = 0x200;
  Sh[1].sh_size = sizeof(Sy);
  Sh[1].sh_link = 2;
  Sh[1].sh_entsize = sizeof(Elf64_Sym);
  Sh[2].sh_type = SHT_STRTAB;
  Sh[2].sh_offset = 0x280;
  Sh[2].sh_size = Str.size();
  memcpy(&I[0x2c0], Sh, sizeof(Sh));
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
  setenv("KLE_STANDIN_DELAY_US", "100000:100000", /*overwrite=*/0);
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
  S(hsa_amd_memory_fill);
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
  CHECK(p_hsa_executable_get_symbol_by_name(Exe, "r.kd", &Gpu, &Sym));
  CHECK(p_hsa_executable_symbol_get_info(Sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                         &RedKernelObject));
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

/// The host KLEs this test made (hostKle, zeroCopyKle): dispatchOf sets
/// dyn_ptr's host flag (bit 0, Shared/KLEAbi.h) for them, as the plugin does.
static std::set<void *> HostKles;

/// Writes kernargs {DynPtr, Arg1} and publishes one dispatch of \p Kernel.
static void dispatchOf(uint64_t Kernel, void *Kernarg, void *DynPtr, hsa_signal_t Done,
                       uint16_t Wg, void *Arg1 = nullptr) {
  uint64_t Args[2] = {reinterpret_cast<uint64_t>(DynPtr) | uint64_t(HostKles.count(DynPtr)),
                      reinterpret_cast<uint64_t>(Arg1)};
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
  P->kernel_object = Kernel;
  P->kernarg_address = Kernarg;
  P->completion_signal = Done;
  uint16_t H = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
               (1 << 8 /*barrier bit*/) |
               (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE) |
               (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE);
  __atomic_store_n(reinterpret_cast<uint16_t *>(P), H, __ATOMIC_RELEASE);
  p_hsa_signal_store_relaxed(Q->doorbell_signal, hsa_signal_value_t(I));
}

/// One dispatch of k (no reduction).
static void dispatch(void *Kernarg, void *DynPtr, hsa_signal_t Done, uint16_t Wg = 64) {
  dispatchOf(KernelObject, Kernarg, DynPtr, Done, Wg);
}

/// Publishes a barrier-AND packet: later packets of the queue wait until
/// \p Dep reads 0.
static void barrierOn(hsa_signal_t Dep) {
  uint64_t I = p_hsa_queue_add_write_index_relaxed(Q, 1);
  auto *P = reinterpret_cast<hsa_barrier_and_packet_t *>(
      static_cast<uint8_t *>(Q->base_address) + (I % Q->size) * 64);
  memset(reinterpret_cast<uint8_t *>(P) + 2, 0, 62);
  P->dep_signal[0] = Dep;
  uint16_t H = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) | (1 << 8);
  __atomic_store_n(reinterpret_cast<uint16_t *>(P), H, __ATOMIC_RELEASE);
  p_hsa_signal_store_relaxed(Q->doorbell_signal, hsa_signal_value_t(I));
}

/// One dispatch of r (cross-team reduction: needs a KLE naming RedBytes of
/// device memory).
static void dispatchRed(void *Kernarg, void *DynPtr, hsa_signal_t Done) {
  dispatchOf(RedKernelObject, Kernarg, DynPtr, Done, 64);
}

static void *hostKle() {
  void *K = alloc(FinePool, 256); // pool allocations are page-aligned: 128-byte aligned
  memset(K, 0, 16);
  HostKles.insert(K);
  return K;
}

/// The zerocopy layout: host fine-grained, 128-byte aligned, {counters,
/// ReductionBuffer | 1}; the tag bit says the counters live at \p Cnt.
static void *zeroCopyKle(void *Cnt, void *Red) {
  uint64_t *K = static_cast<uint64_t *>(alloc(FinePool, 256));
  K[0] = reinterpret_cast<uint64_t>(Cnt);
  K[1] = reinterpret_cast<uint64_t>(Red) | 1;
  HostKles.insert(K);
  return K;
}

/// Device zerocopy counters: 8 bytes, zeroed unless \p Zero is false (then
/// they keep the stand-in's 0xCD poison, as fresh device memory would hold
/// garbage).
static void *counters(bool Zero = true) {
  void *C = alloc(DevPool, 8);
  if (Zero)
    CHECK(p_hsa_amd_memory_fill(C, 0, 2));
  return C;
}

/// Upstream's layout in device memory ({0, 0, ReductionBuffer}, as copy and
/// staged deliver it): staged in a host fine-grained buffer and copied by an
/// async copy that completes before this returns. The staging buffer is
/// returned in \p Src (the caller frees it).
static void *deviceKle(void *Red, void **Src) {
  uint64_t *S = static_cast<uint64_t *>(alloc(FinePool, 256));
  S[0] = 0;
  S[1] = reinterpret_cast<uint64_t>(Red);
  void *D = alloc(DevPool, 256);
  hsa_signal_t Copied = signal(1);
  CHECK(p_hsa_amd_memory_async_copy(D, Gpu, S, Gpu, 16, 0, nullptr, Copied));
  waitZero(Copied);
  CHECK(p_hsa_signal_destroy(Copied));
  *Src = S;
  return D;
}

static void freeAll(std::initializer_list<void *> Ps) {
  for (void *P : Ps)
    CHECK(p_hsa_amd_memory_pool_free(P));
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
  // The hb- cases pass device memory as a kernel's second argument: the
  // happens-before check counts argument words only when asked.
  if (C.compare(0, 3, "hb-") == 0)
    setenv("KLE_STANDIN_HB_ARGS", "1", 0);
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
    // The reduction kernel r with a zerocopy KLE: tagged, zeroed device
    // counters, a device reduction buffer of RedBytes (checks C, D, E).
    void *Cnt = counters(), *Red = alloc(DevPool, RedBytes);
    void *ZcKle = zeroCopyKle(Cnt, Red);
    p_hsa_signal_store_screlease(Done, 1);
    dispatchRed(Ka, ZcKle, Done);
    waitZero(Done);
    // r with upstream's layout in device memory (copy, staged).
    void *Staging;
    void *RedKle = deviceKle(Red, &Staging);
    p_hsa_signal_store_screlease(Done, 1);
    dispatchRed(Ka, RedKle, Done);
    waitZero(Done);
    // A copy whose fine-grained source the host fills after the enqueue and
    // before it signals the copy's dependency, then r reads what it delivered
    // (the plugin's two-step host-to-device copy: an async handler fills the
    // pinned buffer, then signals): A2 allows it.
    uint64_t *Pinned = static_cast<uint64_t *>(alloc(FinePool, 256));
    void *TwoStepKle = alloc(DevPool, 256);
    hsa_signal_t Filled = signal(1), Copied3 = signal(1);
    CHECK(p_hsa_amd_memory_async_copy(TwoStepKle, Gpu, Pinned, Gpu, 16, 1, &Filled, Copied3));
    Pinned[0] = 0;
    Pinned[1] = reinterpret_cast<uint64_t>(Red);
    p_hsa_signal_store_screlease(Filled, 0);
    waitZero(Copied3);
    p_hsa_signal_store_screlease(Done, 1);
    dispatchRed(Ka, TwoStepKle, Done);
    waitZero(Done);
    freeAll({Cnt, Red, ZcKle, RedKle, Staging, Pinned, TwoStepKle});
    CHECK(p_hsa_signal_destroy(Filled));
    CHECK(p_hsa_signal_destroy(Copied3));
  } else if (C == "hb-ok" || C == "hb-kernel-read" || C == "hb-copy-back") {
    // Device memory X shared by copies and dispatches of k (X is its second
    // kernarg): ordered by a barrier-AND packet and a copy dependency, by
    // host waits (hb-ok), or not at all in the one way the case names (the
    // happens-before check, H).
    void *Kle = hostKle(), *Staging = hostKle();
    void *X = alloc(DevPool, 256);
    hsa_signal_t Copied = signal(1), Back = signal(1);
    if (C == "hb-kernel-read") {
      CHECK(p_hsa_amd_memory_async_copy(X, Gpu, Staging, Gpu, 16, 0, nullptr, Copied));
      dispatchOf(KernelObject, Ka, Kle, Done, 64, X); // BUG: no barrier on Copied
      waitZero(Copied);
      waitZero(Done);
    } else if (C == "hb-copy-back") {
      dispatchOf(KernelObject, Ka, Kle, Done, 64, X);
      // BUG: the copy back does not depend on the dispatch's signal.
      CHECK(p_hsa_amd_memory_async_copy(Staging, Gpu, X, Gpu, 16, 0, nullptr, Back));
      waitZero(Back);
      waitZero(Done);
    } else {
      // Copy in; barrier-AND on it; the dispatch; the copy back after it.
      CHECK(p_hsa_amd_memory_async_copy(X, Gpu, Staging, Gpu, 16, 0, nullptr, Copied));
      barrierOn(Copied);
      dispatchOf(KernelObject, Ka, Kle, Done, 64, X);
      CHECK(p_hsa_amd_memory_async_copy(Staging, Gpu, X, Gpu, 16, 1, &Done, Back));
      waitZero(Back);
      // The same ordered by host waits, then a host fill after a wait.
      p_hsa_signal_store_screlease(Copied, 1);
      p_hsa_signal_store_screlease(Done, 1);
      p_hsa_signal_store_screlease(Back, 1);
      CHECK(p_hsa_amd_memory_async_copy(X, Gpu, Staging, Gpu, 16, 0, nullptr, Copied));
      waitZero(Copied);
      dispatchOf(KernelObject, Ka, Kle, Done, 64, X);
      waitZero(Done);
      CHECK(p_hsa_amd_memory_async_copy(Staging, Gpu, X, Gpu, 16, 0, nullptr, Back));
      waitZero(Back);
      CHECK(p_hsa_amd_memory_fill(X, 0, 4));
    }
    freeAll({Kle, Staging, X});
    CHECK(p_hsa_signal_destroy(Copied));
    CHECK(p_hsa_signal_destroy(Back));
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
  } else if (C == "red-buffer") {
    // D: r's device KLE names a reduction buffer of half the RedBytes the
    // kernel's environment asks for.
    void *Red = alloc(DevPool, RedBytes / 2), *Staging;
    void *Kle = deviceKle(Red, &Staging);
    dispatchRed(Ka, Kle, Done);
    waitZero(Done);
    freeAll({Red, Staging, Kle});
  } else if (C == "red-no-kle") {
    // E: r (a cross-team reduction) dispatched with no dyn_ptr.
    dispatchRed(Ka, nullptr, Done);
    waitZero(Done);
  } else if (C == "staging-rewrite") {
    // A2: the host rewrites a copy's fine-grained source after the enqueue,
    // while the DMA has not run yet (100 ms), and no dependency of the copy
    // is signalled afterwards: a staging slot recycled before its copy ran.
    void *Staging = hostKle();
    void *DevKle = alloc(DevPool, 256);
    hsa_signal_t Copied = signal(1);
    CHECK(p_hsa_amd_memory_async_copy(DevKle, Gpu, Staging, Gpu, 16, 0, nullptr, Copied));
    memset(Staging, 0x5A, 16);
    waitZero(Copied);
    dispatch(Ka, DevKle, Done);
    waitZero(Done);
    freeAll({Staging, DevKle});
    CHECK(p_hsa_signal_destroy(Copied));
  } else if (C == "counters-pool") {
    // C: the tagged zerocopy KLE's counters are in host fine-grained memory
    // (zeroed), not in device memory.
    void *Cnt = alloc(FinePool, 8), *Red = alloc(DevPool, RedBytes);
    memset(Cnt, 0, 8);
    void *Kle = zeroCopyKle(Cnt, Red);
    dispatchRed(Ka, Kle, Done);
    waitZero(Done);
    freeAll({Cnt, Red, Kle});
  } else if (C == "counters-dirty") {
    // C: the zerocopy counters were never zeroed (they hold the 0xCD poison
    // of fresh device memory) when r starts.
    void *Cnt = counters(/*Zero=*/false), *Red = alloc(DevPool, RedBytes);
    void *Kle = zeroCopyKle(Cnt, Red);
    dispatchRed(Ka, Kle, Done);
    waitZero(Done);
    freeAll({Cnt, Red, Kle});
  } else if (C == "counters-shared") {
    // X: two dispatches of r in flight, each with its own kernargs, KLE and
    // reduction buffer, but one counter block.
    void *Cnt = counters();
    void *Red = alloc(DevPool, RedBytes), *Red2 = alloc(DevPool, RedBytes);
    void *Kle = zeroCopyKle(Cnt, Red), *Kle2 = zeroCopyKle(Cnt, Red2);
    void *Ka2 = alloc(KernargPool, 64);
    hsa_signal_t Done2 = signal(1);
    dispatchRed(Ka, Kle, Done);
    dispatchRed(Ka2, Kle2, Done2);
    waitZero(Done);
    waitZero(Done2);
    freeAll({Cnt, Red, Red2, Kle, Kle2, Ka2});
    CHECK(p_hsa_signal_destroy(Done2));
  } else if (C == "fork-unannounced") {
    // fork() while this thread has reserved a packet slot and not rung the
    // doorbell for it: the child destroys the queue and exits with no
    // violation (the packet is the parent's); the parent announces it and
    // fails if the child did.
    uint64_t I = p_hsa_queue_add_write_index_relaxed(Q, 1);
    auto *P = reinterpret_cast<hsa_barrier_and_packet_t *>(
        static_cast<uint8_t *>(Q->base_address) + (I % Q->size) * 64);
    memset(reinterpret_cast<uint8_t *>(P) + 2, 0, 62);
    P->completion_signal = Done;
    fflush(stderr);
    pid_t Pid = fork();
    if (Pid == 0) {
      CHECK(p_hsa_amd_memory_pool_free(Ka));
      CHECK(p_hsa_signal_destroy(Done));
      finish();
      return 0; // the stand-in's exit report sets 97 on a violation
    }
    __atomic_store_n(reinterpret_cast<uint16_t *>(P),
                     uint16_t((HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) | (1 << 8)),
                     __ATOMIC_RELEASE);
    p_hsa_signal_store_relaxed(Q->doorbell_signal, hsa_signal_value_t(I));
    waitZero(Done);
    int St = 0;
    if (waitpid(Pid, &St, 0) != Pid || !WIFEXITED(St) || WEXITSTATUS(St) != 0) {
      fprintf(stderr, "selftest: the child failed (status %#x)\n", St);
      return 1;
    }
  } else {
    fprintf(stderr, "selftest: unknown case %s\n", C.c_str());
    return 2;
  }
  CHECK(p_hsa_amd_memory_pool_free(Ka));
  CHECK(p_hsa_signal_destroy(Done));
  finish();
  return 0;
}
