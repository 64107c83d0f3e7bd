//===-- kle-kernel-timer.cpp - Kernel-only GPU times for kle-bench -------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A libcuda.so interposer that measures how long each kernel runs on the
// GPU, so kle-bench can show whether reading the KLE in place over the host
// link slows the kernel down (issue 5: "kernel-only time").
//
// How it is loaded: the CUDA plugin dlopen()s "libcuda.so" and looks every
// driver entry point up in that handle. This library is built as
// kernel-timer/libcuda.so with DT_NEEDED libcuda.so.1, so with its directory
// first on LD_LIBRARY_PATH the plugin finds cuLaunchKernel here and every
// other entry point in the real driver (dlsym searches the handle's
// dependencies). It is never installed; bench/klebench.py
// compare (--kernel-times) and the GPU bundle put it on the path for one pass only,
// because the two events per launch add to launch latency.
//
// What it measures: cuEventRecord on the launch's stream before and after
// cuLaunchKernel; cuEventElapsedTime of the pair is the kernel's run time on
// the device, in milliseconds, with the driver's event resolution (about
// 0.5 us). Events are created with default flags and recycled. So that the
// start event does not fire while the host is still submitting the kernel
// (which would add the submission time, more so on an idle stream than
// behind a queued KLE copy), the stream is held first: cuStreamWaitValue32
// on a pinned flag, then the two events and the launch are queued, then the
// host sets the flag. Where stream memory operations are unavailable the
// hold is skipped (one note on stderr) and times include submission.
//
// Interface (C, for kle-bench, looked up with dlsym):
//   size_t kle_kernel_timer_collect(double *Ms, size_t Max, int Wait)
//     Moves up to Max completed kernel times (ms, in launch order) into Ms
//     and returns how many. Wait != 0 first waits (without holding the
//     timer's lock) for the launches pending when it was called.
//     Thread-safe (one mutex).
//   size_t kle_kernel_timer_dropped(void)
//     Launches whose time was lost (an event call failed).
//   size_t kle_kernel_timer_collect_spans(double *Ms, size_t Max, int Wait)
//     As kle_kernel_timer_collect, for device spans: per kernel, the GPU
//     time of the host-to-device copies queued on its stream since the
//     stream's previous kernel (the region's maps and, for copy and staged,
//     the KLE) plus the kernel's own time, each copy timed by an event pair
//     around its cuMemcpyHtoDAsync. Summing busy intervals keeps host gaps
//     between the region's submissions out; a copy's pair includes that
//     copy's own submission (the stream is held only for the kernel: a hold
//     ahead of a pageable copy could stall the driver's staging).
//
// Follows the usual CUDA event-timing pattern (CUDA C Programming Guide,
// "Events"); nothing here changes what the plugin or kernel does.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

namespace {

using LaunchFnTy = CUresult (*)(CUfunction, unsigned, unsigned, unsigned,
                                unsigned, unsigned, unsigned, unsigned,
                                CUstream, void **, void **);

LaunchFnTy realLaunch() {
  static LaunchFnTy Fn = [] {
    // The real driver is this library's dependency, so it is loaded already.
    void *H = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    LaunchFnTy F =
        H ? reinterpret_cast<LaunchFnTy>(dlsym(H, "cuLaunchKernel")) : nullptr;
    if (!F)
      std::fprintf(stderr, "kle-kernel-timer: error: cannot find "
                           "cuLaunchKernel in libcuda.so.1\n");
    return F;
  }();
  return Fn;
}

struct PendingTy {
  CUcontext Ctx;
  CUevent Start, End;
};

/// A device span: the copies' event pairs and the kernel's (the last).
struct SpanTy {
  CUcontext Ctx;
  std::vector<std::pair<CUevent, CUevent>> Pairs;
};

/// Per context: a pinned 32-bit flag the stream waits on, and the next
/// value to release. Released values only grow (atomic max), so launches
/// from several threads on one stream cannot stall each other.
struct HoldTy {
  uint32_t *Host = nullptr;
  CUdeviceptr Dev = 0;
  uint32_t Next = 0;
};

struct TimerTy {
  std::mutex M;
  std::map<CUcontext, HoldTy> Holds;
  bool HoldUnavailable = false;
  std::deque<PendingTy> Pending; // launch order
  std::map<CUcontext, std::vector<CUevent>> Free; // events belong to a context
  std::deque<double> DoneMs;
  size_t Dropped = 0;
  /// Per stream: the timed copies queued since its last kernel.
  std::map<CUstream, SpanTy> OpenSpans;
  std::deque<SpanTy> PendingSpans; // launch order
  std::deque<double> DoneSpanMs;
  /// Set by the first kle_kernel_timer_collect_spans: only then are copies
  /// timed (kernel-only passes stay as they were).
  std::atomic<bool> SpansWanted{false};

  // Moves finished spans (in order) to DoneSpanMs; never waits.
  void harvestSpans() {
    while (!PendingSpans.empty()) {
      SpanTy &S = PendingSpans.front();
      if (cuEventQuery(S.Pairs.back().second) == CUDA_ERROR_NOT_READY)
        return;
      double Sum = 0;
      bool Ok = true;
      for (auto &[B, E] : S.Pairs) {
        float Ms = 0;
        Ok = Ok && cuEventSynchronize(E) == CUDA_SUCCESS &&
             cuEventElapsedTime(&Ms, B, E) == CUDA_SUCCESS;
        Sum += Ms;
      }
      if (Ok)
        DoneSpanMs.push_back(Sum);
      else
        ++Dropped;
      recycle(S);
      PendingSpans.pop_front();
    }
  }
  void recycle(SpanTy &S) {
    // The kernel's pair is PendingTy's, recycled by harvest().
    for (size_t I = 0; I + 1 < S.Pairs.size(); ++I) {
      Free[S.Ctx].push_back(S.Pairs[I].first);
      Free[S.Ctx].push_back(S.Pairs[I].second);
    }
  }

  CUevent event(CUcontext Ctx) {
    std::vector<CUevent> &List = Free[Ctx];
    if (!List.empty()) {
      CUevent E = List.back();
      List.pop_back();
      return E;
    }
    CUevent E = nullptr;
    if (cuEventCreate(&E, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return nullptr;
    return E;
  }

  // Moves finished pairs (in order) to DoneMs; with Wait, waits for all.
  void harvest(bool Wait) {
    while (!Pending.empty()) {
      PendingTy &P = Pending.front();
      CUresult R = Wait ? cuEventSynchronize(P.End) : cuEventQuery(P.End);
      if (R == CUDA_ERROR_NOT_READY)
        return;
      float Ms = 0;
      if (R == CUDA_SUCCESS &&
          cuEventElapsedTime(&Ms, P.Start, P.End) == CUDA_SUCCESS)
        DoneMs.push_back(Ms);
      else
        ++Dropped;
      Free[P.Ctx].push_back(P.Start);
      Free[P.Ctx].push_back(P.End);
      Pending.pop_front();
    }
  }
};

TimerTy &timer() {
  static TimerTy *T = new TimerTy(); // never destroyed: used until exit
  return *T;
}

} // namespace

extern "C" __attribute__((visibility("default"))) CUresult
cuLaunchKernel(CUfunction F, unsigned GX, unsigned GY, unsigned GZ,
               unsigned BX, unsigned BY, unsigned BZ, unsigned SharedBytes,
               CUstream Stream, void **Params, void **Extra) {
  LaunchFnTy Real = realLaunch();
  if (!Real)
    return CUDA_ERROR_NOT_FOUND;
  TimerTy &T = timer();
  PendingTy P{nullptr, nullptr, nullptr};
  uint32_t *Flag = nullptr;
  uint32_t Release = 0;
  if (cuCtxGetCurrent(&P.Ctx) == CUDA_SUCCESS && P.Ctx) {
    std::lock_guard<std::mutex> L(T.M);
    P.Start = T.event(P.Ctx);
    P.End = P.Start ? T.event(P.Ctx) : nullptr;
    if (P.End && !T.HoldUnavailable) {
      HoldTy &H = T.Holds[P.Ctx];
      if (!H.Host) {
        void *Ptr = nullptr;
        if (cuMemAllocHost(&Ptr, 4) == CUDA_SUCCESS &&
            cuMemHostGetDevicePointer(&H.Dev, Ptr, 0) == CUDA_SUCCESS) {
          H.Host = static_cast<uint32_t *>(Ptr);
          *H.Host = 0;
        }
      }
      if (H.Host &&
          cuStreamWaitValue32(Stream, H.Dev, H.Next + 1,
                              CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS) {
        Flag = H.Host;
        Release = ++H.Next;
      } else {
        T.HoldUnavailable = true;
        std::fprintf(stderr, "kle-kernel-timer: note: cannot hold the stream "
                             "(cuStreamWaitValue32); kernel times include "
                             "launch submission\n");
      }
    }
  }
  bool Timed = P.End && cuEventRecord(P.Start, Stream) == CUDA_SUCCESS;
  CUresult R = Real(F, GX, GY, GZ, BX, BY, BZ, SharedBytes, Stream, Params,
                    Extra);
  Timed = Timed && R == CUDA_SUCCESS &&
          cuEventRecord(P.End, Stream) == CUDA_SUCCESS;
  if (Flag) { // release the stream: raise the flag to at least Release
    uint32_t Cur = __atomic_load_n(Flag, __ATOMIC_RELAXED);
    while (Cur < Release &&
           !__atomic_compare_exchange_n(Flag, &Cur, Release, /*weak=*/true,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
  }
  std::lock_guard<std::mutex> L(T.M);
  auto Open = T.OpenSpans.find(Stream);
  const bool Spans = T.SpansWanted.load(std::memory_order_relaxed);
  if (Timed && Spans) {
    // The span's kernel pair is the kernel's own: collect spans before
    // their kernels' events are recycled (kle-bench drains both).
    SpanTy S =
        Open != T.OpenSpans.end() ? std::move(Open->second) : SpanTy{P.Ctx, {}};
    S.Ctx = P.Ctx;
    S.Pairs.push_back({P.Start, P.End});
    T.PendingSpans.push_back(std::move(S));
    T.Pending.push_back(P);
    T.harvestSpans(); // before harvest() recycles the kernels' events
    T.harvest(/*Wait=*/false);
  } else if (Timed) {
    if (Open != T.OpenSpans.end())
      T.recycle(Open->second);
    T.Pending.push_back(P);
    T.harvest(/*Wait=*/false);
  } else {
    if (Open != T.OpenSpans.end())
      T.recycle(Open->second);
    if (R == CUDA_SUCCESS)
      ++T.Dropped;
    for (CUevent E : {P.Start, P.End})
      if (E)
        T.Free[P.Ctx].push_back(E);
  }
  if (Open != T.OpenSpans.end())
    T.OpenSpans.erase(Open);
  return R;
}

using CopyFnTy = CUresult (*)(CUdeviceptr, const void *, size_t, CUstream);

// Host-to-device copies, timed for the device spans. The plugin looks up
// cuMemcpyHtoDAsync_v2 (cuda.h maps the name).
extern "C" __attribute__((visibility("default"))) CUresult
cuMemcpyHtoDAsync(CUdeviceptr Dst, const void *Src, size_t Bytes,
                  CUstream Stream) {
  static CopyFnTy Real = [] {
    void *H = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return H ? reinterpret_cast<CopyFnTy>(dlsym(H, "cuMemcpyHtoDAsync_v2"))
             : nullptr;
  }();
  if (!Real)
    return CUDA_ERROR_NOT_FOUND;
  TimerTy &T = timer();
  if (!T.SpansWanted.load(std::memory_order_relaxed))
    return Real(Dst, Src, Bytes, Stream);
  CUcontext Ctx = nullptr;
  CUevent B = nullptr, E = nullptr;
  if (cuCtxGetCurrent(&Ctx) == CUDA_SUCCESS && Ctx) {
    std::lock_guard<std::mutex> L(T.M);
    B = T.event(Ctx);
    E = B ? T.event(Ctx) : nullptr;
    if (B && !E)
      T.Free[Ctx].push_back(B);
  }
  bool Timed = E && cuEventRecord(B, Stream) == CUDA_SUCCESS;
  CUresult R = Real(Dst, Src, Bytes, Stream);
  Timed =
      Timed && R == CUDA_SUCCESS && cuEventRecord(E, Stream) == CUDA_SUCCESS;
  if (E) {
    std::lock_guard<std::mutex> L(T.M);
    if (Timed) {
      SpanTy &S = T.OpenSpans[Stream];
      S.Ctx = Ctx;
      S.Pairs.push_back({B, E});
    } else {
      T.Free[Ctx].push_back(B);
      T.Free[Ctx].push_back(E);
    }
  }
  return R;
}

extern "C" __attribute__((visibility("default"))) size_t
kle_kernel_timer_collect_spans(double *Ms, size_t Max, int Wait) {
  TimerTy &T = timer();
  T.SpansWanted.store(true, std::memory_order_relaxed);
  if (Wait) {
    std::vector<CUevent> Ends;
    {
      std::lock_guard<std::mutex> L(T.M);
      for (const SpanTy &S : T.PendingSpans)
        Ends.push_back(S.Pairs.back().second);
    }
    for (CUevent E : Ends)
      cuEventSynchronize(E);
  }
  std::lock_guard<std::mutex> L(T.M);
  T.harvestSpans();
  size_t N = 0;
  while (N < Max && !T.DoneSpanMs.empty()) {
    Ms[N++] = T.DoneSpanMs.front();
    T.DoneSpanMs.pop_front();
  }
  return N;
}

extern "C" __attribute__((visibility("default"))) size_t
kle_kernel_timer_collect(double *Ms, size_t Max, int Wait) {
  TimerTy &T = timer();
  if (Wait) {
    // Wait outside the lock: a pending launch may depend on work another
    // thread is about to queue through cuLaunchKernel (which takes T.M).
    std::vector<CUevent> Ends;
    {
      std::lock_guard<std::mutex> L(T.M);
      for (const PendingTy &P : T.Pending)
        Ends.push_back(P.End);
    }
    for (CUevent E : Ends)
      cuEventSynchronize(E);
  }
  std::lock_guard<std::mutex> L(T.M);
  T.harvestSpans(); // before harvest() recycles the kernels' events
  T.harvest(/*Wait=*/false);
  size_t N = 0;
  while (N < Max && !T.DoneMs.empty()) {
    Ms[N++] = T.DoneMs.front();
    T.DoneMs.pop_front();
  }
  return N;
}

extern "C" __attribute__((visibility("default"))) size_t
kle_kernel_timer_dropped(void) {
  TimerTy &T = timer();
  std::lock_guard<std::mutex> L(T.M);
  return T.Dropped;
}
