//===-- kle-bench.cpp - Kernel launch environment latency benchmarks -----===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Launch-latency benchmarks for the KLE transports (Google Benchmark). The
// transport is chosen per process with LIBOMPTARGET_KLE_TRANSPORT, or switched
// launch by launch with --interleave (what `bench/klebench.py compare` runs).
//
//   SyncReduction/teams:N   one target region with a cross-team reduction
//                           (the launches that carry a KLE), launched and
//                           completed per iteration: launch-to-completion
//                           latency, in seconds per launch
//   SyncBaseline/teams:N    the same kernel shape, team count and 8-byte
//                           tofrom map, without a reduction: no KLE at all
//                           (the baseline the transports are compared with)
//   Pipelined{Reduction,Baseline}/launches:N
//                           N nowait launches then one taskwait; the time is
//                           reported per launch (items = launches)
//   Kernel{Reduction,Baseline}/teams:N
//                           the kernel's own run time on the GPU (CUDA events
//                           around cuLaunchKernel, manual time), registered
//                           only when bench/kernel-timer's libcuda.so is
//                           loaded (klebench.py compare --kernel-times): exposes
//                           any slowdown from reading the KLE over the link
//   ReductionAfterWork/teams:N/work_ns:W
//                           the kernel time of a reduction kernel whose teams
//                           each spin for W ns (SM clock cycles at
//                           KLE_BENCH_SM_GHZ, default 1.98, the H200's
//                           maximum SM clock) before the reduction: whether
//                           a team's work hides the KLE read (issue 19);
//                           registered only with the kernel timer, like
//                           Kernel*; run by `klebench.py compare --ab`
// SyncReduction also runs with 1, 4 and 16 host threads launching at once.
// KLE_BENCH_DEVICE selects the device (default: the default device; "gpu":
// the first device that is not the host's);
// --list-devices prints "<number> <uid>" for each offload device;
// --launches N runs N synchronous reduction launches and exits;
// --interleave zerocopy,resident,staged,copy [--cycles N] [--warmup N]
// [--teams T,...] [--batch N] [--waits W,...] [--floor] switches the
// transport between launches of this one process (kle-offload's
// benchmark-only hook, KLEBenchSwitch.h) and prints, as JSON, per-launch
// samples of each transport and of the no-KLE baseline taken in the
// balanced order ABCDE EDCBA ... (LaunchLatency per launch,
// PipelinedReduction per batch of N nowait launches), each with the
// process's CPU time (getrusage); --waits poll,block runs each transport and
// the baseline under each of the CUDA plugin's waits (__kle_bench_set_wait),
// --floor adds the same work done through the CUDA driver directly
// (kle-floor.h) as one more unit; `bench/klebench.py compare` turns them
// into paired differences with CIs.
//
//===----------------------------------------------------------------------===//

#include "kle-floor.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

/// \p S as a decimal integer in [Min, Max]: digits only (no sign, blank or
/// suffix), else std::nullopt.
std::optional<long> parseCount(const char *S, long Min, long Max) {
  if (!S || !*S || std::strspn(S, "0123456789") != std::strlen(S) ||
      std::strlen(S) > 18)
    return std::nullopt;
  long N = std::strtol(S, nullptr, 10);
  if (N < Min || N > Max)
    return std::nullopt;
  return N;
}

/// The OpenMP device to benchmark: KLE_BENCH_DEVICE (0 .. number of devices
/// - 1), else the default device. An invalid value ends the program (exit
/// status 2) with one line naming the variable.
int benchDevice() {
  static const int Device = [] {
    const char *Env = std::getenv("KLE_BENCH_DEVICE");
    if (!Env || !*Env)
      return omp_get_default_device();
    if (!std::strcmp(Env, "gpu")) { // the first device that is not the host's
      for (int D = 0; D < omp_get_num_devices(); ++D) {
        const char *Uid = omp_get_uid_from_device(D);
        if (Uid && std::strncmp(Uid, "x86_64", 6))
          return D;
      }
      std::fprintf(stderr,
                   "kle-bench: error: KLE_BENCH_DEVICE=gpu: no offload "
                   "device other than the host's (see --list-devices)\n");
      std::exit(2);
    }
    std::optional<long> D = parseCount(Env, 0, omp_get_num_devices() - 1);
    if (!D) {
      std::fprintf(stderr,
                   "kle-bench: error: KLE_BENCH_DEVICE=\"%s\" is not an "
                   "offload device number (0 to %d; see --list-devices)\n",
                   Env, omp_get_num_devices() - 1);
      std::exit(2);
    }
    return static_cast<int>(*D);
  }();
  return Device;
}

constexpr int LoopTrip = 1024;

[[gnu::noinline]] long reductionLaunch(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < LoopTrip; ++I)
    S += I;
  return S;
}

[[gnu::noinline]] long baselineLaunch(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    map(tofrom : S)
  for (int I = 0; I < LoopTrip; ++I)
    if (I == 0)
      S = 1;
  return S;
}

void SyncReduction(benchmark::State &State) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  reductionLaunch(Dev, Teams); // device and image initialised outside timing
  for (auto _ : State)
    benchmark::DoNotOptimize(reductionLaunch(Dev, Teams));
  State.SetItemsProcessed(State.iterations());
}

void SyncBaseline(benchmark::State &State) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  baselineLaunch(Dev, Teams);
  for (auto _ : State)
    benchmark::DoNotOptimize(baselineLaunch(Dev, Teams));
  State.SetItemsProcessed(State.iterations());
}

/// One pipelined batch: \p N nowait launches (8 teams), then one taskwait.
void pipelinedBatch(int Dev, bool Reduction, int N) {
  long Out[64] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int K = 0; K < N; ++K) {
      long *P = &Out[K % 64];
      if (Reduction) {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    reduction(+ : P[0 : 1]) map(tofrom : P[0 : 1]) nowait
        for (int I = 0; I < LoopTrip; ++I)
          P[0] += 1;
      } else {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)      \
    map(tofrom                                                                 \
        : P [0:1]) nowait
        for (int I = 0; I < LoopTrip; ++I)
          if (I == 0)
            P[0] += 1;
      }
      if (K % 64 == 63) { // at most 64 in flight: disjoint variables
#pragma omp taskwait
      }
    }
#pragma omp taskwait
  }
  benchmark::DoNotOptimize(Out);
}

template <bool Reduction> void Pipelined(benchmark::State &State) {
  const int Dev = benchDevice(), N = static_cast<int>(State.range(0));
  for (auto _ : State)
    pipelinedBatch(Dev, Reduction, N);
  State.SetItemsProcessed(State.iterations() * N);
}

using CollectFnTy = size_t (*)(double *, size_t, int);

// bench/kernel-timer's collector, if its libcuda.so is the one the CUDA
// plugin loaded (call after the devices were initialised).
CollectFnTy kernelTimer() {
  if (void *F = dlsym(RTLD_DEFAULT, "kle_kernel_timer_collect"))
    return reinterpret_cast<CollectFnTy>(F);
  if (void *H = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD))
    return reinterpret_cast<CollectFnTy>(dlsym(H, "kle_kernel_timer_collect"));
  return nullptr;
}

/// Kernel-only timing of \p Launch (one target region per iteration): drains
/// the timer after a warm-up launch, then sets each iteration's time to the
/// sum of the kernels the timer recorded for it.
template <typename LaunchFnTy>
void timeKernels(benchmark::State &State, CollectFnTy Collect,
                 LaunchFnTy Launch) {
  double Ms[16];
  Launch();
  while (Collect(Ms, 16, 1) == 16) {
  }
  for (auto _ : State) {
    benchmark::DoNotOptimize(Launch());
    // One kernel per target region: its time, summed in case of more.
    double Sum = 0;
    size_t N = Collect(Ms, 16, /*Wait=*/1);
    for (size_t I = 0; I < N; ++I)
      Sum += Ms[I];
    if (!N) {
      State.SkipWithError("the kernel timer returned no time for a launch");
      break;
    }
    State.SetIterationTime(Sum / 1e3);
  }
  State.SetItemsProcessed(State.iterations());
}

template <bool Reduction>
void KernelTime(benchmark::State &State, CollectFnTy Collect) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  timeKernels(State, Collect, [&] {
    return (Reduction ? reductionLaunch : baselineLaunch)(Dev, Teams);
  });
}

/// SM clock in GHz for ReductionAfterWork's work_ns: KLE_BENCH_SM_GHZ (a number in
/// (0, 10]), default 1.98. An invalid value ends the program (status 2).
double smGHz() {
  static const double GHz = [] {
    const char *Env = std::getenv("KLE_BENCH_SM_GHZ");
    if (!Env || !*Env)
      return 1.98;
    char *End;
    double V = std::strtod(Env, &End);
    if (*End || !(V > 0 && V <= 10)) {
      std::fprintf(stderr, "kle-bench: error: KLE_BENCH_SM_GHZ=\"%s\" is not "
                           "an SM clock in GHz (for example 1.98)\n", Env);
      std::exit(2);
    }
    return V;
  }();
  return GHz;
}

/// One iteration per team (dist_schedule(static, 1)): the thread that runs it
/// spins for \p Cycles clock cycles, then adds to the cross-team reduction,
/// so each team's work before its reduction is at least \p Cycles.
[[gnu::noinline]] long workReductionLaunch(int Dev, int Teams, long Cycles) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    dist_schedule(static, 1) reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < Teams; ++I) {
    const long T0 = static_cast<long>(__builtin_readcyclecounter());
    while (static_cast<long>(__builtin_readcyclecounter()) - T0 < Cycles) {
    }
    S += I;
  }
  return S;
}

void ReductionAfterWork(benchmark::State &State, CollectFnTy Collect) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  const long Cycles = static_cast<long>(State.range(1) * smGHz());
  timeKernels(State, Collect,
              [&] { return workReductionLaunch(Dev, Teams, Cycles); });
}

void workArgs(benchmark::internal::Benchmark *B) {
  B->ArgNames({"teams", "work_ns"});
  for (int Teams : {1, 132, 16384})
    for (int WorkNs : {0, 2000, 10000})
      B->Args({Teams, WorkNs});
}

// --- Interleaved transports (--interleave): see the header. -------------

using SetTransportFnTy = int (*)(const char *, char *, size_t);
using PathNsFnTy = uint64_t (*)();
using SetWaitFnTy = int (*)(long long);

/// The benchmark-only hooks of kle-offload's libomptarget
/// (plugins-nextgen/common/include/KLEBenchSwitch.h), or exit status 2 with
/// one line when the runtime lacks them (a stock libomptarget). SetWait
/// (the CUDA plugin's wait: busy-wait up to N us before blocking, -1 = the
/// environment's) is nullptr in a runtime without it.
struct BenchHooksTy {
  SetTransportFnTy SetTransport;
  PathNsFnTy PathNs;
  SetWaitFnTy SetWait;
};
BenchHooksTy benchHooks() {
  auto *Set = reinterpret_cast<SetTransportFnTy>(
      dlsym(RTLD_DEFAULT, "__kle_bench_set_transport"));
  auto *Path = reinterpret_cast<PathNsFnTy>(
      dlsym(RTLD_DEFAULT, "__kle_bench_kle_path_ns"));
  if (!Set || !Path) {
    std::fprintf(stderr, "kle-bench: error: this libomptarget has no KLE "
                         "transport switch (__kle_bench_set_transport): "
                         "--interleave needs kle-offload's runtime\n");
    std::exit(2);
  }
  return {Set, Path,
          reinterpret_cast<SetWaitFnTy>(
              dlsym(RTLD_DEFAULT, "__kle_bench_set_wait"))};
}

/// The waits --waits can name, with the busy-wait bound (us) each sets.
struct WaitTy {
  const char *Name;
  long long BusyWaitUs;
};
constexpr WaitTy Waits[] = {
    {"poll", 2000000}, // poll up to 2 s, as the AMDGPU plugin's default
    {"block", 0},      // block at once (the driver's blocking wait)
    {"default", -1},   // whatever the environment and the default say
};

/// Sets the CUDA plugin's wait; a refusal ends the program (exit status 2).
void switchWait(const BenchHooksTy &H, long long Us) {
  if (int Rc = H.SetWait(Us)) {
    std::fprintf(stderr,
                 "kle-bench: error: switching the CUDA plugin's wait to "
                 "%lld us failed (%d)\n",
                 Us, Rc);
    std::exit(2);
  }
}

/// Selects \p Name ("" = each device's own transport) for the next launches;
/// a refusal ends the program (exit status 2) with the runtime's reason.
void switchTransport(const BenchHooksTy &H, const char *Name) {
  char Err[256] = "";
  if (int Rc = H.SetTransport(Name, Err, sizeof(Err))) {
    std::fprintf(stderr,
                 "kle-bench: error: switching the KLE transport to "
                 "\"%s\" failed (%d): %s\n",
                 Name, Rc, Err);
    std::exit(2);
  }
}

/// The transports named by --interleave's comma-separated \p List (each of
/// zerocopy, resident, staged, copy, at most once), or exit status 2 with
/// one line naming the bad item.
std::vector<std::string> parseInterleave(const char *List) {
  static const char *const Valid[] = {"zerocopy", "resident", "staged", "copy"};
  std::vector<std::string> Out;
  std::string S(List), Item;
  for (size_t Pos = 0;; ++Pos) {
    if (Pos < S.size() && S[Pos] != ',') {
      Item += S[Pos];
      continue;
    }
    bool Known = false;
    for (const char *V : Valid)
      Known |= Item == V;
    if (!Known) {
      std::fprintf(stderr,
                   "kle-bench: error: --interleave: unknown transport "
                   "\"%s\" in \"%s\" (valid: zerocopy, resident, "
                   "staged, copy, comma-separated)\n",
                   Item.c_str(), List);
      std::exit(2);
    }
    for (const std::string &O : Out)
      if (O == Item) {
        std::fprintf(stderr,
                     "kle-bench: error: --interleave: transport \"%s\" "
                     "named twice in \"%s\"\n",
                     Item.c_str(), List);
        std::exit(2);
      }
    Out.push_back(Item);
    Item.clear();
    if (Pos >= S.size())
      break;
  }
  return Out;
}

/// bench/kernel-timer's device-span collector (kle_kernel_timer_collect_spans,
/// same contract as kle_kernel_timer_collect), if its libcuda.so is loaded.
CollectFnTy kernelSpans() {
  if (void *F = dlsym(RTLD_DEFAULT, "kle_kernel_timer_collect_spans"))
    return reinterpret_cast<CollectFnTy>(F);
  if (void *H = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD))
    return reinterpret_cast<CollectFnTy>(
        dlsym(H, "kle_kernel_timer_collect_spans"));
  return nullptr;
}

/// Waits for and sums (ms) every time \p Collect holds; with \p Also, drops
/// what that one holds too (before the measured launches).
double drainTimer(CollectFnTy Collect, CollectFnTy Also) {
  double Ms[64], Sum = 0;
  size_t N;
  while ((N = Collect(Ms, 64, /*Wait=*/1)) != 0)
    for (size_t I = 0; I < N; ++I)
      Sum += Ms[I];
  if (Also)
    drainTimer(Also, nullptr);
  return Sum;
}

/// One unit of the interleaved rotation: a transport (or the no-KLE
/// baseline) under one of the CUDA plugin's waits, or the floor.
struct UnitTy {
  std::string Name;      // "resident", "resident/poll", "baseline", "floor"
  std::string Transport; // "" for the baseline and the floor
  bool Floor = false;
  bool HasWait = false;
  long long WaitUs = -1;
};

/// --interleave: the units take turns launch by launch (synchronous) or
/// batch by batch (pipelined), in the balanced order U1..Un, Un..U1, ... ;
/// each cycle is one pass over the units. The units: each transport and the
/// no-KLE baseline (with \p WaitList, each under each wait, named "T/W"),
/// then, with \p WithFloor, the floor (kle-floor.h). Prints JSON: per
/// benchmark, one sample [cycle, unit, ns, path_ns, cpu_ns] per launch
/// (pipelined: per batch, per launch), where path_ns is the host time the
/// launch spent in the KLE path (LIBOMPTARGET_KLE_STATS=1, set by main) and
/// cpu_ns the process's CPU time (every thread) over the launch, and, per
/// unit, the path ns of the warm-up cycles. A floor that cannot be opened,
/// or fails, ends the program (exit status 2) with one line.
int interleave(const std::vector<std::string> &Transports,
               const std::vector<long> &Teams, long Cycles, long Warmup,
               long Batch, std::vector<WaitTy> WaitList, bool WithFloor) {
  const BenchHooksTy H = benchHooks();
  const int Dev = benchDevice();
  using Clock = std::chrono::steady_clock;
  if (!WaitList.empty() && !H.SetWait) {
    std::fprintf(stderr, "kle-bench: note: this libomptarget has no wait "
                         "switch (__kle_bench_set_wait): the --waits "
                         "variants are skipped\n");
    WaitList.clear();
  }
  // With bench/kernel-timer loaded: each sample also gets the kernels' GPU
  // time and the device span of the target region (us, per launch).
  const CollectFnTy Kernels = kernelTimer();
  const CollectFnTy Spans = kernelSpans();
  // Initialise the device before the first switch (the runtime checks only
  // initialised devices) with a kernel that has no KLE, so that the pool's
  // growth falls into the first transport's warm-up (its one-time cost).
  baselineLaunch(Dev, 1);
  std::unique_ptr<kle::FloorTy> Floor;
  std::string Err;
  auto FloorFailed = [&](const char *What) {
    std::fprintf(stderr, "kle-bench: error: the floor (--floor) %s: %s\n",
                 What, Err.c_str());
    std::exit(2);
  };
  if (WithFloor) {
    int Ordinal = kle::cudaOrdinal(Dev, omp_get_uid_from_device);
    if (Ordinal < 0) {
      const char *Uid = omp_get_uid_from_device(Dev);
      Err = "device " + std::to_string(Dev) + " (" + (Uid ? Uid : "?") +
            ") is not a CUDA device";
      FloorFailed("cannot run");
    }
    Floor = kle::FloorTy::open(Ordinal, LoopTrip, Err);
    if (!Floor)
      FloorFailed("cannot be opened");
  }
  std::vector<UnitTy> Units;
  std::vector<std::string> Names = Transports;
  Names.push_back("baseline");
  for (const std::string &T : Names) {
    const std::string Tr = T == "baseline" ? "" : T;
    if (WaitList.empty())
      Units.push_back({T, Tr});
    for (const WaitTy &W : WaitList)
      Units.push_back({T + "/" + W.Name, Tr, false, true, W.BusyWaitUs});
  }
  if (Floor)
    Units.push_back({"floor", "", true});
  const size_t NU = Units.size();
  std::printf("{\"method\": \"interleaved\", \"units\": [");
  for (size_t U = 0; U < NU; ++U)
    std::printf("%s\"%s\"", U ? ", " : "", Units[U].Name.c_str());
  std::printf("], \"waits\": [");
  for (size_t W = 0; W < WaitList.size(); ++W)
    std::printf("%s\"%s\"", W ? ", " : "", WaitList[W].Name);
  std::printf("], \"cycles\": %ld, \"warmup\": %ld, \"fields\": [\"cycle\", "
              "\"unit\", \"ns\", \"path_ns\", \"cpu_ns\"%s], "
              "\"benchmarks\": {",
              Cycles, Warmup,
              Kernels && Spans ? ", \"kernel_us\", \"span_us\"" : "");
  if (Kernels && Spans)
    drainTimer(Kernels, Spans);
  struct BenchTy {
    std::string Name;
    bool Pipelined;
    int Teams;
  };
  std::vector<BenchTy> Benches;
  for (long T : Teams)
    Benches.push_back({"LaunchLatency/teams:" + std::to_string(T), false,
                       static_cast<int>(T)});
  if (Batch)
    Benches.push_back(
        {"PipelinedReduction/launches:" + std::to_string(Batch), true, 8});
  for (size_t B = 0; B < Benches.size(); ++B) {
    const BenchTy &Bench = Benches[B];
    std::vector<uint64_t> WarmPath(NU, 0);
    std::vector<long> WarmLaunches(NU, 0);
    std::string Samples;
    Samples.reserve(static_cast<size_t>(Cycles) * NU * 32);
    for (long C = 0; C < Warmup + Cycles; ++C) {
      for (size_t I = 0; I < NU; ++I) {
        const size_t U = C % 2 == 0 ? I : NU - 1 - I;
        const UnitTy &Unit = Units[U];
        const bool Baseline = Unit.Transport.empty();
        if (!Baseline)
          switchTransport(H, Unit.Transport.c_str());
        if (Unit.HasWait)
          switchWait(H, Unit.WaitUs);
        const uint64_t P0 = H.PathNs();
        const uint64_t Cpu0 = kle::processCpuNs();
        auto T0 = Clock::now();
        if (Unit.Floor) {
          if (!(Bench.Pipelined
                    ? Floor->batch(static_cast<int>(Batch), Bench.Teams, Err)
                    : Floor->region(Bench.Teams, Err)))
            FloorFailed("failed");
        } else if (Bench.Pipelined)
          pipelinedBatch(Dev, !Baseline, static_cast<int>(Batch));
        else
          benchmark::DoNotOptimize(Baseline
                                       ? baselineLaunch(Dev, Bench.Teams)
                                       : reductionLaunch(Dev, Bench.Teams));
        auto T1 = Clock::now();
        const uint64_t Cpu1 = kle::processCpuNs();
        const uint64_t P1 = H.PathNs();
        double KernelMs = 0, SpanMs = 0;
        if (Kernels && Spans) {
          KernelMs = drainTimer(Kernels, nullptr);
          SpanMs = drainTimer(Spans, nullptr);
        }
        long long Ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(T1 - T0)
                .count();
        const long PerBatch = Bench.Pipelined ? Batch : 1;
        if (C < Warmup) {
          WarmPath[U] += P1 - P0;
          WarmLaunches[U] += PerBatch;
          continue;
        }
        char Buf[192];
        int L = std::snprintf(
            Buf, sizeof(Buf), "%s[%ld,%zu,%.1f,%.1f,%.1f",
            Samples.empty() ? "" : ",", C - Warmup, U, double(Ns) / PerBatch,
            double(P1 - P0) / PerBatch, double(Cpu1 - Cpu0) / PerBatch);
        if (Kernels && Spans)
          std::snprintf(Buf + L, sizeof(Buf) - L, ",%.3f,%.3f",
                        KernelMs * 1e3 / PerBatch, SpanMs * 1e3 / PerBatch);
        Samples += Buf;
        Samples += "]";
      }
    }
    switchTransport(H, "");
    if (!WaitList.empty())
      switchWait(H, -1);
    std::printf(
        "%s\"%s\": {\"launches_per_sample\": %ld, \"warmup_path_ns\": [",
        B ? ", " : "", Bench.Name.c_str(), Bench.Pipelined ? Batch : 1L);
    for (size_t U = 0; U < NU; ++U)
      std::printf("%s%llu", U ? "," : "", (unsigned long long)WarmPath[U]);
    std::printf("], \"warmup_launches\": [");
    for (size_t U = 0; U < NU; ++U)
      std::printf("%s%ld", U ? "," : "", WarmLaunches[U]);
    std::printf("], \"samples\": [%s]}", Samples.c_str());
  }
  std::printf("}}\n");
  return 0;
}

/// --switch-in-flight (for the tests): one launch under the default
/// transport, then one nowait reduction launch under resident; while it is in
/// flight a switch must be refused, and after the taskwait a switch to copy
/// and one more launch must succeed. Exit status 0 only
/// if both happened.
int switchInFlight() {
  const BenchHooksTy H = benchHooks();
  const int Dev = benchDevice();
  reductionLaunch(Dev, 1); // initialises the device, default transport
  switchTransport(H, "resident");
  long S = 0;
  int Refused = 0;
  char Err[256] = "";
#pragma omp parallel num_threads(1)
#pragma omp single
  {
#pragma omp target teams distribute parallel for device(Dev) num_teams(1)     \
    reduction(+ : S) map(tofrom : S) nowait
    for (int I = 0; I < LoopTrip; ++I)
      S += I;
    // The helper thread takes the slot when it launches: poll (asking for
    // resident, which changes nothing if granted) for up to 20 s, then ask
    // for copy while the launch is still in flight.
    auto End = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!Refused && std::chrono::steady_clock::now() < End)
      Refused = H.SetTransport("resident", Err, sizeof(Err));
    if (Refused)
      Refused = H.SetTransport("copy", Err, sizeof(Err));
#pragma omp taskwait
  }
  if (Refused != 2) {
    std::printf("switch in flight: %s (%d) %s\n",
                Refused ? "refused for another reason" : "never refused",
                Refused, Err);
    return 1;
  }
  std::printf("switch in flight: refused: %s\n", Err);
  int Rc = H.SetTransport("copy", Err, sizeof(Err));
  std::printf("switch after the taskwait: %s%s\n", Rc ? "refused: " : "ok",
              Rc ? Err : "");
  if (Rc)
    return 1;
  std::printf("checksum %ld\n", S + reductionLaunch(Dev, 1));
  return 0;
}

/// The waits named by --waits' comma-separated \p List (each of poll,
/// block, default, at most once), or exit status 2 with one line.
std::vector<WaitTy> parseWaits(const char *List) {
  std::vector<WaitTy> Out;
  std::string S(List);
  for (size_t P = 0; P <= S.size();) {
    size_t E = S.find(',', P);
    if (E == std::string::npos)
      E = S.size();
    std::string Item = S.substr(P, E - P);
    const WaitTy *Found = nullptr;
    for (const WaitTy &W : Waits)
      if (Item == W.Name)
        Found = &W;
    if (!Found) {
      std::fprintf(stderr,
                   "kle-bench: error: --waits: unknown wait \"%s\" in "
                   "\"%s\" (valid: poll, block, default, comma-separated)\n",
                   Item.c_str(), List);
      std::exit(2);
    }
    for (const WaitTy &W : Out)
      if (Item == W.Name) {
        std::fprintf(stderr,
                     "kle-bench: error: --waits: wait \"%s\" named twice "
                     "in \"%s\"\n",
                     Item.c_str(), List);
        std::exit(2);
      }
    Out.push_back(*Found);
    P = E + 1;
  }
  return Out;
}

/// Parses --interleave's options (every other argument is an error) and runs
/// interleave().
int interleaveMain(int argc, char **argv) {
  const char *List = nullptr;
  long Cycles = 200, Warmup = 20, Batch = 64;
  std::vector<long> Teams = {1};
  std::vector<WaitTy> WaitList;
  bool WithFloor = false;
  auto Num = [&](const char *Opt, const char *V, long Min, long Max) {
    std::optional<long> N = parseCount(V, Min, Max);
    if (!N) {
      std::fprintf(stderr,
                   "kle-bench: error: %s wants a number from %ld to "
                   "%ld, not \"%s\"\n",
                   Opt, Min, Max, V ? V : "");
      std::exit(2);
    }
    return *N;
  };
  for (int I = 1; I < argc; ++I) {
    const char *A = argv[I], *V = I + 1 < argc ? argv[I + 1] : nullptr;
    if (!std::strcmp(A, "--floor")) {
      WithFloor = true;
      continue; // no value
    }
    if (!std::strcmp(A, "--interleave") && V)
      List = V;
    else if (!std::strcmp(A, "--waits") && V)
      WaitList = parseWaits(V);
    else if (!std::strcmp(A, "--cycles") && V)
      Cycles = Num(A, V, 2, 10000000);
    else if (!std::strcmp(A, "--warmup") && V)
      Warmup = Num(A, V, 0, 10000000);
    else if (!std::strcmp(A, "--batch") && V)
      Batch = Num(A, V, 0, 1 << 20);
    else if (!std::strcmp(A, "--teams") && V) {
      Teams.clear();
      std::string S(V);
      for (size_t P = 0; P <= S.size();) {
        size_t E = S.find(',', P);
        if (E == std::string::npos)
          E = S.size();
        long T = Num("--teams", S.substr(P, E - P).c_str(), 1, 1 << 20);
        if (std::find(Teams.begin(), Teams.end(), T) != Teams.end()) {
          // One benchmark name per team count: a repeat would be a second
          // JSON key of the same name, whose samples a reader drops.
          std::fprintf(stderr,
                       "kle-bench: error: --teams: team count %ld named "
                       "twice in \"%s\"\n",
                       T, V);
          std::exit(2);
        }
        Teams.push_back(T);
        P = E + 1;
      }
    } else {
      std::fprintf(stderr,
                   "kle-bench: error: --interleave mode: unexpected "
                   "argument \"%s\" (options: --interleave LIST "
                   "--cycles N --warmup N --teams T[,T...] --batch N "
                   "--waits W[,W...], each with its value, and --floor)\n",
                   A);
      return 2;
    }
    ++I;
  }
  return interleave(parseInterleave(List ? List : ""), Teams, Cycles, Warmup,
                    Batch, WaitList, WithFloor);
}

void teamCounts(benchmark::internal::Benchmark *B) {
  B->ArgName("teams");
  for (int Teams : {1, 8, 132, 1024, 16384})
    B->Arg(Teams);
}

} // namespace

BENCHMARK(SyncReduction)->Apply(teamCounts)->UseRealTime();
BENCHMARK(SyncBaseline)->Apply(teamCounts)->UseRealTime();
BENCHMARK(SyncReduction)->Name("SyncReductionThreads")->Arg(1)->ArgName("teams")
    ->Threads(1)->Threads(4)->Threads(16)->UseRealTime();
BENCHMARK_TEMPLATE(Pipelined, true)->Name("PipelinedReduction")->Arg(256)
    ->ArgName("launches")->UseRealTime();
BENCHMARK_TEMPLATE(Pipelined, false)->Name("PipelinedBaseline")->Arg(256)
    ->ArgName("launches")->UseRealTime();

int main(int argc, char **argv) {
  // --list-devices: "<number> <uid>" per offload device, then exit.
  for (int I = 1; I < argc; ++I)
    if (!std::strcmp(argv[I], "--list-devices")) {
      for (int D = 0; D < omp_get_num_devices(); ++D) {
        const char *Uid = omp_get_uid_from_device(D);
        std::printf("%d %s\n", D, Uid ? Uid : "?");
      }
      return 0;
    }
  // --interleave LIST [--cycles N] [--warmup N] [--teams T,...] [--batch N]
  // (see interleave()), and --switch-in-flight (a test).
  for (int I = 1; I < argc; ++I)
    if (!std::strcmp(argv[I], "--interleave") ||
        !std::strcmp(argv[I], "--switch-in-flight")) {
      // The KLE path is timed only with LIBOMPTARGET_KLE_STATS=1, read when
      // the runtime initialises (before main): re-execute with it set.
      const char *Stats = std::getenv("LIBOMPTARGET_KLE_STATS");
      if (!Stats || std::strcmp(Stats, "1")) {
        setenv("LIBOMPTARGET_KLE_STATS", "1", /*overwrite=*/1);
        execv("/proc/self/exe", argv);
        std::fprintf(stderr,
                     "kle-bench: error: cannot re-execute itself with "
                     "LIBOMPTARGET_KLE_STATS=1 (%s); set it and run "
                     "again\n",
                     std::strerror(errno));
        return 2;
      }
      if (!std::strcmp(argv[I], "--switch-in-flight"))
        return switchInFlight();
      return interleaveMain(argc, argv);
    }
  // --launches N: N synchronous reduction launches (teams=1) and exit; used
  // to count driver calls per launch under the CUDA driver stand-in.
  for (int I = 1; I + 1 < argc; ++I)
    if (!std::strcmp(argv[I], "--launches")) {
      std::optional<long> N = parseCount(argv[I + 1], 0, 1L << 30);
      if (!N) {
        std::fprintf(stderr, "kle-bench: error: --launches wants a number of "
                             "launches from 0 to 1073741824, not \"%s\"\n",
                     argv[I + 1]);
        return 2;
      }
      long Sum = 0;
      for (long K = 0; K < *N; ++K)
        Sum += reductionLaunch(benchDevice(), 1);
      std::printf("launches done, checksum %ld\n", Sum);
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  const char *Uid = omp_get_uid_from_device(benchDevice());
  // The devices are initialised now, so the plugin has loaded libcuda.so:
  // register the kernel-only benchmarks if that is bench/kernel-timer's.
  if (CollectFnTy Collect = kernelTimer()) {
    for (bool Red : {true, false}) {
      auto *B = benchmark::RegisterBenchmark(
          Red ? "KernelReduction" : "KernelBaseline",
          Red ? KernelTime<true> : KernelTime<false>, Collect);
      teamCounts(B);
      B->UseManualTime();
    }
  }
  // Issue 19: kernels whose teams work before reducing (kernel timer only).
  if (CollectFnTy Collect = kernelTimer()) {
    smGHz(); // a bad KLE_BENCH_SM_GHZ stops the run before any benchmark
    benchmark::RegisterBenchmark("ReductionAfterWork", ReductionAfterWork, Collect)
        ->Apply(workArgs)
        ->UseManualTime();
  }
  const char *Transport = std::getenv("LIBOMPTARGET_KLE_TRANSPORT");
  benchmark::AddCustomContext("kle_device", std::to_string(benchDevice()));
  benchmark::AddCustomContext("kle_device_uid", Uid ? Uid : "?");
  benchmark::AddCustomContext("kle_transport",
                              Transport && *Transport ? Transport : "auto");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
