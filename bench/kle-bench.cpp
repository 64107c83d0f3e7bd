//===-- kle-bench.cpp - Kernel launch environment latency benchmarks -----===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Launch-latency benchmarks of the KLE transports (docs/BENCHMARKS.md):
// Google Benchmark rows (SyncReduction, SyncBaseline, PipelinedReduction,
// and with bench/kernel-timer KernelReduction, ReductionAfterWork), and the
// modes --list-devices, --launches N and --interleave (the transports, the
// no-KLE baseline and the floor in turns, as JSON for `klebench.py compare`).
// KLE_BENCH_DEVICE: a device number, or "gpu".
//
//===----------------------------------------------------------------------===//

#include "kle-floor.h"
#include "kle-host.h"
#include "kle-regions.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

namespace {

using kle::fail;

/// kle::parseCount(), else exits: "<Opt> wants a number<Of> from Min to Max".
long count(const char *Opt, const char *V, long Min, long Max,
           const char *Of = "") {
  if (std::optional<long> N = kle::parseCount(V, Min, Max))
    return *N;
  fail("%s wants a number%s from %ld to %ld, not \"%s\"", Opt, Of, Min, Max,
       V ? V : "");
}

/// The items of \p Opt's comma-separated \p List; with \p Noun, each at most
/// once and, with \p Valid ("a, b, c"), one of those names.
std::vector<std::string> splitList(const char *Opt, const char *Noun,
                                   const char *List, const char *Valid) {
  std::vector<std::string> Out;
  const std::string S(List);
  const std::string Names = Valid ? ", " + std::string(Valid) + ", " : "";
  for (size_t P = 0; P <= S.size();) {
    size_t E = std::min(S.find(',', P), S.size());
    std::string Item = S.substr(P, E - P);
    P = E + 1;
    if (Valid && (Item.empty() || Names.find(" " + Item + ",") == Names.npos))
      fail("%s: unknown %s \"%s\" in \"%s\" (valid: %s, comma-separated)", Opt,
           Noun, Item.c_str(), List, Valid);
    if (Noun && std::find(Out.begin(), Out.end(), Item) != Out.end())
      fail("%s: %s \"%s\" named twice in \"%s\"", Opt, Noun, Item.c_str(),
           List);
    Out.push_back(Item);
  }
  return Out;
}

/// The device KLE_BENCH_DEVICE names, else the default device.
int benchDevice() {
  static const int Device = kle::deviceFromEnv("--list-devices");
  return Device;
}

constexpr int LoopTrip = 1024;
constexpr auto reductionLaunch = kle::reductionRegion<LoopTrip>;
constexpr auto baselineLaunch = kle::baselineRegion<LoopTrip>; // no KLE

template <long (*Launch)(int, int)> void Sync(benchmark::State &State) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  Launch(Dev, Teams); // device and image initialised outside timing
  for (auto _ : State)
    benchmark::DoNotOptimize(Launch(Dev, Teams));
  State.SetItemsProcessed(State.iterations());
}

void PipelinedReduction(benchmark::State &State) {
  const int Dev = benchDevice(), N = static_cast<int>(State.range(0));
  for (auto _ : State)
    benchmark::DoNotOptimize(kle::nowaitBatch<LoopTrip>(Dev, true, N));
  State.SetItemsProcessed(State.iterations() * N);
}

/// The symbol \p Name in the process, else nullptr.
template <typename FnTy> FnTy symbol(const char *Name) {
  return reinterpret_cast<FnTy>(dlsym(RTLD_DEFAULT, Name));
}

/// bench/kernel-timer's collector \p Name, if the plugin loaded its libcuda.so.
using CollectFnTy = size_t (*)(double *Ms, size_t Max, int Wait);
CollectFnTy timerFn(const char *Name) {
  if (CollectFnTy F = symbol<CollectFnTy>(Name))
    return F;
  void *H = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
  return H ? reinterpret_cast<CollectFnTy>(dlsym(H, Name)) : nullptr;
}

/// Waits for and sums (ms) every time \p Collect holds; \p Count: how many.
double drainTimer(CollectFnTy Collect, size_t *Count = nullptr) {
  double Ms[64], Sum = 0;
  while (size_t N = Collect(Ms, 64, /*Wait=*/1))
    for (size_t I = 0; I < N; ++I, Count && ++*Count)
      Sum += Ms[I];
  return Sum;
}

/// SM clock in GHz for ReductionAfterWork's work_ns: KLE_BENCH_SM_GHZ.
double smGHz() {
  static const double GHz = [] {
    const char *Env = std::getenv("KLE_BENCH_SM_GHZ");
    char *End = nullptr;
    const double V = Env && *Env ? std::strtod(Env, &End) : 1.98;
    if (End && (*End || !(V > 0 && V <= 10)))
      fail("KLE_BENCH_SM_GHZ=\"%s\" is not an SM clock in GHz (for example "
           "1.98)", Env);
    return V;
  }();
  return GHz;
}

/// Each team spins \p Cycles clock cycles, then reduces.
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

/// Kernel-only timing (KernelReduction/teams:T, and ReductionAfterWork with
/// range(1) ns of work per team): each iteration's time is its kernels'.
void timeKernels(benchmark::State &State, CollectFnTy Collect, bool Work) {
  const int Dev = benchDevice(), Teams = static_cast<int>(State.range(0));
  const long Cycles = Work ? static_cast<long>(State.range(1) * smGHz()) : 0;
  auto Launch = [&] {
    return Work ? workReductionLaunch(Dev, Teams, Cycles)
                : reductionLaunch(Dev, Teams);
  };
  Launch();
  drainTimer(Collect);
  for (auto _ : State) {
    benchmark::DoNotOptimize(Launch());
    size_t N = 0;
    double Sum = drainTimer(Collect, &N);
    if (!N) {
      State.SkipWithError("the kernel timer returned no time for a launch");
      break;
    }
    State.SetIterationTime(Sum / 1e3);
  }
  State.SetItemsProcessed(State.iterations());
}

// --- Interleaved transports (--interleave) ---------------------------------

/// The benchmark-only hooks (KLEBenchSwitch.h); SetWait may be absent.
struct BenchHooksTy {
  using SetTransportFnTy = int (*)(const char *, char *, size_t);
  SetTransportFnTy SetTransport =
      symbol<SetTransportFnTy>("__kle_bench_set_transport");
  uint64_t (*PathNs)() = symbol<uint64_t (*)()>("__kle_bench_kle_path_ns");
  int (*SetWait)(long long) = symbol<int (*)(long long)>("__kle_bench_set_wait");
};

/// Sets the CUDA plugin's busy-wait bound (us; -1: the default).
void switchWait(const BenchHooksTy &H, long long Us) {
  if (int Rc = H.SetWait(Us))
    fail("switching the CUDA plugin's wait to %lld us failed (%d)", Us, Rc);
}

/// Selects \p Name ("" = each device's own transport) for the next launches.
void switchTransport(const BenchHooksTy &H, const char *Name) {
  char Err[256] = "";
  if (int Rc = H.SetTransport(Name, Err, sizeof(Err)))
    fail("switching the KLE transport to \"%s\" failed (%d): %s", Name, Rc,
         Err);
}

/// One unit of the rotation: a transport (baseline: "") under a wait, or
/// the floor.
struct UnitTy {
  std::string Name; // "resident", "resident/poll", "baseline", "floor"
  std::string Transport;
  bool Floor = false;
  std::optional<long long> WaitUs; // poll: up to 2 s; block: 0; default: -1
};

/// --interleave: the units take turns launch by launch (pipelined: batch by
/// batch) in the order U1..Un, Un..U1, ...; prints JSON samples [cycle,
/// unit, ns, path_ns, cpu_ns(, kernel_us, span_us)] per launch.
int interleave(const std::vector<std::string> &Transports,
               const std::vector<long> &Teams, long Cycles, long Warmup,
               long Batch, std::vector<std::string> WaitList, bool WithFloor) {
  const BenchHooksTy H;
  if (!H.SetTransport || !H.PathNs)
    fail("this libomptarget has no KLE transport switch "
         "(__kle_bench_set_transport): --interleave needs kle-offload's "
         "runtime");
  const int Dev = benchDevice();
  if (!WaitList.empty() && !H.SetWait) {
    std::fprintf(stderr, "kle-bench: note: this libomptarget has no wait "
                         "switch (__kle_bench_set_wait): the --waits "
                         "variants are skipped\n");
    WaitList.clear();
  }
  const CollectFnTy Kernels = timerFn("kle_kernel_timer_collect");
  const CollectFnTy Spans = timerFn("kle_kernel_timer_collect_spans");
  const bool Timed = Kernels && Spans;
  // Initialise the device without a KLE: pool growth falls into warm-up.
  baselineLaunch(Dev, 1);
  std::unique_ptr<kle::FloorTy> Floor;
  std::string Err;
  if (WithFloor && kle::cudaOrdinal(Dev) < 0) {
    const char *Uid = omp_get_uid_from_device(Dev);
    fail("the floor (--floor) cannot run: device %d (%s) is not a CUDA device",
         Dev, Uid ? Uid : "?");
  }
  if (WithFloor &&
      !(Floor = kle::FloorTy::open(kle::cudaOrdinal(Dev), LoopTrip, Err)))
    fail("the floor (--floor) cannot be opened: %s", Err.c_str());
  std::vector<UnitTy> Units;
  for (size_t I = 0; I <= Transports.size(); ++I) {
    const std::string Tr = I < Transports.size() ? Transports[I] : "";
    const std::string T = Tr.empty() ? "baseline" : Tr;
    if (WaitList.empty())
      Units.push_back({T, Tr});
    for (const std::string &W : WaitList)
      Units.push_back({T + "/" + W, Tr, false,
                       W == "poll" ? 2000000 : W == "block" ? 0 : -1});
  }
  if (Floor)
    Units.push_back({"floor", "", true});
  const size_t NU = Units.size();
  // A JSON array of N values At(0) .. At(N - 1) in format Fmt.
  auto PrintArray = [](size_t N, const char *Fmt, auto At) {
    for (size_t I = 0; I < N; ++I)
      std::printf(Fmt, I ? ", " : "", At(I));
  };
  std::printf("{\"method\": \"interleaved\", \"units\": [");
  PrintArray(NU, "%s\"%s\"", [&](size_t U) { return Units[U].Name.c_str(); });
  std::printf("], \"waits\": [");
  PrintArray(WaitList.size(), "%s\"%s\"",
             [&](size_t W) { return WaitList[W].c_str(); });
  std::printf("], \"cycles\": %ld, \"warmup\": %ld, \"fields\": [\"cycle\", "
              "\"unit\", \"ns\", \"path_ns\", \"cpu_ns\"%s], "
              "\"benchmarks\": {",
              Cycles, Warmup, Timed ? ", \"kernel_us\", \"span_us\"" : "");
  if (Timed) {
    drainTimer(Kernels);
    drainTimer(Spans);
  }
  // The synchronous benchmark of each team count, then the pipelined one.
  for (size_t B = 0; B < Teams.size() + (Batch ? 1 : 0); ++B) {
    const bool Pipelined = B == Teams.size();
    const int BTeams = Pipelined ? 8 : static_cast<int>(Teams[B]);
    const long PerSample = Pipelined ? Batch : 1;
    std::vector<uint64_t> WarmPath(NU, 0);
    std::vector<long> WarmLaunches(NU, 0);
    std::string Samples;
    for (long C = 0; C < Warmup + Cycles; ++C) {
      for (size_t I = 0; I < NU; ++I) {
        const size_t U = C % 2 == 0 ? I : NU - 1 - I;
        const UnitTy &Unit = Units[U];
        const bool Baseline = Unit.Transport.empty();
        if (!Baseline)
          switchTransport(H, Unit.Transport.c_str());
        if (Unit.WaitUs)
          switchWait(H, *Unit.WaitUs);
        const uint64_t P0 = H.PathNs(), Cpu0 = kle::processCpuNs();
        auto T0 = std::chrono::steady_clock::now();
        if (Unit.Floor) {
          if (!(Pipelined ? Floor->batch(static_cast<int>(Batch), BTeams, Err)
                          : Floor->region(BTeams, Err)))
            fail("the floor (--floor) failed: %s", Err.c_str());
        } else if (Pipelined)
          benchmark::DoNotOptimize(
              kle::nowaitBatch<LoopTrip>(Dev, !Baseline, Batch));
        else
          benchmark::DoNotOptimize(Baseline ? baselineLaunch(Dev, BTeams)
                                            : reductionLaunch(Dev, BTeams));
        auto T1 = std::chrono::steady_clock::now();
        const uint64_t Cpu1 = kle::processCpuNs(), P1 = H.PathNs();
        const double KernelMs = Timed ? drainTimer(Kernels) : 0;
        const double SpanMs = Timed ? drainTimer(Spans) : 0;
        if (C < Warmup) {
          WarmPath[U] += P1 - P0;
          WarmLaunches[U] += PerSample;
          continue;
        }
        const double Ns =
            std::chrono::duration<double, std::nano>(T1 - T0).count();
        char Buf[192];
        int L = std::snprintf(
            Buf, sizeof(Buf), "%s[%ld,%zu,%.1f,%.1f,%.1f",
            Samples.empty() ? "" : ",", C - Warmup, U, Ns / PerSample,
            double(P1 - P0) / PerSample, double(Cpu1 - Cpu0) / PerSample);
        if (Timed)
          std::snprintf(Buf + L, sizeof(Buf) - L, ",%.3f,%.3f",
                        KernelMs * 1e3 / PerSample, SpanMs * 1e3 / PerSample);
        (Samples += Buf) += "]";
      }
    }
    switchTransport(H, "");
    if (!WaitList.empty())
      switchWait(H, -1);
    std::printf("%s\"%s/%s:%ld\": {\"launches_per_sample\": %ld, "
                "\"warmup_path_ns\": [",
                B ? ", " : "",
                Pipelined ? "PipelinedReduction" : "LaunchLatency",
                Pipelined ? "launches" : "teams", Pipelined ? Batch : Teams[B],
                PerSample);
    PrintArray(NU, "%s%llu",
               [&](size_t U) { return (unsigned long long)WarmPath[U]; });
    std::printf("], \"warmup_launches\": [");
    PrintArray(NU, "%s%ld", [&](size_t U) { return WarmLaunches[U]; });
    std::printf("], \"samples\": [%s]}", Samples.c_str());
  }
  std::printf("}}\n");
  return 0;
}

/// Parses --interleave's options (any other argument is an error).
int interleaveMain(int argc, char **argv) {
  const char *List = "";
  long Cycles = 200, Warmup = 20, Batch = 64;
  std::vector<long> Teams = {1};
  std::vector<std::string> WaitList;
  bool WithFloor = false;
  for (int I = 1; I < argc; ++I) {
    const char *A = argv[I], *V = I + 1 < argc ? argv[I + 1] : nullptr;
    if (!std::strcmp(A, "--floor")) {
      WithFloor = true;
      continue; // no value
    }
    if (!std::strcmp(A, "--interleave") && V)
      List = V;
    else if (!std::strcmp(A, "--waits") && V)
      WaitList = splitList("--waits", "wait", V, "poll, block, default");
    else if (!std::strcmp(A, "--cycles") && V)
      Cycles = count(A, V, 2, 10000000);
    else if (!std::strcmp(A, "--warmup") && V)
      Warmup = count(A, V, 0, 10000000);
    else if (!std::strcmp(A, "--batch") && V)
      Batch = count(A, V, 0, 1 << 20);
    else if (!std::strcmp(A, "--teams") && V) {
      // One benchmark name per team count (a JSON key): no repeats.
      Teams.clear();
      for (const std::string &T : splitList("--teams", nullptr, V, nullptr))
        Teams.push_back(count("--teams", T.c_str(), 1, 1 << 20));
      for (long T : Teams)
        if (std::count(Teams.begin(), Teams.end(), T) > 1)
          fail("--teams: team count %ld named twice in \"%s\"", T, V);
    } else {
      fail("--interleave mode: unexpected argument \"%s\" (options: "
           "--interleave LIST --cycles N --warmup N --teams T[,T...] --batch N "
           "--waits W[,W...], each with its value, and --floor)",
           A);
    }
    ++I;
  }
  return interleave(splitList("--interleave", "transport", List,
                              "zerocopy, resident, staged, copy"),
                    Teams, Cycles, Warmup, Batch, WaitList, WithFloor);
}

void teamCounts(benchmark::internal::Benchmark *B) {
  B->ArgName("teams");
  for (int Teams : {1, 8, 132, 1024, 16384})
    B->Arg(Teams);
}

bool hasArg(int argc, char **argv, const char *Arg) {
  return std::any_of(argv + 1, argv + argc,
                     [&](const char *A) { return !std::strcmp(A, Arg); });
}

} // namespace

BENCHMARK_TEMPLATE(Sync, reductionLaunch)
    ->Name("SyncReduction")
    ->Apply(teamCounts)
    ->UseRealTime();
BENCHMARK_TEMPLATE(Sync, baselineLaunch)
    ->Name("SyncBaseline")
    ->Apply(teamCounts)
    ->UseRealTime();
BENCHMARK(PipelinedReduction)->Arg(256)->ArgName("launches")->UseRealTime();

int main(int argc, char **argv) {
  if (hasArg(argc, argv, "--list-devices")) {
    kle::printDevices("?");
    return 0;
  }
  if (hasArg(argc, argv, "--interleave")) {
    // The KLE path is timed only with LIBOMPTARGET_KLE_STATS=1, read before
    // main: re-execute with it set.
    const char *Stats = std::getenv("LIBOMPTARGET_KLE_STATS");
    if (!Stats || std::strcmp(Stats, "1")) {
      setenv("LIBOMPTARGET_KLE_STATS", "1", /*overwrite=*/1);
      execv("/proc/self/exe", argv);
      fail("cannot re-execute itself with LIBOMPTARGET_KLE_STATS=1 (%s); set "
           "it and run again",
           std::strerror(errno));
    }
    return interleaveMain(argc, argv);
  }
  for (int I = 1; I + 1 < argc; ++I)
    if (!std::strcmp(argv[I], "--launches")) {
      const long N = count(argv[I], argv[I + 1], 0, 1L << 30, " of launches");
      long Sum = 0;
      for (long K = 0; K < N; ++K)
        Sum += reductionLaunch(benchDevice(), 1);
      std::printf("launches done, checksum %ld\n", Sum);
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  const char *Uid = omp_get_uid_from_device(benchDevice());
  // The plugin has loaded libcuda.so: kernel-only rows if it is the timer.
  if (CollectFnTy Collect = timerFn("kle_kernel_timer_collect")) {
    smGHz(); // a bad KLE_BENCH_SM_GHZ stops the run before any benchmark
    teamCounts(benchmark::RegisterBenchmark("KernelReduction", timeKernels,
                                            Collect, false)
                   ->UseManualTime());
    benchmark::RegisterBenchmark("ReductionAfterWork", timeKernels, Collect,
                                 true)
        ->ArgNames({"teams", "work_ns"})
        ->Apply([](benchmark::internal::Benchmark *B) {
          for (int Teams : {1, 132, 16384})
            for (int WorkNs : {0, 2000, 10000})
              B->Args({Teams, WorkNs});
        })
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
