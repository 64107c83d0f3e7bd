#!/bin/sh
# A kle-bench that fails the way a bad Google Benchmark flag makes it fail
# (test/bench/tool-errors.test): --list-devices and --latency-samples go to
# the real kle-bench ($KLE_REAL_BENCH), and so does the listing kle-compare
# checks its --filter with; every benchmark run gets an
# unrecognized flag, so kle-bench prints its complaint and exits 1, and the
# CUDA driver stand-in then adds its exit report after it.
case "$1" in
  --list-devices|--latency-samples|--launches|--benchmark_list_tests) exec "$KLE_REAL_BENCH" "$@" ;;
esac
exec "$KLE_REAL_BENCH" "$@" --benchmark_no_such_flag=1
