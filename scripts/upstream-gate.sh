#!/usr/bin/env bash
# Regression gate: run upstream's x86_64 offload lit suite (from the pinned
# base, against the fork's build) and compare with test/upstream/baseline.txt:
#   - at least MIN_PASS tests pass (193 on unmodified 22.1.8),
#   - every failing test is listed in test/upstream/known-failures.txt with
#     its reason; any other failure fails the gate.
# Results: $KLE_BUILD_DIR/upstream-x86_64.log
set -uo pipefail
source "$(dirname "$0")/common.sh"

triple=x86_64-unknown-linux-gnu
suite="$KLE_BUILD_DIR/offload/test/$triple"
[ -f "$suite/lit.site.cfg" ] || kle_die "no upstream test suite at $suite; run scripts/setup.sh first."
known="$KLE_ROOT/test/upstream/known-failures.txt"
min_pass=$(sed -n -E 's/^MIN_PASS=([0-9]+).*/\1/p' "$KLE_ROOT/test/upstream/baseline.txt")
log="$KLE_BUILD_DIR/upstream-x86_64.log"

# Make sure the tests' dependencies (libomptarget, plugins) are current.
ninja -C "$KLE_BUILD_DIR/offload" omptarget llvm-offload-device-info >/dev/null || kle_die "building libomptarget for the upstream suite failed."
/usr/lib/llvm-22/bin/lit -v --no-progress-bar -j "$(nproc)" "$suite" > "$log" 2>&1

kle_gate_report "$log" "$known" libomptarget
echo "upstream x86_64 suite: baseline minimum $min_pass passes"
rc=0
if [ "$KLE_GATE_PASSED" -lt "$min_pass" ]; then echo "GATE FAILED: fewer passes than the baseline"; rc=1; fi
[ "$KLE_GATE_UNEXPECTED" -eq 0 ] || rc=1
exit $rc
