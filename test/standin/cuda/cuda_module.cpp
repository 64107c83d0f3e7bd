//===- cuda_module.cpp - Modules and functions of the CUDA stand-in -------===//
//
// TEST ONLY.  Cubin and fatbinary loading (ELF sections, kernels, parameter
// layout, globals and their relocations, OpenMP kernel environments) and the
// cuModule*, cuFunc* and occupancy entry points of the CUDA stand-in.
//
//===----------------------------------------------------------------------===//

#include "cuda_front.h"

#include <gelf.h>
#include <libelf.h>

namespace cuda_standin {

//===----------------------------------------------------------------------===//
// ELF (cubin) loading
//===----------------------------------------------------------------------===//

struct ElfCloser {
  Elf *E;
  ~ElfCloser() {
    if (E)
      elf_end(E);
  }
};

// Find an sm_XY cubin inside a CUDA fatbinary (uncompressed entries only).
static const void *findElfInFatbin(const void *Img, size_t &SizeOut) {
  const uint8_t *P = static_cast<const uint8_t *>(Img);
  uint32_t Magic;
  memcpy(&Magic, P, 4);
  if (Magic != 0xBA55ED50u)
    return nullptr;
  uint64_t HdrSize = 0, DataSize = 0;
  uint16_t HS;
  memcpy(&HS, P + 6, 2);
  HdrSize = HS;
  memcpy(&DataSize, P + 8, 8);
  const uint8_t *Q = P + HdrSize, *End = Q + DataSize;
  while (Q + 16 < End) {
    uint16_t Kind2;
    uint32_t EHdr;
    uint64_t Payload;
    memcpy(&Kind2, Q, 2);
    memcpy(&EHdr, Q + 4, 4);
    memcpy(&Payload, Q + 8, 8);
    const uint8_t *D = Q + EHdr;
    if (Kind2 == 2 && D + 4 <= End && memcmp(D, "\x7f" "ELF", 4) == 0) {
      SizeOut = Payload;
      return D;
    }
    Q = D + Payload;
  }
  return nullptr;
}

struct NvInfo {
  std::vector<Func::Param> Params;
  int MaxThreads = 0;
  uint32_t CbankParamSize = 0;
};

static NvInfo parseNvInfo(const uint8_t *D, size_t N) {
  NvInfo I;
  size_t P = 0;
  while (P + 4 <= N) {
    uint8_t Fmt = D[P], Attr = D[P + 1];
    uint16_t V;
    memcpy(&V, D + P + 2, 2);
    if (Fmt == 0x04) { // EIFMT_SVAL: size + payload
      const uint8_t *Pay = D + P + 4;
      if (P + 4 + V > N)
        break;
      if (Attr == 0x17 && V >= 12) { // EIATTR_KPARAM_INFO
        uint16_t Ord, Off;
        uint32_t Packed;
        memcpy(&Ord, Pay + 4, 2);
        memcpy(&Off, Pay + 6, 2);
        memcpy(&Packed, Pay + 8, 4);
        uint32_t Sz = (Packed >> 18) & 0x3fff;
        bool Ptr = ((Packed >> 8) & 0xf) != 0;
        I.Params.push_back({Ord, Off, Sz, Ptr});
      } else if (Attr == 0x05 && V >= 12) { // EIATTR_MAX_THREADS
        uint32_t X, Y, Z;
        memcpy(&X, Pay, 4);
        memcpy(&Y, Pay + 4, 4);
        memcpy(&Z, Pay + 8, 4);
        I.MaxThreads = int(X * std::max(1u, Y) * std::max(1u, Z));
      }
      P += 4 + V;
    } else {
      if (Fmt == 0x03 && Attr == 0x19) // EIATTR_CBANK_PARAM_SIZE
        I.CbankParamSize = V;
      P += 4;
    }
  }
  std::sort(I.Params.begin(), I.Params.end(),
            [](const Func::Param &A, const Func::Param &B) {
              return A.Ordinal < B.Ordinal;
            });
  return I;
}

static CUresult loadModule(const void *Image, Module *&Out) {
  const uint8_t *P = static_cast<const uint8_t *>(Image);
  size_t Size = 0;
  if (memcmp(P, "\x7f" "ELF", 4) == 0) {
    // Compute the ELF size from the section header table.
    Elf64_Ehdr H;
    memcpy(&H, P, sizeof(H));
    if (H.e_ident[EI_CLASS] != ELFCLASS64)
      return ERR_INVALID_IMAGE;
    Size = H.e_shoff + size_t(H.e_shnum) * H.e_shentsize;
    Size = std::max<size_t>(Size, H.e_phoff + size_t(H.e_phnum) * H.e_phentsize);
    for (unsigned I = 0; I < H.e_shnum; ++I) {
      Elf64_Shdr Sh;
      memcpy(&Sh, P + H.e_shoff + size_t(I) * H.e_shentsize, sizeof(Sh));
      if (Sh.sh_type != SHT_NOBITS)
        Size = std::max<size_t>(Size, Sh.sh_offset + Sh.sh_size);
    }
  } else if (const void *E = findElfInFatbin(Image, Size)) {
    P = static_cast<const uint8_t *>(E);
  } else {
    say("cuModuleLoadDataEx: image is neither an ELF cubin nor an "
        "uncompressed fatbinary (PTX JIT is not modelled)");
    return ERR_INVALID_IMAGE;
  }
  Elf64_Ehdr H;
  memcpy(&H, P, sizeof(H));
  if (H.e_machine != 190 /*EM_CUDA*/)
    return ERR_INVALID_IMAGE;
  unsigned SM = H.e_ident[EI_ABIVERSION] == 7 ? (H.e_flags & 0xff)
                                              : ((H.e_flags & 0xff00) >> 8);
  const unsigned DevSM = unsigned(cfg().SM);
  if (SM / 10 != DevSM / 10 || SM % 10 > DevSM % 10) {
    say("cuModuleLoadDataEx: cubin is for sm_%u, device is sm_%u", SM, DevSM);
    return ERR_NO_BINARY_FOR_GPU;
  }

  elf_version(EV_CURRENT);
  std::vector<char> Copy(P, P + Size);
  ElfCloser EC{elf_memory(Copy.data(), Copy.size())};
  if (!EC.E || elf_kind(EC.E) != ELF_K_ELF)
    return ERR_INVALID_IMAGE;
  size_t ShStrNdx;
  if (elf_getshdrstrndx(EC.E, &ShStrNdx) != 0)
    return ERR_INVALID_IMAGE;

  struct SecInfo {
    std::string Name;
    GElf_Shdr Sh;
    Elf_Scn *Scn;
    AllocP Seg;
  };
  std::vector<SecInfo> Secs;
  Secs.push_back({"", {}, nullptr, nullptr});
  Elf_Scn *SymScn = nullptr;
  for (Elf_Scn *S = elf_nextscn(EC.E, nullptr); S; S = elf_nextscn(EC.E, S)) {
    SecInfo SI;
    gelf_getshdr(S, &SI.Sh);
    const char *N = elf_strptr(EC.E, ShStrNdx, SI.Sh.sh_name);
    SI.Name = N ? N : "";
    SI.Scn = S;
    if (SI.Sh.sh_type == SHT_SYMTAB)
      SymScn = S;
    Secs.push_back(SI);
  }
  if (!SymScn)
    return ERR_INVALID_IMAGE;

  auto *M = new Module();
  M->C = CurrentCtx;

  auto isDataSec = [](const std::string &N) {
    return N.rfind(".nv.global", 0) == 0 || N.rfind(".nv.constant", 0) == 0;
  };
  // One device segment per global/constant data section.
  {
    std::lock_guard<std::mutex> L(g().Mtx);
    for (size_t I = 1; I < Secs.size(); ++I) {
      SecInfo &SI = Secs[I];
      if (!isDataSec(SI.Name) || SI.Sh.sh_size == 0)
        continue;
      AllocP Seg;
      if (CUresult Err = newAllocLocked(MemKind::Module, SI.Sh.sh_size,
                                        CurrentCtx, Seg))
        return Err;
      if (SI.Sh.sh_type == SHT_NOBITS) {
        memset(Seg->Backing, 0, SI.Sh.sh_size);
      } else {
        Elf_Data *D = elf_getdata(SI.Scn, nullptr);
        memset(Seg->Backing, 0, SI.Sh.sh_size);
        if (D && D->d_buf)
          memcpy(Seg->Backing, D->d_buf, std::min<size_t>(D->d_size, SI.Sh.sh_size));
      }
      SI.Seg = Seg;
      M->Segments.push_back(Seg);
    }
  }

  GElf_Shdr SymSh;
  gelf_getshdr(SymScn, &SymSh);
  Elf_Data *SymData = elf_getdata(SymScn, nullptr);
  size_t NSyms = SymSh.sh_entsize ? SymSh.sh_size / SymSh.sh_entsize : 0;
  std::vector<uintptr_t> SymAddr(NSyms, 0);
  uintptr_t FakeText = 0x7e0000000000ull;
  for (size_t I = 0; I < NSyms; ++I) {
    GElf_Sym Sym;
    gelf_getsym(SymData, int(I), &Sym);
    const char *N = elf_strptr(EC.E, SymSh.sh_link, Sym.st_name);
    std::string Name = N ? N : "";
    if (Sym.st_shndx == SHN_UNDEF || Sym.st_shndx >= Secs.size())
      continue;
    SecInfo &SI = Secs[Sym.st_shndx];
    if (SI.Seg) {
      SymAddr[I] = SI.Seg->Addr + Sym.st_value;
      if (GELF_ST_TYPE(Sym.st_info) == STT_OBJECT && !Name.empty())
        M->Globals[Name] = {SI.Seg->Addr + Sym.st_value, Sym.st_size};
    } else if (GELF_ST_TYPE(Sym.st_info) == STT_FUNC) {
      SymAddr[I] = FakeText + I * 0x1000;
      bool Entry = (Sym.st_other & 0x10) != 0;
      std::string InfoName = ".nv.info." + Name;
      const SecInfo *Info = nullptr;
      for (auto &S2 : Secs)
        if (S2.Name == InfoName)
          Info = &S2;
      if (!Entry) // STO_CUDA_ENTRY: device functions also have .nv.info.*
        continue;
      auto *F = new Func();
      F->M = M;
      F->Name = Name;
      if (Info) {
        Elf_Data *D = elf_getdata(Info->Scn, nullptr);
        if (D && D->d_buf) {
          NvInfo NI = parseNvInfo(static_cast<const uint8_t *>(D->d_buf), D->d_size);
          F->Params = NI.Params;
          if (NI.MaxThreads > 0)
            F->MaxThreads = std::min(1024, NI.MaxThreads);
        }
      }
      for (auto &Pa : F->Params)
        F->ParamBytes = std::max(F->ParamBytes, Pa.Offset + Pa.Size);
      M->Funcs[Name] = F;
      addHandle(F, H_FUNC);
    }
  }

  // Apply relocations to the data segments (pointers between globals).
  for (size_t I = 1; I < Secs.size(); ++I) {
    SecInfo &RS = Secs[I];
    if (RS.Sh.sh_type != SHT_RELA && RS.Sh.sh_type != SHT_REL)
      continue;
    if (RS.Sh.sh_info >= Secs.size() || !Secs[RS.Sh.sh_info].Seg)
      continue;
    AllocP Seg = Secs[RS.Sh.sh_info].Seg;
    Elf_Data *D = elf_getdata(RS.Scn, nullptr);
    size_t Cnt = RS.Sh.sh_entsize ? RS.Sh.sh_size / RS.Sh.sh_entsize : 0;
    for (size_t J = 0; J < Cnt; ++J) {
      uint64_t Off, Info;
      int64_t Add = 0;
      if (RS.Sh.sh_type == SHT_RELA) {
        GElf_Rela Ra;
        gelf_getrela(D, int(J), &Ra);
        Off = Ra.r_offset;
        Info = Ra.r_info;
        Add = Ra.r_addend;
      } else {
        GElf_Rel Rl;
        gelf_getrel(D, int(J), &Rl);
        Off = Rl.r_offset;
        Info = Rl.r_info;
      }
      size_t SymI = GELF_R_SYM(Info);
      unsigned Type = GELF_R_TYPE(Info);
      uint64_t V = (SymI < NSyms ? SymAddr[SymI] : 0) + Add;
      // R_CUDA_32 = 1, R_CUDA_64 = 2, R_CUDA_G32 = 3, R_CUDA_G64 = 4.
      if ((Type == 2 || Type == 4) && Off + 8 <= Seg->Size)
        memcpy(Seg->Backing + Off, &V, 8);
      else if ((Type == 1 || Type == 3) && Off + 4 <= Seg->Size) {
        uint32_t V32 = uint32_t(V);
        memcpy(Seg->Backing + Off, &V32, 4);
      }
    }
  }

  // OpenMP kernel environments: <kernel>_kernel_environment.
  for (auto &KV : M->Funcs) {
    auto It = M->Globals.find(KV.first + "_kernel_environment");
    if (It == M->Globals.end() || It->second.second < 28)
      continue;
    Func *F = KV.second;
    AllocP A = resolve(It->second.first, 28);
    if (!A)
      continue;
    const uint8_t *B = A->host(It->second.first);
    F->HasKernelEnv = true;
    F->ExecMode = B[2];
    memcpy(&F->ReductionDataSize, B + 20, 4);
    memcpy(&F->ReductionBufferLength, B + 24, 4);
  }
  if (core().Verbose) {
    for (auto &KV : M->Funcs)
      say("module: kernel %s params=%zu bytes=%u maxthreads=%d kenv=%d "
          "exec_mode=%u red=%dx%d",
          KV.first.c_str(), KV.second->Params.size(), KV.second->ParamBytes,
          KV.second->MaxThreads, KV.second->HasKernelEnv,
          KV.second->ExecMode, KV.second->ReductionDataSize,
          KV.second->ReductionBufferLength);
    for (auto &KV : M->Globals)
      say("module: global %s addr=%#llx size=%zu", KV.first.c_str(),
          (unsigned long long)KV.second.first, KV.second.second);
  }
  addHandle(M, H_MODULE);
  Out = M;
  return CUDA_SUCCESS;
}

} // namespace cuda_standin

using namespace cuda_standin;

//===----------------------------------------------------------------------===//
// Exported driver API
//===----------------------------------------------------------------------===//

EXPORT CUresult cuModuleLoadDataEx(CUmodule *M, const void *Image, unsigned N,
                                   void *Opts, void **Vals) {
  ENTRY("cuModuleLoadDataEx");
  NEED_CTX();
  if (!M || !Image)
    return CUDA_ERROR_INVALID_VALUE;
  Module *Mod = nullptr;
  if (CUresult Err = loadModule(Image, Mod))
    return Err;
  *M = reinterpret_cast<CUmodule>(Mod);
  g().ModuleLoaded = true;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleLoadData(CUmodule *M, const void *Image) {
  return cuModuleLoadDataEx(M, Image, 0, nullptr, nullptr);
}

EXPORT CUresult cuModuleUnload(CUmodule H) {
  ENTRY("cuModuleUnload");
  NEED_INIT();
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> L(g().Mtx);
  g().Handles.erase(M);
  for (auto &KV : M->Funcs)
    g().Handles.erase(KV.second);
  for (auto &Seg : M->Segments)
    if (!Seg->Freed)
      releaseLocked(Seg, "cuModuleUnload");
  M->Unloaded = true;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *F, CUmodule H, const char *Name) {
  ENTRY("cuModuleGetFunction");
  NEED_CTX();
  if (!F || !Name)
    return CUDA_ERROR_INVALID_VALUE;
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  auto It = M->Funcs.find(Name);
  if (It == M->Funcs.end())
    return CUDA_ERROR_NOT_FOUND;
  *F = reinterpret_cast<CUfunction>(It->second);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *P, size_t *Sz, CUmodule H,
                                  const char *Name) { // -> _v2
  ENTRY("cuModuleGetGlobal_v2");
  NEED_CTX();
  if (!Name)
    return CUDA_ERROR_INVALID_VALUE;
  Module *M = reinterpret_cast<Module *>(H);
  if (!isHandle(M, H_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  auto It = M->Globals.find(Name);
  if (It == M->Globals.end())
    return CUDA_ERROR_NOT_FOUND;
  if (P)
    *P = It->second.first;
  if (Sz)
    *Sz = It->second.second;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *V, CUfunction_attribute A, CUfunction H) {
  ENTRY("cuFuncGetAttribute");
  NEED_INIT();
  if (!V)
    return CUDA_ERROR_INVALID_VALUE;
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (static_cast<int>(A)) {
  case 0: *V = F->MaxThreads; break;       // MAX_THREADS_PER_BLOCK
  case 1: *V = 0; break;                   // SHARED_SIZE_BYTES
  case 2: *V = 0; break;                   // CONST_SIZE_BYTES
  case 3: *V = 0; break;                   // LOCAL_SIZE_BYTES
  case 4: *V = 32; break;                  // NUM_REGS
  case 5: *V = 90; break;                  // PTX_VERSION
  case 6: *V = 90; break;                  // BINARY_VERSION
  case 7: *V = 0; break;                   // CACHE_MODE_CA
  case 8: *V = F->MaxDynShared; break;     // MAX_DYNAMIC_SHARED_SIZE_BYTES
  case 9: *V = -1; break;                  // PREFERRED_SHARED_MEMORY_CARVEOUT
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction H, CUfunction_attribute A, int V) {
  ENTRY("cuFuncSetAttribute");
  NEED_INIT();
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (static_cast<int>(A) == 8) {
    if (V < 0 || V > 232448)
      return CUDA_ERROR_INVALID_VALUE;
    F->MaxDynShared = V;
    return CUDA_SUCCESS;
  }
  if (static_cast<int>(A) == 9)
    return CUDA_SUCCESS;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction H, size_t Index, size_t *Off,
                                   size_t *Size) {
  ENTRY("cuFuncGetParamInfo");
  NEED_INIT();
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (Index >= F->Params.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (Off)
    *Off = F->Params[Index].Offset;
  if (Size)
    *Size = F->Params[Index].Size;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *MinGrid, int *Block,
                                                 CUfunction H,
                                                 CUoccupancyB2DSize Fn,
                                                 size_t DynSmem, int Limit) {
  ENTRY("cuOccupancyMaxPotentialBlockSize");
  NEED_CTX();
  if (!MinGrid || !Block)
    return CUDA_ERROR_INVALID_VALUE;
  Func *F = reinterpret_cast<Func *>(H);
  if (!isHandle(F, H_FUNC))
    return CUDA_ERROR_INVALID_HANDLE;
  int B = F->MaxThreads;
  if (Limit > 0)
    B = std::min(B, Limit);
  *Block = B;
  *MinGrid = 132 * std::max(1, 2048 / std::max(1, B));
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Aliases: the plain spellings of the entry points above (see
// cuda_context.cpp).
//===----------------------------------------------------------------------===//

#undef cuModuleGetGlobal

EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *P, size_t *S, CUmodule M,
                                  const char *N) {
  return cuModuleGetGlobal_v2(P, S, M, N);
}
