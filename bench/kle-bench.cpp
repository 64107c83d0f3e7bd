//===-- kle-bench.cpp - Kernel launch environment latency benchmarks -----===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Launch-latency benchmarks for the KLE transports (Google Benchmark). The
// transport is chosen per process with LIBOMPTARGET_KLE_TRANSPORT, so
// scripts/kle-compare.py runs this binary once per transport, interleaved.
//
//   SyncReduction/teams:N   one target region with a cross-team reduction
//                           (the launches that carry a KLE), launched and
//                           completed per iteration: launch-to-completion
//                           latency, in seconds per launch
//   SyncBaseline/teams:N    the same kernel shape, team count and 8-byte
//                           tofrom map, without a reduction: no KLE at all
//                           (the floor the transports are compared with)
//   Pipelined{Reduction,Baseline}/launches:N
//                           N nowait launches then one taskwait; the time is
//                           reported per launch (items = launches)
// SyncReduction also runs with 1, 4 and 16 host threads launching at once.
// KLE_BENCH_DEVICE selects the device (default: the default device);
// --list-devices prints "<number> <uid>" for each offload device;
// --launches N runs N synchronous reduction launches and exits.
//
//===----------------------------------------------------------------------===//

#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int benchDevice() {
  static const int Device = [] {
    const char *Env = std::getenv("KLE_BENCH_DEVICE");
    return Env && *Env ? std::atoi(Env) : omp_get_default_device();
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

template <bool Reduction> void Pipelined(benchmark::State &State) {
  const int Dev = benchDevice(), N = static_cast<int>(State.range(0));
  long Out[64] = {0};
  for (auto _ : State) {
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
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    map(tofrom : P[0 : 1]) nowait
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
  }
  benchmark::DoNotOptimize(Out);
  State.SetItemsProcessed(State.iterations() * N);
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
  // --launches N: N synchronous reduction launches (teams=1) and exit; used
  // to count driver calls per launch under the CUDA driver stand-in.
  for (int I = 1; I + 1 < argc; ++I)
    if (!std::strcmp(argv[I], "--launches")) {
      long Sum = 0;
      for (int N = std::atoi(argv[I + 1]), K = 0; K < N; ++K)
        Sum += reductionLaunch(benchDevice(), 1);
      std::printf("launches done, checksum %ld\n", Sum);
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  const char *Uid = omp_get_uid_from_device(benchDevice());
  const char *Transport = std::getenv("LIBOMPTARGET_KLE_TRANSPORT");
  benchmark::AddCustomContext("kle_device", std::to_string(benchDevice()));
  benchmark::AddCustomContext("kle_device_uid", Uid ? Uid : "?");
  benchmark::AddCustomContext("kle_transport",
                              Transport && *Transport ? Transport : "auto");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
