#!/usr/bin/env bash
# Run the driver stand-in tests (test/standin/cuda/lit, test/standin/hsa/lit,
# test/transport)
# against libomptarget built with AddressSanitizer and with ThreadSanitizer.
# The test programs themselves are not instrumented; the sanitizer runtime is
# preloaded. Any report fails the run (halt_on_error, exit code 86).
# KLE_SANITIZERS (default "address thread") selects the sanitizers.
set -uo pipefail
source "$(dirname "$0")/common.sh"

rc=0
for san in ${KLE_SANITIZERS:-address thread}; do
  case $san in address|thread) ;; *) kle_die "unknown sanitizer '$san' in KLE_SANITIZERS (valid: address thread)";; esac
  echo "== libomptarget with -fsanitize=$san"
  targets="offload-$san"; [ "$san" = thread ] && targets="$targets cuda-standin-thread hsa-standin-thread"
  ninja -C "$KLE_BUILD_DIR" $targets > "$KLE_BUILD_DIR/test/offload-$san.build.log" 2>&1 \
    || { echo "building the $san-sanitized libomptarget failed (see $KLE_BUILD_DIR/test/offload-$san.build.log)"; rc=1; continue; }
  /usr/lib/llvm-22/bin/lit -sv --param KLE_PREFIX="$KLE_PREFIX" --param KLE_BUILD_DIR="$KLE_BUILD_DIR" \
    --param KLE_SANITIZER="$san" "$KLE_ROOT/test/standin/cuda/lit" "$KLE_ROOT/test/standin/hsa/lit" "$KLE_ROOT/test/transport" \
    > "$KLE_BUILD_DIR/test/sanitizer-$san.log" 2>&1 || rc=1
  grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|^  (Passed|Failed|Expectedly|Unsupported)' "$KLE_BUILD_DIR/test/sanitizer-$san.log"
done
exit $rc
