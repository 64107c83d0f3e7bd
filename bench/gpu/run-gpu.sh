#!/usr/bin/env bash
# kle-offload's one-shot GPU run (docs/GPU-RUN.md) from a bundle that
# bench/gpu/gpu-bundle.sh built, on a machine with an NVIDIA driver and python3.
# Usage: run-gpu.sh [RESULTS_DIR]   (default: $OUT if set, else ./kle-results)
# Tunables (docs/ENVIRONMENT.md) are checked before anything runs.
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
R=${1:-${OUT:-$PWD/kle-results}}
[ -x "$B/bin/kle-bench" ] && [ -f "$B/MANIFEST" ] \
  || { echo "kle-offload: error: $B is not a kle-offload GPU bundle (no bin/kle-bench or MANIFEST); build it with bench/gpu/gpu-bundle.sh" >&2; exit 1; }
mkdir -p "$R" || { echo "kle-offload: error: cannot create $R" >&2; exit 1; }
exec 3>&1 4>&2
exec > >(tee -a "$R/run.log") 2>&1
tee_pid=$!
# Let tee write the log's last lines before the script ends.
finish() { exec 1>&3 2>&4; wait "$tee_pid" 2>/dev/null; }
die() { echo "kle-offload: error: $*"; finish; exit 1; }
t0=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - t0 )) s] $*"; }

command -v python3 >/dev/null || die "python3 is needed for the comparison"

# tunable NAME VAR DEFAULT (MIN|pos) WANT: $VAR (else DEFAULT) into NAME.
tunable() {
  local v=${!2:-$3}
  if [ "$4" = pos ]; then [[ $v =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ && $v =~ [1-9] ]]
  else [[ $v =~ ^[0-9]{1,9}$ ]] && [ $((10#$v)) -ge "$4" ] && v=$((10#$v)); fi \
    || die "$2=$v: want $5"
  printf -v "$1" %s "$v"
}
tunable min_time KLE_MIN_TIME 0.05 pos "a positive number of seconds per benchmark (for example 0.1)"
tunable cycles KLE_CYCLES 1000 3 "a whole number of interleaved cycles per benchmark, at least 3"
tunable test_timeout KLE_TEST_TIMEOUT 30 1 "a whole number of seconds per GPU test run, at least 1"
tunable run_timeout KLE_RUN_TIMEOUT 120 1 "a whole number of seconds per kle-bench run, at least 1"
tunable ab_rounds KLE_AB_ROUNDS 2 1 "a whole number of DeviceRTL A/B rounds, at least 1"
force=${KLE_FORCE:-0}
[[ $force =~ ^[01]$ ]] || die "KLE_FORCE=$force: want 1 (run a plan over one 8-minute call) or 0"
tunable ab_min_time KLE_AB_MIN_TIME 0.05 pos "a positive number of seconds per benchmark (for example 0.05)"

# The plan's time on an H200: GPU tests 8 s; interleaved: (cycles + 20) x 11
# units x (2 launches at 100 us + 64 pipelined at 40 us), two passes; KLE
# stats 10 s; the A/B 50 s per round at 0.05 s, and 20 s of read benchmark.
est=$(awk -v c="$cycles" -v ar="$ab_rounds" -v am="$ab_min_time" 'BEGIN {
  il = 2 * ((c + 20) * 11 * (2 * 100e-6 + 64 * 40e-6) + 1)
  ab = ar * 50 * am / 0.05 + 20
  printf "%d %d %d %d", 8 + il + 10, il, ab, 8 + il + 10 + ab }')
read -r est_main est_il est_ab est_total <<< "$est"
echo "kle-offload: plan: GPU tests, interleaved comparison ($cycles cycles, 2 passes, about $est_il s), KLE stats: about $est_main s on an H200 ($( [ "$est_main" -le 360 ] && echo "within" || echo "OVER") the 6-minute plan); then the DeviceRTL A/B ($ab_rounds rounds) and the read microbenchmark, about $est_ab s: $est_total s in all ($( [ "$est_total" -le 480 ] && echo "within" || echo "OVER") one 8-minute call)"
if [ "$est_total" -gt 480 ]; then
  [ "$force" = 1 ] || die "the plan takes about $est_total s on an H200, over one 8-minute call (480 s): lower KLE_CYCLES, KLE_AB_ROUNDS or KLE_AB_MIN_TIME, or set KLE_FORCE=1 to run it anyway"
  echo "kle-offload: note: KLE_FORCE=1: running a plan over one 8-minute call"
fi

# The C/C++ runtime the bundle needs (the MANIFEST's "needs:" line).
for need in $(sed -n 's/^needs: //p' "$B/MANIFEST"); do
  case $need in
    GLIBC_*)
      have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
      [ -n "$have" ] || { echo "kle-offload: note: cannot read the C library's version; the bundle needs $need"; continue; }
      [ "$(printf '%s\n%s\n' "${need#GLIBC_}" "$have" | sort -V | head -1)" = "${need#GLIBC_}" ] \
        || die "this machine's glibc is $have, the bundle needs ${need#GLIBC_} or newer ($need): build the bundle on an older distribution" ;;
    GLIBCXX_*|CXXABI_*)
      cxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
      [ -n "$cxx" ] || { echo "kle-offload: note: no libstdc++.so.6 in the loader cache; the bundle needs $need"; continue; }
      grep -aqw "$need" "$cxx" \
        || die "this machine's $cxx does not provide $need, which the bundle needs: build the bundle on an older distribution" ;;
  esac
done

# The CUDA plugin dlopen()s "libcuda.so": point that name at the real driver
# (KLE_CUDA_DRIVER, else found; never the toolkit's stubs/ or compat/).
drv=${KLE_CUDA_DRIVER:-}
[ -z "$drv" ] || [ -e "$drv" ] || die "KLE_CUDA_DRIVER=$drv does not exist"
[ -z "$drv" ] || drv=$(readlink -f "$drv")
[ -n "$drv" ] || for d in /usr/local/nvidia/lib64/libcuda.so.1 \
         $(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/{print $NF}') \
         /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1; do
  case $d in */stubs/*|*/compat/*) continue ;; esac
  if [ -e "$d" ]; then drv=$d; break; fi
done
[ -n "$drv" ] || die "no NVIDIA driver library (libcuda.so.1) found; is the driver installed and visible?"
drvdir=$(mktemp -d)
trap 'rm -rf "$drvdir"' EXIT
for l in libcuda.so libcuda.so.1; do ln -s "$drv" "$drvdir/$l"; done
export LD_LIBRARY_PATH="$B/lib:$drvdir:$(dirname "$drv")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Asks the driver directly (ctypes): "load": why it is not a CUDA driver;
# "count": what cuInit and cuDeviceGetCount answer.
ask_driver() {
  python3 - "$drv" "$1" 2>&1 <<'PY' | head -1
import sys
try:
    import ctypes
    lib = ctypes.CDLL(sys.argv[1])
except ImportError:
    sys.exit(0)  # cannot tell; the plugin will
except OSError as e:
    sys.exit("cannot be loaded: %s" % e)
if sys.argv[2] == "load":
    sys.exit(0 if hasattr(lib, "cuInit") else "is not a CUDA driver (no cuInit)")
def name(r):
    s = ctypes.c_char_p()
    ok = hasattr(lib, "cuGetErrorName") and lib.cuGetErrorName(r, ctypes.byref(s)) == 0
    return "%d %s" % (r, s.value.decode()) if ok and s.value else str(r)
try:
    r, n = lib.cuInit(0), ctypes.c_int(-1)
    print("cuInit(0) returned %s" % name(r) if r else "cuInit(0) succeeded; cuDeviceGetCount "
          "returned %s, %d devices" % (name(lib.cuDeviceGetCount(ctypes.byref(n))), n.value))
except Exception as e:
    print("asking the driver directly failed: %s" % e)
PY
}
drv_from=${KLE_CUDA_DRIVER:+ (KLE_CUDA_DRIVER)}
why=$(ask_driver load) || die "the driver library $drv$drv_from ${why:-cannot be loaded}"
export KLE_GIT_REV=$(sed -n 's/^git: //p' "$B/MANIFEST")

step "machine"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm)"
  echo "driver library: $drv -> $(readlink -f "$drv")"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
  else echo "nvidia-smi: not on PATH"; fi
  echo; cat "$B/MANIFEST"
} | tee "$R/machine.txt"

status() { # exit status -> words
  case $1 in 124) echo "timed out after $run_timeout s (KLE_RUN_TIMEOUT)" ;; *) echo "exit status $1" ;; esac
}
# run_step PREFIX PATTERN WHAT CMD...: CMD's lines matching PATTERN into compare.txt.
run_step() {
  local prefix=$1 pat=$2 what=$3 rc
  shift 3
  timeout "$run_timeout" "$@" > "$drvdir/out" 2>&1
  rc=$?
  { grep -E "$pat" "$drvdir/out" | head -40
    [ $rc = 0 ] || echo "kle-offload: warning: $what failed: $(status $rc)"
  } | sed "s/^/$prefix/" | tee -a "$R/compare.txt"
}

step "devices"
timeout "$run_timeout" "$B/bin/kle-bench" --list-devices > "$drvdir/devs" 2> "$drvdir/devs.err"
rc=$?
cat "$drvdir/devs" "$drvdir/devs.err"
[ $rc = 0 ] || die "kle-bench --list-devices failed: $(status $rc) (driver $drv); see the lines above"
if ! grep -q ' CUDA-' "$drvdir/devs"; then
  listed=$(grep -v '^[[:space:]]*$' "$drvdir/devs" | head -4 | tr '\n' ';' | sed 's/;$//; s/;/; /g')
  die "the CUDA plugin found no GPU with driver $drv$drv_from: kle-bench --list-devices listed ${listed:-no device}; the driver itself says: $(ask_driver count). Check nvidia-smi, that the driver library matches the kernel module, and CUDA_VISIBLE_DEVICES${CUDA_VISIBLE_DEVICES+ (set to '$CUDA_VISIBLE_DEVICES')}"
fi

step "GPU tests (checked on the build machine: bench/gpu/gpu-bundle.sh verify)"
n=0
: > "$R/gpu-tests.txt"
while IFS=$'\t' read -r test envs prefixes; do
  [ -n "$test" ] || continue
  # shellcheck disable=SC2086 # $envs is a list of K=V words
  env $envs timeout "$test_timeout" "$B/bin/gpu-tests/${test%.c}" < /dev/null > "$drvdir/out" 2>&1
  rc=$?
  { echo "=== $n $test rc=$rc"; cat "$drvdir/out"; } >> "$R/gpu-tests.txt"
  echo "  $test [${envs:-default}]: exit status $rc"
  n=$((n + 1))
done < "$B/gpu-tests.plan"

klebench() { python3 "$B/bench/klebench.py" "$@"; }
step "interleaved comparison (one process, transports, waits and the floor switched per launch)"
klebench compare --bench "$B/bin/kle-bench" --waits poll,block --cycles "$cycles" \
  --kernel-times "$B/lib/kernel-timer" --timeout "$run_timeout" --out "$R" | tee "$R/compare.txt"
[ "${PIPESTATUS[0]}" = 0 ] || echo "kle-offload: warning: the interleaved comparison failed (see above); going on"
rm -f "$R/kle-interleaved.csv" # the JSON has every figure

step "plot"
klebench plot "$R/kle-interleaved.json" -o "$R/kle-interleaved.png" || echo "kle-offload: warning: no plot (see above)"

transports=$(klebench transports)
[ -n "$transports" ] || echo "kle-offload: warning: no transport list from $B/bench/klebench.py: no KLE stats" | tee -a "$R/compare.txt"
step "KLE stats, 1000 synchronous launches per transport"
for t in $transports; do
  LIBOMPTARGET_KLE_TRANSPORT=$t LIBOMPTARGET_KLE_STATS=1 run_step "  $t: " 'KLE stats|checksum' \
    "kle-bench --launches 1000" "$B/bin/kle-bench" --launches 1000
done
pipelined=("kle-bench PipelinedReduction" "$B/bin/kle-bench" --benchmark_filter='^PipelinedReduction'
  --benchmark_min_time="$min_time")
step "KLE stats, PipelinedReduction (256 nowait launches per iteration, KLE_MIN_TIME s)"
for t in $transports; do
  LIBOMPTARGET_KLE_TRANSPORT=$t LIBOMPTARGET_KLE_STATS=1 run_step "  $t: " 'KLE stats|^PipelinedReduction' "${pipelined[@]}"
done
step "nowait completion: LIBOMPTARGET_NOWAIT_DEFER=1 (completer) vs 0 (re-run tasks), PipelinedReduction"
for round in 1 2; do
  for d in 1 0; do
    LIBOMPTARGET_NOWAIT_DEFER=$d run_step "  round $round, defer=$d: " '^PipelinedReduction' "${pipelined[@]}"
  done
done
step "DeviceRTL A/B: asynchronous (kle-bench) vs synchronous (kle-bench-syncread) KLE read, kernel-only"
if [ -x "$B/bin/kle-bench-syncread" ]; then
  klebench compare --ab async="$B/bin/kle-bench" --ab sync="$B/bin/kle-bench-syncread" \
    --rounds "$ab_rounds" --min-time "$ab_min_time" --kernel-times "$B/lib/kernel-timer" \
    --timeout "$run_timeout" --json "$R/readpath.json" 2>&1 | tee -a "$R/compare.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || echo "kle-offload: warning: the DeviceRTL A/B failed (see above)" | tee -a "$R/compare.txt"
else
  echo "kle-offload: note: no bin/kle-bench-syncread in this bundle: no DeviceRTL A/B"
fi
step "zero-copy read microbenchmark (bin/zerocopy-read)"
if [ -x "$B/bin/zerocopy-read" ]; then
  run_step "  " . zerocopy-read "$B/bin/zerocopy-read"
  ncu=$(command -v ncu || true)
  [ -n "$ncu" ] || [ ! -x /usr/local/cuda/bin/ncu ] || ncu=/usr/local/cuda/bin/ncu
  for m in ${ncu:+same lines}; do
    run_step "  ncu $m: " 'read16|lts__t_sectors|==ERR|==WARNING' "ncu on zerocopy-read --only $m" \
      "$ncu" --kernel-name read16 --metrics \
      lts__t_sectors_srcunit_tex_aperture_sysmem_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read_lookup_miss.sum \
      "$B/bin/zerocopy-read" --only "$m"
  done
  [ -n "$ncu" ] || echo "  no ncu on PATH or in /usr/local/cuda/bin: no L2 sysmem hit/miss counters" | tee -a "$R/compare.txt"
else
  echo "kle-offload: note: no bin/zerocopy-read in this bundle"
fi
step "done"
finish
