//===-- kle-regions.h - The target regions the benchmarks time ------------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The target regions kle-bench and launch-cost time (Trip loop iterations):
// a teams reduction, so a KLE; the no-KLE baseline; nowait batches. Their
// shared host helpers: kle-host.h.
//
//===----------------------------------------------------------------------===//

#ifndef KLE_BENCH_REGIONS_H
#define KLE_BENCH_REGIONS_H

#include <omp.h>

namespace kle {

template <int Trip> [[gnu::noinline]] long reductionRegion(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < Trip; ++I)
    S += I;
  return S;
}

template <int Trip> [[gnu::noinline]] long baselineRegion(int Dev, int Teams) {
  long S = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(Teams) \
    map(tofrom : S)
  for (int I = 0; I < Trip; ++I)
    if (I == 0)
      S = 1;
  return S;
}

/// \p N nowait regions of 8 teams, with or without the reduction, at most 64
/// in flight (disjoint variables), then one taskwait; their sum.
template <int Trip>
[[gnu::noinline]] long nowaitBatch(int Dev, bool Reduction, long N) {
  long Out[64] = {0};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (long K = 0; K < N; ++K) {
      long *P = &Out[K % 64];
      if (Reduction) {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    reduction(+ : P[0 : 1]) map(tofrom : P[0 : 1]) nowait
        for (int I = 0; I < Trip; ++I)
          P[0] += 1;
      } else {
#pragma omp target teams distribute parallel for device(Dev) num_teams(8)     \
    map(tofrom : P[0 : 1]) nowait
        for (int I = 0; I < Trip; ++I)
          if (I == 0)
            P[0] += 1;
      }
      if (K % 64 == 63) {
#pragma omp taskwait
      }
    }
#pragma omp taskwait
  }
  long S = 0;
  for (long V : Out)
    S += V;
  return S;
}

} // namespace kle

#endif // KLE_BENCH_REGIONS_H
