// multi-tu.test: a unit without kernels, only a `declare target` function
// (built by the fork there).
#pragma omp declare target
long twice(long i) { return 2 * i; }
#pragma omp end declare target
