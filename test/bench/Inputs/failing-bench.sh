#!/bin/sh
# A kle-bench that fails the way an argument it does not take makes it fail
# (test/bench/tool-errors.test): --list-devices goes to the real kle-bench
# ($KLE_REAL_BENCH); every --interleave run gets an argument kle-bench
# refuses, so it prints its complaint and exits 2, and the CUDA driver
# stand-in then adds its exit report after it.
case "$1" in
  --list-devices) exec "$KLE_REAL_BENCH" "$@" ;;
esac
exec "$KLE_REAL_BENCH" "$@" --no-such-flag
