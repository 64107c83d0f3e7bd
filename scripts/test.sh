#!/usr/bin/env bash
# Run kle-offload's tests against the installed fork:
#   1. unit tests (GoogleTest) of the project's own components,
#   2. the project's lit suite (test/),
#   3. the upstream x86_64 offload lit suite from the pinned base, as a
#      regression gate against test/upstream/baseline.txt,
#   4. a subset of upstream's libomp lit suite against the fork's libomp,
#   5. (opt-in, "sanitizers") the CUDA and HSA stand-in tests against ASan and TSan
#      builds of libomptarget; .ci/run adds it when CI time allows;
#   6. (opt-in, "bundle") build and check the relocatable GPU bundle
#      (bench/gpu/gpu-bundle.sh) and run its one-shot script on the CUDA stand-in;
#      .ci/run adds it too when time allows,
#   7. (opt-in, "faults") the full fault sweep over both driver stand-ins
#      (test/faults): every driver entry point failing at each
#      distinct lifecycle position, under every transport, and bad knob
#      values; prints its table and totals (the lit suite runs a fixed sample).
# Prints a closing "tests: N passed, N failed" line and exits
# non-zero on any failure. KLE_TEST_SUITES (default "unit lit upstream libomp")
# selects suites. KLE_TEST_DEADLINE (epoch seconds; .ci/run sets it) skips an
# opt-in suite (sanitizers, bundle, faults) that would end after it, judged
# from this run's lit suite (sanitizers about 2.2x its time, bundle 0.8x,
# faults 0.7x; without a lit run, 900, 350 and 300 s); a skipped suite is
# printed as such and counted neither way.
set -uo pipefail
source "$(dirname "$0")/common.sh"

[ -f "$KLE_PREFIX/share/kle-offload/kle-offload.cfg" ] \
  || kle_die "the fork is not installed in $KLE_PREFIX; run scripts/setup.sh first."
# Unset: the default suites; set but empty (KLE_TEST_SUITES=""): an error below.
suites=${KLE_TEST_SUITES-unit lit upstream libomp}
[ -n "${suites// /}" ] || kle_die "KLE_TEST_SUITES is empty; name one or more of: unit lit upstream libomp sanitizers bundle faults."
for s in $suites; do
  case $s in unit|lit|upstream|libomp|sanitizers|bundle|faults) ;;
  *) kle_die "unknown suite '$s' in KLE_TEST_SUITES (valid: unit lit upstream libomp sanitizers bundle faults)" ;;
  esac
done
lit=/usr/lib/llvm-22/bin/lit
passed=0; failed=0; summary=()

count() { # label passed failed (the suite's seconds since suite_start)
  passed=$((passed + $2)); failed=$((failed + $3))
  summary+=("$1: $2 passed, $3 failed ($(( $(date +%s) - suite_start )) s)")
}

print_failures() { # lit-output-file: the last 40 lines of each failed test's report
  # (CI keeps only what this script prints, not the log file).
  awk '/^[*]+ TEST .* FAILED [*]+$/ { on = 1; n = 0 }
       on { buf[n++ % 40] = $0 }
       on && /^[*]+$/ { on = 0; s = n > 40 ? n - 40 : 0
         if (s) print "  ... (" s " lines of this report left out; the whole log: '"$1"')"
         for (i = s; i < n; i++) print "  | " buf[i % 40] }' "$1"
}
lit_counts() { # lit-output-file -> "passed failed"
  local p f
  p=$(grep -E '^ *(Passed|Expectedly Failed) *: ' "$1" | awk -F: '{s+=$2} END{print s+0}')
  f=$(grep -E '^ *(Failed|Unexpectedly Passed|Unresolved|Timed Out) *: ' "$1" | awk -F: '{s+=$2} END{print s+0}')
  echo "$p $f"
}

lit_s=""
# fits suite: true unless KLE_TEST_DEADLINE is set and the suite's estimate
# (above) would end after it; then prints why and records it as skipped.
fits() {
  [ -n "${KLE_TEST_DEADLINE:-}" ] || return 0
  local est
  case $1 in
    sanitizers) est=${lit_s:+$(( lit_s * 22 / 10 ))}; est=${est:-900} ;;
    bundle) est=${lit_s:+$(( lit_s * 8 / 10 ))}; est=${est:-350} ;;
    faults) est=${lit_s:+$(( lit_s * 7 / 10 ))}; est=${est:-300} ;;
    *) return 0 ;;
  esac
  local left=$(( KLE_TEST_DEADLINE - $(date +%s) ))
  [ "$est" -le "$left" ] && return 0
  echo "== $1: skipped: about $est s on this machine, $left s left before KLE_TEST_DEADLINE"
  summary+=("$1: skipped (about $est s, $left s left before KLE_TEST_DEADLINE)")
  return 1
}

for s in $suites; do
  suite_start=$(date +%s)
  fits "$s" || continue
  case $s in
  unit)
    echo "== unit tests (GoogleTest; plain, ThreadSanitizer, AddressSanitizer)"
    for d in unit unit-thread unit-address cuda-standin hsa-standin; do
      suite_start=$(date +%s)
      bd="$KLE_BUILD_DIR/test/$d"
      if [ ! -f "$bd/CTestTestfile.cmake" ]; then
        echo "$d: not built (run scripts/setup.sh)"; count "$d" 0 1; continue
      fi
      out="$KLE_BUILD_DIR/test/$d.log"
      (cd "$bd" && ctest --output-on-failure --timeout 300) > "$out" 2>&1
      line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -1)
      echo "$d: ${line:-no ctest summary (see $out)}"
      total=$(sed -n -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/p' <<<"$line")
      nfail=$(sed -n -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/p' <<<"$line")
      if [ -z "$total" ]; then count "$d" 0 1; tail -20 "$out"; continue; fi
      [ "$nfail" -gt 0 ] && grep -E '^ *[0-9]+ - .*\(Failed|\(Timeout|\(SEGFAULT|Exception' "$out"
      count "$d" $((total - nfail)) "$nfail"
    done ;;
  lit)
    echo "== kle-offload lit suite"
    out="$KLE_BUILD_DIR/lit-tests.log"
    "$lit" -sv --param KLE_PREFIX="$KLE_PREFIX" --param KLE_BUILD_DIR="$KLE_BUILD_DIR" \
      "$KLE_ROOT/test" > "$out" 2>&1
    grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):' "$out"
    print_failures "$out"
    sed -n '/^Total Discovered/,$p' "$out"
    lit_s=$(( $(date +%s) - suite_start ))
    count lit $(lit_counts "$out") ;;
  upstream)
    echo "== upstream offload lit suite (x86_64), gate: test/upstream/baseline.txt"
    "$KLE_ROOT/scripts/upstream-gate.sh"; rc=$?
    [ $rc -eq 0 ] && count upstream-gate 1 0 || count upstream-gate 0 1 ;;
  libomp)
    echo "== upstream libomp lit suite (subset), gate: test/upstream/libomp-known-failures.txt"
    "$KLE_ROOT/scripts/libomp-gate.sh"; rc=$?
    [ $rc -eq 0 ] && count libomp-gate 1 0 || count libomp-gate 0 1 ;;
  sanitizers)
    echo "== CUDA and HSA stand-in tests against ASan and TSan builds of libomptarget"
    "$KLE_ROOT/scripts/sanitizer-check.sh"; rc=$?
    [ $rc -eq 0 ] && count sanitizers 1 0 || count sanitizers 0 1 ;;
  bundle)
    echo "== relocatable GPU bundle: build, check, one-shot script on the CUDA stand-in"
    if "$KLE_ROOT/bench/gpu/gpu-bundle.sh" build; then
      out="$KLE_BUILD_DIR/lit-bundle.log"
      "$lit" -sv --param KLE_PREFIX="$KLE_PREFIX" --param KLE_BUILD_DIR="$KLE_BUILD_DIR" \
        "$KLE_ROOT/test/bench/gpu-bundle-standin.test" > "$out" 2>&1
      grep -E '^(FAIL|UNSUPPORTED|UNRESOLVED):' "$out"
      sed -n '/^Total Discovered/,$p' "$out"
      if grep -q '^UNSUPPORTED:' "$out"; then count bundle 0 1; else count bundle $(lit_counts "$out"); fi
    else
      count bundle 0 1
    fi ;;
  faults)
    echo "== fault sweep over the CUDA and HSA driver stand-ins (test/faults)"
    out="$KLE_BUILD_DIR/fault-sweep.log"
    python3 "$KLE_ROOT/test/faults/fault-sweep.py" --prefix "$KLE_PREFIX" \
      --build "$KLE_BUILD_DIR" --work "$KLE_BUILD_DIR/fault-sweep" > "$out" 2> "$out.bad"; rc=$?
    cat "$out"
    [ $rc -eq 0 ] || head -c 20000 "$out.bad"
    [ $rc -eq 0 ] && count faults 1 0 || count faults 0 1 ;;
  esac
done

echo
for l in "${summary[@]}"; do echo "  $l"; done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
