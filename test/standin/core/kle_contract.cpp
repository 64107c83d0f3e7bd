//===- kle_contract.cpp - The KLE contract both stand-ins check -----------===//
//
// TEST ONLY.  See kle_contract.h.
//
//===----------------------------------------------------------------------===//

#include "kle_contract.h"
#include "core.h"
#include "Shared/KLEAbi.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace standin {

const char *transportName(Transport T) {
  switch (T) {
  case Transport::Any: return "any";
  case Transport::ZeroCopy: return "zerocopy";
  case Transport::Copy: return "copy";
  case Transport::Staged: return "staged";
  case Transport::Resident: return "resident";
  }
  return "any";
}

bool parseTransport(const std::string &Name, Transport &T) {
  for (Transport C : {Transport::Any, Transport::ZeroCopy, Transport::Copy,
                      Transport::Staged, Transport::Resident})
    if (Name == transportName(C)) {
      T = C;
      return true;
    }
  return false;
}

namespace contract {

namespace {
struct CheckInfo {
  const char *Id, *Name;
};
constexpr CheckInfo Info[] = {
    {"A1", "kle-bytes"},  {"A2", "staging-source"}, {"B", "lifetime"},
    {"C", "placement"},   {"W", "arrival"},         {"Z", "counters"},
    {"L", "layout"},      {"D", "reduction-buffer"}, {"E", "kle-present"},
    {"X", "exclusive"},
};

void vreport(bool Op, uint64_t Launch, Check C, const char *Fmt, va_list Ap) {
  char Text[1024];
  vsnprintf(Text, sizeof(Text), Fmt, Ap);
  if (Op)
    opViolation("%s %s: %s", checkId(C), checkName(C), Text);
  else
    violation(Launch, "%s %s: %s", checkId(C), checkName(C), Text);
}

const char *kn(const char *Kernel) { return Kernel ? Kernel : "?"; }
} // namespace

const char *checkId(Check C) { return Info[int(C)].Id; }
const char *checkName(Check C) { return Info[int(C)].Name; }

void report(uint64_t Launch, Check C, const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  vreport(false, Launch, C, Fmt, Ap);
  va_end(Ap);
}

void reportOp(Check C, const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  vreport(true, 0, C, Fmt, Ap);
  va_end(Ap);
}

Transport expected() { return cfg().Expect; }

KleWords decode(const uint8_t *P) {
  KleWords W;
  uint64_t W1;
  memcpy(&W.Word0, P, 8);
  memcpy(&W1, P + 8, 8);
  W.DeviceCounters = W1 & 1;
  W.ReductionBuffer = uintptr_t(W1 & ~uint64_t(1));
  return W;
}

void checkPresent(uint64_t Launch, const char *Kernel, bool Needs, bool HasKle,
                  uintptr_t Dyn) {
  if (Needs && !HasKle)
    report(Launch, Check::E,
           "kernel '%s' has a cross-team reduction but was launched without "
           "a KLE (dyn_ptr %#llx)",
           kn(Kernel), (unsigned long long)Dyn);
}

bool checkPlacement(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                    Place P, const char *KindName) {
  if (P == Place::None || P == Place::Kernarg) {
    report(Launch, Check::C,
           "kernel '%s': dyn_ptr %#llx is not live device-visible memory (%s)",
           kn(Kernel), (unsigned long long)Dyn, KindName);
    return false;
  }
  Transport T = expected();
  bool Ok = T == Transport::Any ||
            (T == Transport::ZeroCopy ? P == Place::HostPinned
                                      : P == Place::Device);
  if (!Ok)
    report(Launch, Check::C,
           "kernel '%s': expected transport %s but dyn_ptr %#llx is %s "
           "memory, not %s",
           kn(Kernel), transportName(T), (unsigned long long)Dyn, KindName,
           T == Transport::ZeroCopy ? "pinned or fine-grained host memory"
                                    : "device memory");
  return Ok;
}

uintptr_t kleAddress(uintptr_t Raw, bool &Flagged) {
  Flagged = Raw & KLEHostDynPtrFlag;
  return Raw & ~uintptr_t(KLEHostDynPtrFlag);
}

void checkHostFlag(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                   bool Flagged, Place P, const char *KindName) {
  bool InHost = P == Place::HostPinned;
  if (Flagged != InHost)
    report(Launch, Check::C,
           "kernel '%s': dyn_ptr's host flag is %s but the KLE at %#llx is "
           "in %s memory",
           kn(Kernel), Flagged ? "set" : "clear", (unsigned long long)Dyn,
           KindName);
}

void checkStagedSource(uint64_t Launch, const char *Kernel, Place P,
                       const char *KindName) {
  if (expected() == Transport::Staged && P != Place::HostPinned)
    report(Launch, Check::C,
           "kernel '%s': expected transport staged but the KLE copy's source "
           "was %s memory, not a pinned staging slot",
           kn(Kernel), KindName);
}

void checkZeroCopySlot(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                       const KleWords &W) {
  if (Dyn % 128)
    report(Launch, Check::C,
           "kernel '%s': zerocopy KLE %#llx is not 128-byte aligned",
           kn(Kernel), (unsigned long long)Dyn);
  if (!W.DeviceCounters && expected() == Transport::ZeroCopy)
    report(Launch, Check::C,
           "kernel '%s': zerocopy KLE %#llx lacks the device-counters tag",
           kn(Kernel), (unsigned long long)Dyn);
}

void checkArrivalEnqueued(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                          bool Enqueued, const char *How) {
  if (!Enqueued)
    report(Launch, Check::W,
           "kernel '%s': no copy into the device KLE %#llx was enqueued %s",
           kn(Kernel), (unsigned long long)Dyn, How);
}

void checkArrivalCompleted(uint64_t Launch, const char *Kernel, uintptr_t Dyn,
                           const char *What, bool Completed) {
  if (!Completed)
    report(Launch, Check::W,
           "kernel '%s': the copy (%s) that delivers the device KLE %#llx had "
           "not completed when the kernel started",
           kn(Kernel), What, (unsigned long long)Dyn);
}

bool checkUnchanged(uint64_t Launch, const char *Kernel, const char *Phase,
                    uintptr_t Dyn, const char *KindName,
                    const uint8_t *Expected, const uint8_t *Now, size_t N) {
  if (!memcmp(Expected, Now, N))
    return true;
  report(Launch, Check::A1,
         "kernel '%s' (kernel %s): KLE bytes at dyn_ptr %#llx (%s) changed "
         "after the launch: expected %s, device reads %s",
         kn(Kernel), Phase, (unsigned long long)Dyn, KindName,
         hex(Expected, N).c_str(), hex(Now, N).c_str());
  return false;
}

void checkCounters(uint64_t Launch, const char *Kernel, const KleWords &W,
                   Place P, const char *KindName, uint64_t Value) {
  if (!W.DeviceCounters) {
    if (W.Word0)
      report(Launch, Check::Z,
             "kernel '%s': in-KLE reduction counters read %#llx at kernel "
             "start (must be zero)",
             kn(Kernel), (unsigned long long)W.Word0);
    return;
  }
  if (P == Place::None)
    report(Launch, Check::Z,
           "kernel '%s': KLE counters %#llx are not 8 bytes of live device "
           "memory",
           kn(Kernel), (unsigned long long)W.Word0);
  else if (P != Place::Device)
    report(Launch, Check::Z,
           "kernel '%s': KLE counters %#llx are %s memory; device atomics "
           "would reach it (must be device memory)",
           kn(Kernel), (unsigned long long)W.Word0, KindName);
  else if (Value)
    report(Launch, Check::Z,
           "kernel '%s': KLE counters %#llx read %#llx at kernel start (must "
           "be zero)",
           kn(Kernel), (unsigned long long)W.Word0, (unsigned long long)Value);
}

void checkResidentLayout(uint64_t Launch, const char *Kernel,
                         const KleWords &W) {
  if (expected() == Transport::Resident && (W.DeviceCounters || W.Word0))
    report(Launch, Check::L,
           "kernel '%s': expected transport resident but the KLE is not "
           "upstream's layout with zero counters (word0 %#llx, %s)",
           kn(Kernel), (unsigned long long)W.Word0,
           W.DeviceCounters ? "tagged" : "untagged");
}

void checkReductionBuffer(uint64_t Launch, const char *Kernel, uintptr_t Buf,
                          size_t Need, bool Ok) {
  if (!Ok)
    report(Launch, Check::D,
           "kernel '%s': KLE.ReductionBuffer %#llx is not %zu bytes of live "
           "device memory",
           kn(Kernel), (unsigned long long)Buf, Need);
}

void reportFreedWhilePending(uint64_t Launch, const char *What, const char *By,
                             const char *Where) {
  report(Launch, Check::B, "%s released by %s while the launch was pending%s",
         What, By, Where);
}

void reportFreedAt(uint64_t Launch, const char *Phase, const char *What) {
  report(Launch, Check::B, "at kernel %s: %s was released", Phase, What);
}

void reportOpOnFreed(uint64_t Op, const char *Text) {
  reportOp(Check::B, "copy op #%llu %s", (unsigned long long)Op, Text);
}

SourceWatch watchSource(const uint8_t *Src, size_t N) {
  SourceWatch W;
  W.Bytes.assign(Src, Src + N);
  return W;
}

bool sourceChanged(const SourceWatch &W, const uint8_t *Now) {
  return W.watched() && memcmp(W.Bytes.data(), Now, W.Bytes.size()) != 0;
}

void InFlight::claim(uint64_t Launch, uintptr_t Addr, const char *What) {
  auto It = Holder.find(Addr);
  if (It != Holder.end() && It->second != Launch)
    report(Launch, Check::X, "%s %#llx is used by in-flight launch #%llu",
           What, (unsigned long long)Addr, (unsigned long long)It->second);
  Holder[Addr] = Launch;
}

void InFlight::release(uint64_t Launch, uintptr_t Addr) {
  auto It = Holder.find(Addr);
  if (It != Holder.end() && It->second == Launch)
    Holder.erase(It);
}

void InFlight::forget(uint64_t Launch) {
  for (auto It = Holder.begin(); It != Holder.end();)
    It = It->second == Launch ? Holder.erase(It) : std::next(It);
}

} // namespace contract
} // namespace standin
