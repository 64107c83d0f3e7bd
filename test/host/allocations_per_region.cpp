// Heap allocations (operator new) per synchronous target region at steady
// state: a 1-team teams reduction with its own tofrom map on the host
// device, counted by this program's own operator new, which replaces the
// library's for libomptarget too. Each AsyncInfoTy used to construct a
// std::deque for locations most regions never ask for (libstdc++ allocates
// its map and a first node at once), and each region queued a std::function
// holding an empty private-argument manager, and each region's attach
// bookkeeping grew a DenseMap (aligned operator new, through LLVM's
// allocate_buffer): 9 per region before patch 0026, 5 after. And the memory
// manager's free lists (a std::multiset) allocated a node for each device
// block returned to them: 4 since patch 0029. A map entry's states were a
// second allocation (3 since patch 0030) and the map's tree node a third
// (2 since patch 0031), and targetDataEnd allocated the list its
// post-processing works through (1 since patch 0040, which keeps the last
// one for the next). The count bounds what the runtime allocates per region:
// the map entry.
// RUN: %clang-host -O2 -std=c++17 %s -o %t -lstdc++
// RUN: %run %t | %fc
// CHECK: operator new per region: {{[0-9.]+}}, at most 1: yes
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
static std::atomic<long> News;
void *operator new(std::size_t N) {
  News.fetch_add(1, std::memory_order_relaxed);
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void *operator new(std::size_t N, std::align_val_t A) {
  News.fetch_add(1, std::memory_order_relaxed);
  std::size_t Al = static_cast<std::size_t>(A);
  if (void *P = std::aligned_alloc(Al, (N + Al - 1) / Al * Al))
    return P;
  throw std::bad_alloc();
}
void operator delete(void *P) noexcept { std::free(P); }
void operator delete(void *P, std::size_t) noexcept { std::free(P); }
void operator delete(void *P, std::align_val_t) noexcept { std::free(P); }
void operator delete(void *P, std::size_t, std::align_val_t) noexcept {
  std::free(P);
}
static long region() {
  long S = 0;
#pragma omp target teams distribute parallel for num_teams(1) reduction(+ : S) map(tofrom : S)
  for (int I = 0; I < 64; ++I)
    S += 1;
  return S;
}
int main() {
  long T = region();
  long A = News.load();
  for (int K = 0; K < 100; ++K)
    T += region();
  long B = News.load();
  std::printf("operator new per region: %ld.%02ld, at most 1: %s (sum %ld)\n",
              (B - A) / 100, (B - A) % 100, B - A <= 100 ? "yes" : "no", T);
  return 0;
}
