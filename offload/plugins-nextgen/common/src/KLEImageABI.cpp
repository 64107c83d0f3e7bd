//===-- KLEImageABI.cpp - Which kernels of an image read the fork's KLE ---===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KLEImageABI.h"

#include "Shared/Environment.h"
#include "Shared/KLEAbi.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"

#include <cstring>
#include <optional>

using namespace llvm;

namespace {
/// The text-section call graph of an image and the sections whose code loads
/// the ABI global, keyed by section index: local functions of different
/// units (each unit's internal DeviceRTL copy) may share a name, never a
/// section.
struct CallGraphTy {
  DenseMap<uint64_t, SmallVector<uint64_t, 4>> Callees;
  DenseSet<uint64_t> LoadsGlobal;

  explicit CallGraphTy(const object::ELF64LEObjectFile &Obj) {
    for (const object::SectionRef &RelSec : Obj.sections()) {
      std::optional<object::section_iterator> Target =
          expectedToOptional(RelSec.getRelocatedSection());
      if (!Target || *Target == Obj.section_end() || !(*Target)->isText())
        continue;
      const uint64_t From = (*Target)->getIndex();
      for (const object::RelocationRef &Reloc : RelSec.relocations()) {
        object::symbol_iterator Sym = Reloc.getSymbol();
        if (Sym == Obj.symbol_end())
          continue;
        std::optional<StringRef> Name = expectedToOptional(Sym->getName());
        std::optional<object::section_iterator> SymSec =
            expectedToOptional(Sym->getSection());
        if (!Name || !SymSec)
          continue;
        if (*Name == KLE_ABI_VERSION_SYMBOL)
          LoadsGlobal.insert(From);
        else if (*SymSec != Obj.section_end() && (*SymSec)->isText())
          Callees[From].push_back((*SymSec)->getIndex());
      }
    }
  }

  /// Does the code of text section \p Start, or of a function it calls
  /// (without -O2 the DeviceRTL's initTeam is not inlined into the
  /// kernel), load the ABI global?
  bool reachesGlobal(uint64_t Start) const {
    SmallVector<uint64_t, 16> Work = {Start};
    DenseSet<uint64_t> Seen = {Start};
    while (!Work.empty()) {
      uint64_t Sec = Work.pop_back_val();
      if (LoadsGlobal.contains(Sec))
        return true;
      for (uint64_t Next : Callees.lookup(Sec))
        if (Seen.insert(Next).second)
          Work.push_back(Next);
    }
    return false;
  }
};

/// Kernel name -> the index of its text section.
StringMap<uint64_t> kernelTextSections(const object::ELF64LEObjectFile &Obj) {
  StringMap<uint64_t> KernelText;
  for (const object::ELFSymbolRef &Sym : Obj.symbols()) {
    std::optional<StringRef> Name = expectedToOptional(Sym.getName());
    std::optional<object::SymbolRef::Type> Type =
        expectedToOptional(Sym.getType());
    std::optional<object::section_iterator> Sec =
        expectedToOptional(Sym.getSection());
    if (Name && Type && Sec && *Type == object::SymbolRef::ST_Function &&
        Name->starts_with("__omp_offloading_") && *Sec != Obj.section_end())
      KernelText[*Name] = (*Sec)->getIndex();
  }
  return KernelText;
}

/// The kernel environment that \p Sym names, if the image holds all of it.
std::optional<KernelEnvironmentTy>
readKernelEnvironment(const object::ELF64LEObjectFile &Obj,
                      const object::ELFSymbolRef &Sym) {
  std::optional<object::section_iterator> Sec =
      expectedToOptional(Sym.getSection());
  std::optional<uint64_t> Value = expectedToOptional(Sym.getValue());
  if (!Sec || !Value || *Sec == Obj.section_end())
    return std::nullopt;
  std::optional<StringRef> Contents = expectedToOptional((*Sec)->getContents());
  if (!Contents)
    return std::nullopt;
  const uint64_t Offset = *Value - (*Sec)->getAddress();
  if (Offset > Contents->size() ||
      Contents->size() - Offset < sizeof(KernelEnvironmentTy))
    return std::nullopt;
  KernelEnvironmentTy Env;
  std::memcpy(&Env, Contents->data() + Offset, sizeof(Env));
  return Env;
}
} // namespace

bool llvm::omp::target::plugin::imageHasStockReductionKernel(
    MemoryBufferRef Image) {
  std::optional<object::ELF64LEObjectFile> Obj =
      expectedToOptional(object::ELF64LEObjectFile::create(Image));
  if (!Obj || Obj->getELFFile().getHeader().e_machine != ELF::EM_CUDA)
    return false;

  const CallGraphTy Graph(*Obj);
  const StringMap<uint64_t> KernelText = kernelTextSections(*Obj);
  constexpr StringRef Suffix = "_kernel_environment";
  for (const object::ELFSymbolRef &Sym : Obj->symbols()) {
    std::optional<StringRef> Name = expectedToOptional(Sym.getName());
    if (!Name)
      return true;
    StringRef Kernel = *Name;
    if (!Kernel.starts_with("__omp_offloading_") ||
        !Kernel.consume_back(Suffix))
      continue;
    std::optional<KernelEnvironmentTy> Env = readKernelEnvironment(*Obj, Sym);
    if (!Env)
      return true;
    if (!Env->Configuration.ReductionDataSize ||
        !Env->Configuration.ReductionBufferLength)
      continue; // gets the ~0 sentinel under every transport
    auto Text = KernelText.find(Kernel);
    if (Text == KernelText.end() || !Graph.reachesGlobal(Text->second))
      return true;
  }
  return false;
}
