#!/usr/bin/env bash
# Build the examples against the installed fork (through its CMake package) as
# fat binaries, prove the device sections are there, run every example on
# every available device plus the initial (host fallback) device, and print a
# table. Exit status 0 only if every result is OK or a documented known failure.
set -euo pipefail
source "$(dirname "$0")/common.sh"

ex_build="$KLE_BUILD_DIR/examples"
timeout_s=${KLE_EXAMPLE_TIMEOUT:-30}
known="$KLE_ROOT/examples/KNOWN_FAILURES"

cmake -G Ninja -S "$KLE_ROOT/examples" -B "$ex_build" -DCMAKE_C_COMPILER=clang-22 \
  -DCMAKE_PREFIX_PATH="$KLE_PREFIX" >/dev/null || kle_die "configuring the examples failed."
ninja -C "$ex_build" >/dev/null || kle_die "building the examples failed."

programs=(reduce_sum reduce_minmax reduce_array_section reduce_udr reduce_threads reduce_nowait)

# 1. Every example is one fat binary: host, gfx90a and sm_90 device images.
echo
echo "Offload images per example (llvm-objdump --offloading):"
bad=0
for p in "${programs[@]}"; do
  archs=$(/usr/lib/llvm-22/bin/llvm-objdump --offloading "$ex_build/$p" 2>/dev/null \
    | awk '/^arch/{a=$2} /^triple/{print (a==""?$2:a)}' | sort | tr '\n' ' ')
  printf '  %-22s %s\n' "$p" "$archs"
  for want in gfx90a sm_90 x86_64-unknown-linux-gnu; do
    case " $archs " in *" $want "*) ;; *) echo "  missing $want image in $p"; bad=1 ;; esac
  done
done

# 2. Run everything everywhere.
mapfile -t devices < <("$ex_build/list_devices")
initial=${#devices[@]}
devices+=("$initial initial-device(host-fallback)")

is_known() { # program uid -> prints reason if listed
  [ -f "$known" ] || return 1
  awk -v p="$1" -v u="$2" '!/^#/ && NF>=3 && $1==p && u ~ $2 {$1="";$2=""; sub(/^ +/,""); print; found=1; exit} END{exit !found}' "$known"
}

echo
printf '%-22s %-34s %s\n' "program" "device" "result"
printf '%-22s %-34s %s\n' "-------" "------" "------"
fails=0; oks=0; xfails=0
for p in "${programs[@]}"; do
  for d in "${devices[@]}"; do
    id=${d%% *}; uid=${d#* }
    set +e
    out=$(timeout "$timeout_s" "$ex_build/$p" "$id" 2>&1); rc=$?
    set -e
    if [ $rc -eq 0 ] && grep -q 'RESULT OK' <<<"$out"; then res="OK"; oks=$((oks+1))
    else
      [ $rc -eq 124 ] && why="HANG (killed after ${timeout_s}s)" || why="FAIL (exit $rc)"
      if reason=$(is_known "$p" "$uid"); then res="known failure: $why; $reason"; xfails=$((xfails+1))
      else res="$why"; fails=$((fails+1)); printf '%s\n' "$out" | tail -5 | sed 's/^/      /'; fi
    fi
    printf '%-22s %-34s %s\n' "$p" "$id $uid" "$res"
  done
done
echo
echo "examples: $oks OK, $fails failed, $xfails known failures (see examples/KNOWN_FAILURES)"
[ $fails -eq 0 ] && [ $bad -eq 0 ]
