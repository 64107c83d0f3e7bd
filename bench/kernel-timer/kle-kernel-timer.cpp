//===-- kle-kernel-timer.cpp - Kernel-only GPU times for kle-bench -------===//
//
// Part of kle-offload, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A libcuda.so interposer that times each kernel on the GPU (kle-bench's
// kernel-only rows and the interleaved method's second pass): put first on
// LD_LIBRARY_PATH, it takes cuLaunchKernel and cuMemcpyHtoDAsync and passes
// the rest to the driver. A kernel's time is cuEventElapsedTime of events
// around it, the stream held on a pinned flag (cuStreamWaitValue32) until
// the launch is submitted; a device span adds the host-to-device copies
// queued since the stream's previous kernel.
//
//   size_t kle_kernel_timer_collect(double *Ms, size_t Max, int Wait)
//   size_t kle_kernel_timer_collect_spans(double *Ms, size_t Max, int Wait)
//     move up to Max completed times (ms, launch order) into Ms; Wait != 0
//     first waits for pending launches. Spans start at the first _spans call.
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
#include <utility>
#include <vector>

namespace {

/// The real driver's entry point \p Name (a dependency: loaded already).
template <typename FnTy> FnTy real(const char *Name) {
  void *H = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  FnTy F = H ? reinterpret_cast<FnTy>(dlsym(H, Name)) : nullptr;
  if (!F)
    std::fprintf(stderr, "kle-kernel-timer: error: cannot find %s in "
                         "libcuda.so.1\n", Name);
  return F;
}

/// A kernel's event pairs: the copies of its span, then its own (the last).
struct SpanTy {
  CUcontext Ctx;
  std::vector<std::pair<CUevent, CUevent>> Pairs;
  bool Span = false; // a span is wanted (only its last pair if not)
};

/// Per context: a pinned flag the stream waits on and the next value to
/// release (values only grow, so threads sharing a stream cannot stall).
struct HoldTy {
  uint32_t *Host = nullptr;
  CUdeviceptr Dev = 0;
  uint32_t Next = 0;
};

struct TimerTy {
  std::mutex M;
  std::map<CUcontext, HoldTy> Holds;
  bool HoldUnavailable = false;
  std::map<CUcontext, std::vector<CUevent>> Free; // events belong to a context
  /// Per stream: the timed copies queued since its last kernel.
  std::map<CUstream, SpanTy> OpenSpans;
  std::deque<SpanTy> Pending; // kernels, launch order
  std::deque<double> DoneMs, DoneSpanMs;
  /// Copies are timed only from the first kle_kernel_timer_collect_spans.
  std::atomic<bool> SpansWanted{false};

  void recycle(const SpanTy &S) {
    for (const auto &[B, E] : S.Pairs)
      Free[S.Ctx].insert(Free[S.Ctx].end(), {B, E});
  }

  /// Moves the finished kernels' times (in order) to DoneMs and their spans'
  /// to DoneSpanMs; never waits. A time that cannot be read is lost.
  void harvest() {
    while (!Pending.empty()) {
      SpanTy &S = Pending.front();
      CUresult R = cuEventQuery(S.Pairs.back().second);
      if (R == CUDA_ERROR_NOT_READY)
        return;
      double Sum = 0;
      float Ms = 0;
      bool Ok = true, Last = false; // all pairs read; the kernel's read
      for (auto &[B, E] : S.Pairs) {
        Last = cuEventSynchronize(E) == CUDA_SUCCESS &&
               cuEventElapsedTime(&Ms, B, E) == CUDA_SUCCESS;
        Ok = Ok && Last;
        Sum += Ms;
      }
      if (R == CUDA_SUCCESS && Last)
        DoneMs.push_back(Ms);
      if (S.Span && Ok)
        DoneSpanMs.push_back(Sum);
      recycle(S);
      Pending.pop_front();
    }
  }

  /// A free event of \p Ctx, else a new one (nullptr if that fails).
  CUevent event(CUcontext Ctx) {
    std::vector<CUevent> &List = Free[Ctx];
    CUevent E = nullptr;
    if (List.empty())
      return cuEventCreate(&E, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? E : nullptr;
    E = List.back();
    List.pop_back();
    return E;
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
  using LaunchFnTy = CUresult (*)(CUfunction, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **, void **);
  static LaunchFnTy Real = real<LaunchFnTy>("cuLaunchKernel");
  if (!Real)
    return CUDA_ERROR_NOT_FOUND;
  TimerTy &T = timer();
  CUcontext Ctx = nullptr;
  CUevent Start = nullptr, End = nullptr;
  uint32_t *Flag = nullptr;
  uint32_t Release = 0;
  if (cuCtxGetCurrent(&Ctx) == CUDA_SUCCESS && Ctx) {
    std::lock_guard<std::mutex> L(T.M);
    Start = T.event(Ctx);
    End = Start ? T.event(Ctx) : nullptr;
    if (End && !T.HoldUnavailable) {
      HoldTy &H = T.Holds[Ctx];
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
  bool Timed = End && cuEventRecord(Start, Stream) == CUDA_SUCCESS;
  CUresult R = Real(F, GX, GY, GZ, BX, BY, BZ, SharedBytes, Stream, Params,
                    Extra);
  Timed = Timed && R == CUDA_SUCCESS &&
          cuEventRecord(End, Stream) == CUDA_SUCCESS;
  if (Flag) { // release the stream: raise the flag to at least Release
    uint32_t Cur = __atomic_load_n(Flag, __ATOMIC_RELAXED);
    while (Cur < Release &&
           !__atomic_compare_exchange_n(Flag, &Cur, Release, /*weak=*/true,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
  }
  std::lock_guard<std::mutex> L(T.M);
  SpanTy S{Ctx, {}, Timed && T.SpansWanted.load(std::memory_order_relaxed)};
  if (auto Open = T.OpenSpans.find(Stream); Open != T.OpenSpans.end()) {
    std::swap(S.Pairs, Open->second.Pairs);
    T.OpenSpans.erase(Open);
  }
  if (!S.Span) // no span: its copies' events are free again
    T.recycle(std::exchange(S, SpanTy{Ctx}));
  if (Timed) {
    S.Pairs.push_back({Start, End});
    T.Pending.push_back(std::move(S));
    T.harvest();
  } else {
    for (CUevent E : {Start, End})
      if (E)
        T.Free[Ctx].push_back(E);
  }
  return R;
}

using CopyFnTy = CUresult (*)(CUdeviceptr, const void *, size_t, CUstream);

// Host-to-device copies, timed for the device spans (cuda.h maps the name
// to cuMemcpyHtoDAsync_v2, which the plugin looks up).
extern "C" __attribute__((visibility("default"))) CUresult
cuMemcpyHtoDAsync(CUdeviceptr Dst, const void *Src, size_t Bytes,
                  CUstream Stream) {
  static CopyFnTy Real = real<CopyFnTy>("cuMemcpyHtoDAsync_v2");
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
    if (Timed)
      T.OpenSpans[Stream].Pairs.push_back({B, E});
    else
      T.Free[Ctx].insert(T.Free[Ctx].end(), {B, E});
  }
  return R;
}

namespace {
/// Both collectors: waits outside the lock (a launch may depend on work
/// another thread is about to queue), then moves up to Max times into Ms.
size_t collect(double *Ms, size_t Max, int Wait, bool Spans) {
  TimerTy &T = timer();
  if (Wait) {
    std::vector<CUevent> Ends;
    {
      std::lock_guard<std::mutex> L(T.M);
      for (const SpanTy &S : T.Pending)
        Ends.push_back(S.Pairs.back().second);
    }
    for (CUevent E : Ends)
      cuEventSynchronize(E);
  }
  std::lock_guard<std::mutex> L(T.M);
  T.harvest();
  std::deque<double> &Done = Spans ? T.DoneSpanMs : T.DoneMs;
  size_t N = 0;
  for (; N < Max && !Done.empty(); Done.pop_front())
    Ms[N++] = Done.front();
  return N;
}
} // namespace

extern "C" __attribute__((visibility("default"))) size_t
kle_kernel_timer_collect_spans(double *Ms, size_t Max, int Wait) {
  timer().SpansWanted.store(true, std::memory_order_relaxed);
  return collect(Ms, Max, Wait, /*Spans=*/true);
}

extern "C" __attribute__((visibility("default"))) size_t
kle_kernel_timer_collect(double *Ms, size_t Max, int Wait) {
  return collect(Ms, Max, Wait, /*Spans=*/false);
}
