//===- hsa_code_object.cpp - HSA stand-in: code objects and executables ---===//
//
// TEST ONLY.  Code object readers, and executables: create, load (the ELF
// of a gfx90a image: PT_LOAD segments into code memory, R_AMDGPU_RELATIVE64
// relocations, .dynsym symbols, kernel descriptors and the kernels'
// <name>_kernel_environment), freeze, validate, destroy, and symbol queries.
//
//===----------------------------------------------------------------------===//

#include "kle_contract_hsa.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

using namespace hsafront;

namespace {

//===----------------------------------------------------------------------===//
// Code objects
//===----------------------------------------------------------------------===//

struct Reader {
  const uint8_t *Data;
  size_t Size;
};

constexpr unsigned R_AMDGPU_RELATIVE64_ = 13;

hsa_status_t loadElf(Executable &X, const Reader &R) {
  auto Bad = [&](const char *Why) {
    say("code object rejected: %s", Why);
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  };
  if (R.Size < sizeof(Elf64_Ehdr))
    return Bad("shorter than an ELF header");
  Elf64_Ehdr Eh;
  memcpy(&Eh, R.Data, sizeof(Eh));
  if (memcmp(Eh.e_ident, ELFMAG, SELFMAG) || Eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      Eh.e_machine != 224 /*EM_AMDGPU*/ || Eh.e_type != ET_DYN)
    return Bad("not a 64-bit AMDGPU ET_DYN ELF");
  if ((Eh.e_flags & 0xff) != 0x3f)
    return Bad("not a gfx90a image (e_flags mach != 0x3f)");
  auto InFile = [&](uint64_t Off, uint64_t N) { return Off <= R.Size && N <= R.Size - Off; };
  if (!InFile(Eh.e_phoff, uint64_t(Eh.e_phnum) * sizeof(Elf64_Phdr)) ||
      !InFile(Eh.e_shoff, uint64_t(Eh.e_shnum) * sizeof(Elf64_Shdr)))
    return Bad("header tables outside the file");
  std::vector<Elf64_Phdr> Ph(Eh.e_phnum);
  memcpy(Ph.data(), R.Data + Eh.e_phoff, Ph.size() * sizeof(Elf64_Phdr));
  uint64_t Span = 0;
  for (auto &P : Ph)
    if (P.p_type == PT_LOAD) {
      if (P.p_filesz > P.p_memsz || !InFile(P.p_offset, P.p_filesz))
        return Bad("bad PT_LOAD");
      Span = std::max(Span, P.p_vaddr + P.p_memsz);
    }
  if (!Span || Span > (size_t(1) << 32))
    return Bad("no or oversized PT_LOAD segments");
  BlockP Seg = mem().allocate(K_CODE, Span, /*Device=*/true, 0);
  if (!Seg)
    return ST_OUT_OF_RESOURCES;
  Seg->AllowedAgents = AGENT_BIT_GPU;
  for (auto &P : Ph)
    if (P.p_type == PT_LOAD)
      memcpy(Seg->Backing + P.p_vaddr, R.Data + P.p_offset, P.p_filesz);
  std::vector<Elf64_Shdr> Sh(Eh.e_shnum);
  memcpy(Sh.data(), R.Data + Eh.e_shoff, Sh.size() * sizeof(Elf64_Shdr));
  // Relocations.
  for (auto &S : Sh) {
    if (S.sh_type != SHT_RELA || !InFile(S.sh_offset, S.sh_size))
      continue;
    for (uint64_t O = 0; O + sizeof(Elf64_Rela) <= S.sh_size; O += sizeof(Elf64_Rela)) {
      Elf64_Rela Ra;
      memcpy(&Ra, R.Data + S.sh_offset + O, sizeof(Ra));
      if (ELF64_R_TYPE(Ra.r_info) != R_AMDGPU_RELATIVE64_) {
        mem().release(Seg);
        return Bad("relocation other than R_AMDGPU_RELATIVE64");
      }
      if (Ra.r_offset + 8 > Span) {
        mem().release(Seg);
        return Bad("relocation outside the segments");
      }
      uint64_t V = Seg->Addr + Ra.r_addend;
      memcpy(Seg->Backing + Ra.r_offset, &V, 8);
    }
  }
  // Symbols (.dynsym).
  std::map<std::string, Symbol *> ByName;
  for (auto &S : Sh) {
    if (S.sh_type != SHT_DYNSYM || S.sh_link >= Sh.size())
      continue;
    const Elf64_Shdr &Str = Sh[S.sh_link];
    if (!InFile(S.sh_offset, S.sh_size) || !InFile(Str.sh_offset, Str.sh_size))
      continue;
    for (uint64_t O = sizeof(Elf64_Sym); O + sizeof(Elf64_Sym) <= S.sh_size; O += sizeof(Elf64_Sym)) {
      Elf64_Sym Sy;
      memcpy(&Sy, R.Data + S.sh_offset + O, sizeof(Sy));
      unsigned Bind = ELF64_ST_BIND(Sy.st_info), Type = ELF64_ST_TYPE(Sy.st_info);
      if (Sy.st_shndx == SHN_UNDEF || (Bind != STB_GLOBAL && Bind != STB_WEAK) ||
          Type != STT_OBJECT || Sy.st_name >= Str.sh_size)
        continue;
      const char *NameP = reinterpret_cast<const char *>(R.Data + Str.sh_offset + Sy.st_name);
      std::string Name(NameP, strnlen(NameP, Str.sh_size - Sy.st_name));
      if (Sy.st_value + Sy.st_size > Span)
        continue;
      auto *Y = new Symbol();
      Y->Exe = &X;
      Y->Name = Name;
      Y->Addr = Seg->Addr + Sy.st_value;
      Y->Size = uint32_t(Sy.st_size);
      if (Name.size() > 3 && Name.compare(Name.size() - 3, 3, ".kd") == 0 && Sy.st_size >= 64) {
        Y->IsKernel = true;
        auto *K = new Kernel();
        K->Name = Name.substr(0, Name.size() - 3);
        K->Exe = &X;
        const uint8_t *Kd = Seg->Backing + Sy.st_value;
        memcpy(&K->GroupSize, Kd + 0, 4);
        memcpy(&K->PrivateSize, Kd + 4, 4);
        memcpy(&K->KernargSize, Kd + 8, 4);
        uint16_t Props;
        memcpy(&Props, Kd + 56, 2);
        K->DynStack = (Props >> 11) & 1;
        Y->K = K;
      }
      ByName[Name] = Y;
    }
  }
  std::lock_guard<std::mutex> G(g().Mtx);
  for (auto &KV : ByName) {
    Symbol *Y = KV.second;
    if (Y->IsKernel) {
      auto Env = ByName.find(Y->K->Name + "_kernel_environment");
      if (Env != ByName.end() && Env->second->Size >= 28) {
        Y->K->HasEnv = true;
        const uint8_t *E = Seg->bytes(Env->second->Addr);
        memcpy(&Y->K->RedDataSize, E + 20, 4);
        memcpy(&Y->K->RedBufLen, E + 24, 4);
      }
      g().Kernels[Y->Addr] = Y->K;
      if (cfg().Verbose)
        say("kernel %s kernarg=%u group=%u private=%u env=%d reduction=%dx%d", Y->K->Name.c_str(),
            Y->K->KernargSize, Y->K->GroupSize, Y->K->PrivateSize, Y->K->HasEnv,
            Y->K->RedDataSize, Y->K->RedBufLen);
    }
    X.Syms.push_back(Y);
    g().Syms.insert(Y);
  }
  X.Seg = Seg;
  return HSA_STATUS_SUCCESS;
}

Executable *exeOf(hsa_executable_t H) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto *X = reinterpret_cast<Executable *>(H.handle);
  if (!g().Exes.count(X) || X->Destroyed)
    return nullptr;
  return X;
}

Symbol *symOf(hsa_executable_symbol_t H) {
  std::lock_guard<std::mutex> G(g().Mtx);
  auto *Y = reinterpret_cast<Symbol *>(H.handle);
  return g().Syms.count(Y) && !Y->Exe->Destroyed ? Y : nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// Exports: code objects and executables
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void *Image, size_t Size,
                                                              hsa_code_object_reader_t *Out) {
  ENTRY("hsa_code_object_reader_create_from_memory");
  NEED_INIT();
  if (!Image || !Size || !Out)
    return ST_INVALID_ARGUMENT;
  auto *R = new Reader{static_cast<const uint8_t *>(Image), Size};
  std::lock_guard<std::mutex> G(g().Mtx);
  g().Readers.insert(reinterpret_cast<uint64_t>(R));
  Out->handle = reinterpret_cast<uint64_t>(R);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t H) {
  ENTRY("hsa_code_object_reader_destroy");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  if (!g().Readers.erase(H.handle))
    return ST_INVALID_CODE_OBJECT_READER;
  delete reinterpret_cast<Reader *>(H.handle);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t Profile,
                                              hsa_default_float_rounding_mode_t Mode,
                                              const char *Options, hsa_executable_t *Out) {
  ENTRY("hsa_executable_create_alt");
  NEED_INIT();
  if (!Out)
    return ST_INVALID_ARGUMENT;
  auto *X = new Executable();
  std::lock_guard<std::mutex> G(g().Mtx);
  X->Id = g().NextExe++;
  g().Exes.insert(X);
  Out->handle = reinterpret_cast<uint64_t>(X);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t E, hsa_agent_t A,
                                                          hsa_code_object_reader_t R,
                                                          const char *Options,
                                                          hsa_loaded_code_object_t *Loaded) {
  ENTRY("hsa_executable_load_agent_code_object");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X || X->Frozen || X->Seg)
    return ST_INVALID_EXECUTABLE;
  if (A.handle != GPU_AGENT)
    return ST_INVALID_AGENT;
  Reader *Rd;
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    if (!g().Readers.count(R.handle))
      return ST_INVALID_CODE_OBJECT_READER;
    Rd = reinterpret_cast<Reader *>(R.handle);
  }
  hsa_status_t S = loadElf(*X, *Rd);
  if (S == HSA_STATUS_SUCCESS)
    g().CodeObjectLoaded = true;
  if (S == HSA_STATUS_SUCCESS && Loaded)
    Loaded->handle = reinterpret_cast<uint64_t>(X);
  return S;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t E, const char *Options) {
  ENTRY("hsa_executable_freeze");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  X->Frozen = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_validate(hsa_executable_t E, uint32_t *Result) {
  ENTRY("hsa_executable_validate");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Result)
    return ST_INVALID_ARGUMENT;
  *Result = X->Seg ? 0 : 1;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t E) {
  ENTRY("hsa_executable_destroy");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  kleAtExecutableDestroy(*X);
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    X->Destroyed = true;
  }
  if (X->Seg)
    mem().release(X->Seg);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t E, const char *Name,
                                                      const hsa_agent_t *Agent,
                                                      hsa_executable_symbol_t *Out) {
  ENTRY("hsa_executable_get_symbol_by_name");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Name || !Out)
    return ST_INVALID_ARGUMENT;
  for (Symbol *Y : X->Syms)
    if (Y->Name == Name) {
      Out->handle = reinterpret_cast<uint64_t>(Y);
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t H,
                                                   hsa_executable_symbol_info_t Attr, void *V) {
  ENTRY("hsa_executable_symbol_get_info");
  NEED_INIT();
  Symbol *Y = symOf(H);
  if (!Y)
    return ST_INVALID_ARGUMENT;
  if (!V)
    return ST_INVALID_ARGUMENT;
  switch (Attr) {
  case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
    *static_cast<hsa_symbol_kind_t *>(V) = Y->IsKernel ? HSA_SYMBOL_KIND_KERNEL : HSA_SYMBOL_KIND_VARIABLE;
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
    *static_cast<uint32_t *>(V) = uint32_t(Y->Name.size());
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
    memcpy(V, Y->Name.data(), Y->Name.size());
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS:
    if (Y->IsKernel) break;
    *static_cast<uint64_t *>(V) = Y->Addr;
    return HSA_STATUS_SUCCESS;
  case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
    if (Y->IsKernel) break;
    *static_cast<uint32_t *>(V) = Y->Size;
    return HSA_STATUS_SUCCESS;
  default:
    break;
  }
  if (!Y->IsKernel)
    return ST_INVALID_ARGUMENT;
  switch (Attr) {
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: *static_cast<uint64_t *>(V) = Y->Addr; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->KernargSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->GroupSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: *static_cast<uint32_t *>(V) = Y->K->PrivateSize; break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: *static_cast<bool *>(V) = Y->K->DynStack; break;
  default: return ST_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_iterate_symbols(
    hsa_executable_t E, hsa_status_t (*Cb)(hsa_executable_t, hsa_executable_symbol_t, void *),
    void *D) {
  ENTRY("hsa_executable_iterate_symbols");
  NEED_INIT();
  Executable *X = exeOf(E);
  if (!X)
    return ST_INVALID_EXECUTABLE;
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  for (Symbol *Y : X->Syms) {
    hsa_status_t S = Cb(E, hsa_executable_symbol_t{reinterpret_cast<uint64_t>(Y)}, D);
    if (S != HSA_STATUS_SUCCESS)
      return S;
  }
  return HSA_STATUS_SUCCESS;
}

// Resolved by the plugin, never called: they exist and fail clearly.
EXPORT hsa_status_t hsa_executable_create(hsa_profile_t, hsa_executable_state_t, const char *,
                                          hsa_executable_t *) {
  ENTRY("hsa_executable_create");
  say("hsa_executable_create is not modelled (the plugin uses hsa_executable_create_alt)");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_code_object_deserialize(void *, size_t, const char *, hsa_code_object_t *) {
  ENTRY("hsa_code_object_deserialize");
  say("hsa_code_object_deserialize is not modelled");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_executable_load_code_object(hsa_executable_t, hsa_agent_t,
                                                    hsa_code_object_t, const char *) {
  ENTRY("hsa_executable_load_code_object");
  say("hsa_executable_load_code_object is not modelled");
  return HSA_STATUS_ERROR;
}
EXPORT hsa_status_t hsa_code_object_destroy(hsa_code_object_t) {
  ENTRY("hsa_code_object_destroy");
  say("hsa_code_object_destroy is not modelled");
  return HSA_STATUS_ERROR;
}
