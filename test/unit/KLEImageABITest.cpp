//===- KLEImageABITest.cpp - Unit tests for the per-kernel ABI proof ------===//
//
// Part of kle-offload, a fork of the LLVM Project's offload runtime, under the
// Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// imageHasStockReductionKernel on the small images in fixtures/, each
// built in memory from its YAML description.
//
//===----------------------------------------------------------------------===//

#include "KLEImageABI.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ObjectYAML/yaml2obj.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

#include "gtest/gtest.h"

#include <string>

using namespace llvm;
using namespace llvm::omp::target::plugin;

namespace {

/// The bytes of fixtures/\p Name, converted by yaml2obj.
SmallString<0> image(const char *Name) {
  SmallString<0> Bytes;
  auto Yaml = MemoryBuffer::getFile(std::string(KLE_UNIT_FIXTURES_DIR "/") +
                                    Name);
  if (!Yaml) {
    ADD_FAILURE() << "cannot read fixture " << Name;
    return Bytes;
  }
  raw_svector_ostream OS(Bytes);
  yaml::Input Input((*Yaml)->getBuffer());
  if (!yaml::convertYAML(Input, OS, [&](const Twine &Msg) {
        ADD_FAILURE() << Name << ": " << Msg.str();
      }))
    ADD_FAILURE() << "yaml2obj failed on " << Name;
  return Bytes;
}

bool hasStockReductionKernel(const char *Name) {
  SmallString<0> Bytes = image(Name);
  return imageHasStockReductionKernel(MemoryBufferRef(Bytes.str(), Name));
}

// One image per rule, and the answer the proof must give.
TEST(KLEImageABI, EachFixture) {
  struct {
    const char *File;
    bool HasStockReductionKernel;
  } Cases[] = {
      // The kernel's own text loads the ABI global.
      {"fork-kernel.yaml", false},
      // The load is in a function the kernel calls (-O0).
      {"fork-callee.yaml", false},
      // No path from the reduction kernel to the global.
      {"stock-kernel.yaml", true},
      // No cross-team reduction: the ~0 sentinel, no proof needed.
      {"no-reduction.yaml", false},
      // The environment cannot be read whole: conservative.
      {"truncated-environment.yaml", true},
      // Not nvptx: one DeviceRTL per image, not examined.
      {"amdgpu-stock-kernel.yaml", false},
  };
  for (const auto &Case : Cases)
    EXPECT_EQ(hasStockReductionKernel(Case.File), Case.HasStockReductionKernel)
        << Case.File;
}

TEST(KLEImageABI, NotAnELFFile) {
  EXPECT_FALSE(
      imageHasStockReductionKernel(MemoryBufferRef("not an image", "garbage")));
}

} // namespace
