#!/usr/bin/env bash
# Run the driver stand-in tests (test/lifecycle, test/handshake,
# test/steady-state, test/waits, test/races, the injected driver failures of
# test/faults, the transport's knob and switch of test/knobs, the HSA
# examples: san_tests below; two long repetition tests left out) against
# libomptarget (CUDA, AMDGPU and host plugins) built with AddressSanitizer
# and with ThreadSanitizer.
# The test programs themselves are not instrumented (except
# test/races/tsan_user_race.c, whose user code must be); the
# sanitizer runtime is preloaded. Any report fails the run (halt_on_error, exit code 86).
# KLE_SANITIZERS (default "address thread seeded") selects the sanitizers.
# "seeded" is the negative control for ThreadSanitizer: the ThreadSanitizer
# build with a library preloaded that interposes the slot pool's take and
# recycle and increments a plain counter in each (test/races/seed-pool-race.cpp); the
# 16-thread and a nowait stand-in test must then report that race, with the
# same suppressions (test/races/tsan.supp). The preload goes into the CUDA
# stand-in's runs only (%standin-env), so it proves TSan sees the pool's
# threads through the CUDA plugin; the AMDGPU plugin's runs are not seeded.
set -uo pipefail
source "$(dirname "$0")/common.sh"

lit_san() { # sanitizer build-dir-name test...
  local san=$1 dir=$2; shift 2
  /usr/lib/llvm-22/bin/lit -sv --param KLE_PREFIX="$KLE_PREFIX" --param KLE_BUILD_DIR="$KLE_BUILD_DIR" \
    --param KLE_SANITIZER="$san" --param KLE_SANITIZER_BUILD="$dir" "$@"
}

t=$KLE_ROOT/test
san_tests=("$t/lifecycle" "$t/handshake" "$t/steady-state" "$t/waits" "$t/races"
  "$t/faults/fallback-alloc-failure.test" "$t"/faults/fail_*.c
  "$t/knobs/transport-env.test" "$t/knobs/switch-in-flight.test"
  "$t/contract/negative_controls.c" "$t/examples/hsa-standin.test")
rc=0
for san in ${KLE_SANITIZERS:-address thread seeded}; do
  case $san in address|thread|seeded) ;; *) kle_die "unknown sanitizer '$san' in KLE_SANITIZERS (valid: address thread seeded)";; esac
  if [ "$san" = seeded ]; then
    echo "== libomptarget with -fsanitize=thread and a seeded slot-pool race (must be reported)"
    ninja -C "$KLE_BUILD_DIR" offload-thread cuda-standin-thread seed-pool-race > "$KLE_BUILD_DIR/test/seed-pool-race.build.log" 2>&1 \
      || { echo "building the seeded slot-pool race failed (see $KLE_BUILD_DIR/test/seed-pool-race.build.log)"; rc=1; continue; }
    for t in threads_16.c nowait_32.c; do
      log="$KLE_BUILD_DIR/test/sanitizer-seeded-${t%.c}.log"
      reports="$KLE_BUILD_DIR/test/sanitizer-seeded-${t%.c}.reports"
      rm -rf "$reports"; mkdir -p "$reports"
      lit_san thread offload-thread --param KLE_SANITIZER_LOG="$reports/tsan" \
        --param KLE_SANITIZER_PRELOAD="$KLE_BUILD_DIR/test/seed-pool-race/libkle-seed-pool-race.so" \
        "$KLE_ROOT/test/lifecycle/$t" > "$log" 2>&1
      # With halt_on_error a report ends the program: every program of the
      # test that reported must have reported the seeded race (on the global
      # kle_seed_pool_race), so no other report came first.
      n=$(cat "$reports"/tsan.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer')
      seeded=$(cat "$reports"/tsan.* 2>/dev/null | grep -c "Location is global 'kle_seed_pool_race'")
      if [ "$n" -gt 0 ] && [ "$n" = "$seeded" ]; then
        echo "seeded race reported: lifecycle/$t ($n runs; reports in $reports)"
      else
        echo "SEEDED RACE NOT REPORTED: lifecycle/$t ($seeded of $n reports; see $log, $reports)"; rc=1
      fi
    done
    continue
  fi
  echo "== libomptarget with -fsanitize=$san"
  targets="offload-$san"; [ "$san" = thread ] && targets="$targets cuda-standin-thread hsa-standin-thread"
  ninja -C "$KLE_BUILD_DIR" $targets > "$KLE_BUILD_DIR/test/offload-$san.build.log" 2>&1 \
    || { echo "building the $san-sanitized libomptarget failed (see $KLE_BUILD_DIR/test/offload-$san.build.log)"; rc=1; continue; }
  # Left out: the two tests that repeat one path thousands of times to bound
  # memory (nowait_10000: 10,000 nowait launches per transport and stand-in;
  # slot_buffers_bounded: slot buffers under cuMemGetInfo), the longest of
  # the plain lit suite (24-38 s each on 2 idle cores, several times that
  # under a sanitizer); nowait_32, threads_16 and
  # threads_nowait_400 run the same launch and completion paths here.
  lit_san "$san" "offload-$san" --filter-out 'nowait_10000|slot_buffers_bounded' \
    "${san_tests[@]}" \
    > "$KLE_BUILD_DIR/test/sanitizer-$san.log" 2>&1 || rc=1
  grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|^  (Passed|Failed|Expectedly|Unsupported)' "$KLE_BUILD_DIR/test/sanitizer-$san.log"
done
exit $rc
