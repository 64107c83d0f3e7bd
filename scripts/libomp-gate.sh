#!/usr/bin/env bash
# Regression gate for the fork's host OpenMP runtime: upstream's libomp lit
# suite (openmp/runtime/test from the pinned base) against the fork's libomp,
# for the directories CI time allows (KLE_LIBOMP_TEST_DIRS), compared with
# test/upstream/libomp-known-failures.txt. Results: $KLE_BUILD_DIR/libomp-tests.log
set -uo pipefail
source "$(dirname "$0")/common.sh"

dirs=${KLE_LIBOMP_TEST_DIRS:-"teams parallel tasking/hidden_helper_task target misc_bugs barrier critical"}
suite="$KLE_BUILD_DIR/libomp/runtime/test"
[ -f "$suite/lit.site.cfg" ] || kle_die "no libomp test suite at $suite; run scripts/setup.sh first."
known="$KLE_ROOT/test/upstream/libomp-known-failures.txt"
log="$KLE_BUILD_DIR/libomp-tests.log"

ninja -C "$KLE_BUILD_DIR/libomp" libomp-test-depends >/dev/null || kle_die "building libomp's test dependencies failed."
(cd "$suite" && /usr/lib/llvm-22/bin/lit -v --no-progress-bar -j "$(nproc)" $dirs) > "$log" 2>&1

echo "libomp suite ($dirs):"
kle_gate_report "$log" "$known" libomp
rc=0
[ "$KLE_GATE_PASSED" -gt 0 ] || { echo "GATE FAILED: no test passed"; rc=1; }
[ "$KLE_GATE_UNEXPECTED" -eq 0 ] || rc=1
exit $rc
