#!/bin/sh
# Runs every self-test case and checks the verdicts:
#   a negative control (overwrite, free, staged-race, red-no-kle, red-buffer,
#     counters-dirty, counters-inkle, no-copy, other-stream, hb-copy-back,
#     hb-kernel-read): must exit 97 with a VIOLATION line
#     matching its ERE (the check's id and name, test/standin/README.md)
#   correct, staged-ok, red-ok, hb-ok, api: must exit 0 with "violations=0"
# Usage: run-selftest.sh <path-to-kle_standin_selftest> [cubin]
set -u
T="$1"; shift
rc_all=0
out=$(mktemp)
want_of() {
  case $1 in
    overwrite) echo "A1 kle-bytes: kernel 'kle_kernel' \(kernel (start|end)\): KLE bytes at dyn_ptr .* changed after the launch" ;;
    free) echo "B lifetime: kernel 'kle_kernel': pinned-host memory .* released by cuMemFreeHost while the launch was pending" ;;
    staged-race) echo "A2 staging-source: kernel 'kle_kernel': the pinned staging source .* was modified after cuMemcpyHtoDAsync" ;;
    red-no-kle) echo "E kle-present: kernel 'red_kernel' has a cross-team reduction but was launched without a KLE" ;;
    red-buffer) echo "D reduction-buffer: kernel 'red_kernel': KLE.ReductionBuffer .* is not 32 bytes of live device memory" ;;
    counters-dirty) echo "Z counters: kernel 'red_kernel': KLE counters .* read 0x3 at kernel start \(must be zero\)" ;;
    no-copy) echo "W arrival: kernel 'kle_kernel': no copy into the device KLE .* was enqueued" ;;
    other-stream) echo "W arrival: kernel 'kle_kernel': device KLE .* was last filled on stream [0-9]+, not on the launch stream" ;;
    hb-copy-back) echo "VIOLATION op: H happens-before: cuMemcpyDtoHAsync of 16 bytes \(stream [0-9]+\) reads .* not ordered after launch #1 'kle_kernel' \(stream [0-9]+\), which uses" ;;
    hb-kernel-read) echo "VIOLATION launch #1: H happens-before: launch #1 'kle_kernel' \(stream [0-9]+\) uses .* not ordered after cuMemcpyHtoDAsync of 16 bytes \(stream [0-9]+\), which writes" ;;
    counters-inkle) echo "Z counters: kernel 'red_kernel': in-KLE reduction counters read 0x2 at kernel start \(must be zero\)" ;;
  esac
}
for c in overwrite free staged-race red-no-kle red-buffer counters-dirty \
         counters-inkle no-copy other-stream hb-copy-back hb-kernel-read \
         correct staged-ok red-ok hb-ok api; do
  if [ "$c" = api ]; then
    KLE_STANDIN_FAIL=cuMemAllocHost:2:2 "$T" "$c" "$@" 2>"$out"; rc=$?
  else
    "$T" "$c" "$@" 2>"$out"; rc=$?
  fi
  [ $rc -eq 77 ] && { echo "SKIP $c"; continue; }
  nviol=$(grep -c 'kle-standin: VIOLATION' "$out")
  want=$(want_of "$c")
  if [ -n "$want" ]; then
    if [ $rc -eq 97 ] && grep 'kle-standin: VIOLATION' "$out" | grep -Eq -- "$want"; then
      echo "PASS $c (rc=$rc, $nviol violation line(s))"
    else
      echo "FAIL $c (rc=$rc, $nviol violation line(s), want $want)"; cat "$out"; rc_all=1
    fi
  else
    if [ $rc -eq 0 ] && [ "$nviol" -eq 0 ] && grep -q 'violations=0' "$out"; then echo "PASS $c";
    else echo "FAIL $c (rc=$rc)"; cat "$out"; rc_all=1; fi
  fi
  grep 'kle-standin: VIOLATION' "$out" | sed 's/^/    /'
done
rm -f "$out"
exit $rc_all
