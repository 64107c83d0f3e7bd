#!/usr/bin/env bash
# BabelStream's OpenMP target model (a checkout you cloned) against the
# installed fork, run under each KLE transport over rounds with a small array:
# per kernel and transport the median over rounds and the ratio to copy
# (docs/BABELSTREAM.md).
# shellcheck disable=SC2015  # "a && b || kle_die": kle_die exits
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/../../scripts/common.sh"

usage() {
  cat <<'EOF'
usage: bench/gpu/babelstream.sh [options] [BABELSTREAM_DIR] [-- BABELSTREAM_ARGS...]

  BABELSTREAM_DIR   a BabelStream checkout (default: $BABELSTREAM_DIR)
  --arch ARCH       offload target: sm_NN (default sm_90), gfxNNN, or x86_64
                    (the host device: a plumbing check only, no KLE there)
  -s, --size N      elements per array (default 1024)
  -n, --numtimes N  iterations per run, BabelStream's -n (default 100)
  --rounds R        runs per transport, order alternated (default 5)
  --build-dir DIR   default $KLE_BUILD_DIR/babelstream/<arch>
  --standin DIR     run on the CUDA driver stand-in in DIR (libcuda.so.1):
                    exercises the real CUDA plugin and transports with no GPU;
                    kernels compute nothing (host-side overhead only)
  --build-only      build and check the binary, run nothing
  --no-build        reuse the binary already in the build directory (then
                    the checkout and the prefix are optional)
  --runtime-lib DIR run with libomp/libomptarget from DIR instead of the
                    prefix (e.g. a GPU bundle's lib/ on a machine without it)
  -- ARGS           passed to every BabelStream run (e.g. --float, --device 1)

Environment: KLE_PREFIX (the fork's prefix, default <repo>/install),
KLE_BUILD_DIR, KLE_JOBS (build jobs, default 2), KLE_BABELSTREAM_TIMEOUT
(seconds per run, default 300).
EOF
}

src=${BABELSTREAM_DIR:-}
arch=sm_90 size=1024 numtimes=100 rounds=5 build_dir="" standin="" do_build=1 do_run=1
runtime_lib="" extra=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --arch) arch=${2:?--arch needs a value}; shift 2 ;;
    -s|--size) size=${2:?--size needs a value}; shift 2 ;;
    -n|--numtimes) numtimes=${2:?--numtimes needs a value}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a value}; shift 2 ;;
    --standin) standin=${2:?--standin needs a value}; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --build-only) do_run=0; shift ;;
    --runtime-lib) runtime_lib=${2:?--runtime-lib needs a value}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) kle_die "unknown option '$1' (try --help)" ;;
    *) src=$1; shift ;;
  esac
done
[[ $size =~ ^[1-9][0-9]*$ ]] || kle_die "--size must be a positive integer, got '$size'"
[[ $numtimes =~ ^[0-9]+$ ]] && [ "$numtimes" -ge 2 ] || kle_die "--numtimes must be 2 or more, got '$numtimes'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || kle_die "--rounds must be a positive integer, got '$rounds'"

target_flags="--offload-arch=$arch"
case $arch in
  x86_64|host|x86_64-unknown-linux-gnu)
    arch=x86_64 kind=host target_flags="-fopenmp-targets=x86_64-unknown-linux-gnu" ;;
  sm_[0-9]*) kind=nvptx ;;
  gfx[0-9]*) kind=amdgcn ;;
  *) kle_die "unknown --arch '$arch' (use sm_NN, gfxNNN or x86_64)" ;;
esac
[ -z "$standin" ] || [ "$kind" = nvptx ] || kle_die "--standin needs an sm_* --arch (it stands in for the CUDA driver)"
[ "$do_build" = 1 ] || [ "$do_run" = 1 ] || kle_die "--build-only and --no-build together do nothing"

build_dir=${build_dir:-$KLE_BUILD_DIR/babelstream/$arch}
exe=$build_dir/omp-stream
if [ "$do_build" = 1 ] || [ -n "$src" ]; then
  [ -n "$src" ] || kle_die "no BabelStream checkout given (pass its path or set BABELSTREAM_DIR; clone https://github.com/UoB-HPC/BabelStream yourself)"
  [ -f "$src/CMakeLists.txt" ] && [ -f "$src/src/omp/OMPStream.cpp" ] ||
    kle_die "'$src' is not a BabelStream checkout (no CMakeLists.txt and src/omp/OMPStream.cpp)"
  src=$(cd "$src" && pwd)
  case $src/ in
    "$KLE_ROOT"/*) git -C "$KLE_ROOT" check-ignore -q "$src" 2>/dev/null ||
      kle_note "warning: $src is inside the repository and not ignored; do not commit it" ;;
  esac
fi
if [ "$do_build" = 1 ]; then
  cfg=$KLE_PREFIX/share/kle-offload/kle-offload.cfg
  [ -f "$cfg" ] || kle_die "no clang config at $cfg (install the fork with scripts/setup.sh, or set KLE_PREFIX)"
  [ -f "$KLE_PREFIX/lib/libomp.so" ] && [ -f "$KLE_PREFIX/lib/libomptarget.so" ] ||
    kle_die "no libomp.so/libomptarget.so in $KLE_PREFIX/lib (incomplete install; rerun scripts/setup.sh)"
  command -v clang++-22 >/dev/null || kle_die "clang++-22 not found (the fork's config is for clang 22)"
fi
libdir=${runtime_lib:-$KLE_PREFIX/lib}
[ -f "$libdir/libomp.so" ] || kle_die "no libomp.so in ${runtime_lib:+--runtime-lib }$libdir"
libdir=$(realpath "$libdir")
if [ -n "$standin" ]; then
  [ -e "$standin/libcuda.so.1" ] || kle_die "no libcuda.so.1 in --standin $standin"
  standin=$(cd "$standin" && pwd)
fi

mkdir -p "$build_dir"

# The OpenMP_* entries make FindOpenMP link the fork's libomp, not the
# system's libomp.so.5 (two OpenMP runtimes in one program).
first_error() { # build log -> its first error line
  { grep -m1 -E ' error: |CMake Error' "$1" || grep -m1 -E 'FAILED|rror' "$1" || true; } | cut -c1-240
}
if [ "$do_build" = 1 ]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  [ -f "$build_dir/CMakeCache.txt" ] && gen=()
  log=$build_dir/build.log
  cmake "${gen[@]}" -S "$src" -B "$build_dir" \
    -DMODEL=omp -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 \
    -DOFFLOAD=ON "-DOFFLOAD_FLAGS=--config=$cfg -fopenmp $target_flags" \
    -DOpenMP_CXX_FLAGS=-fopenmp -DOpenMP_CXX_LIB_NAMES=omp \
    -DOpenMP_C_FLAGS=-fopenmp -DOpenMP_C_LIB_NAMES=omp \
    "-DOpenMP_omp_LIBRARY=$KLE_PREFIX/lib/libomp.so" -DCMAKE_SKIP_BUILD_RPATH=ON >"$log" 2>&1 ||
    kle_die "configuring BabelStream failed: $(first_error "$log") (log: $log)"
  cmake --build "$build_dir" -j "${KLE_JOBS:-2}" >>"$log" 2>&1 ||
    kle_die "building BabelStream failed: $(first_error "$log") (log: $log)"
  git -C "$src" rev-parse --short=12 HEAD >"$build_dir/babelstream.rev" 2>/dev/null ||
    echo unknown >"$build_dir/babelstream.rev"
fi
bs_rev=$(cat "$build_dir/babelstream.rev" 2>/dev/null || echo unknown)
[ -x "$exe" ] || kle_die "no BabelStream binary at $exe (build it: drop --no-build)"
# The CUDA plugin dlopen()s "libcuda.so": point it at the driver's libcuda.so.1.
lib_path=${runtime_lib:+$libdir}
if [ "$kind" = nvptx ] && [ -n "$standin" ]; then
  lib_path=$standin${lib_path:+:$lib_path}
elif [ "$kind" = nvptx ] && [ "$do_run" = 1 ]; then
  drv=none
  for d in $(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/{print $NF}') \
           /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1; do
    case $d in */stubs/*) continue ;; esac
    if [ -e "$d" ]; then drv=$d; break; fi
  done
  if [ "$drv" != none ]; then
    drvdir=$(mktemp -d); trap 'rm -rf "$drvdir"' EXIT
    ln -s "$drv" "$drvdir/libcuda.so"
    lib_path=${lib_path:+$lib_path:}$drvdir
  fi
fi
lib_path=$lib_path${LD_LIBRARY_PATH:+${lib_path:+:}$LD_LIBRARY_PATH}

# libomp and libomptarget must come from the prefix (or --runtime-lib) only.
bad_libs="" have_omptarget=0
while read -r name _ path _; do
  case $name in libomp.so*|libomptarget.so*) ;; *) continue ;; esac
  case $(realpath "$path" 2>/dev/null) in
    "$libdir"/*) [[ $name == libomptarget.so* ]] && have_omptarget=1 ;;
    *) bad_libs+=" $name=>$path" ;;
  esac
done < <(LD_LIBRARY_PATH=$lib_path ldd "$exe" 2>/dev/null)
[ -z "$bad_libs" ] && [ $have_omptarget = 1 ] ||
  kle_die "$exe does not take libomp/libomptarget from $libdir only:${bad_libs:- no libomptarget}"

if [ "$do_run" = 0 ]; then
  echo "built $exe (BabelStream $bs_rev, $arch); run it with: $0 --no-build${build_dir:+ --build-dir $build_dir}${arch:+ --arch $arch}"
  exit 0
fi

run_env=(env OMP_TARGET_OFFLOAD=MANDATORY LIBOMPTARGET_KLE_STATS=1)
[ -z "$lib_path" ] || run_env+=("LD_LIBRARY_PATH=$lib_path")
bs_args=(-s "$size" -n "$numtimes" --csv "${extra[@]}")
# Host device: one OpenMP thread per team (descheduled workers drown all else).
[ "$kind" = host ] && run_env+=("OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
if [ -n "$standin" ]; then
  run_env+=("KLE_STANDIN_DELAY_US=${KLE_STANDIN_DELAY_US:-0:0}")
  bs_args+=(--silence-errors)   # the stand-in's kernels compute nothing
fi

out=$build_dir/results; mkdir -p "$out"; rm -f "$out"/r[0-9]*-*.csv "$out"/r[0-9]*-*.err
listing=$("${run_env[@]}" "$exe" --list 2>&1 || true)
[ "${drv:-}" != none ] ||
  kle_die "no NVIDIA driver library (libcuda.so.1) found; without a GPU, try --standin or --arch x86_64"
grep -qE '^There are [1-9][0-9]* devices' <<<"$listing" ||
  kle_die "no offload device for $arch: omp-stream --list says '$(tr '\n' ' ' <<<"$listing" | cut -c1-200)' (no GPU or driver here? without one, try --standin or --arch x86_64)"

run_error() { # run's stderr -> its most telling line
  { grep -m1 -E 'VIOLATION|"PluginInterface" error|omptarget (error|fatal)' "$1" ||
    grep -m1 -E 'FAILED|rror' "$1" || grep -v '^$' "$1" | tail -1 || true; } | cut -c1-240
}
timeout_s=${KLE_BABELSTREAM_TIMEOUT:-300}
read -r -a transports <<<"$(python3 "$KLE_ROOT/bench/klebench.py" transports)" ||
  kle_die "cannot read the transport list from $KLE_ROOT/bench/klebench.py"
[ ${#transports[@]} -gt 0 ] || kle_die "no transports from $KLE_ROOT/bench/klebench.py"
runs=$out/runs.csv
echo "round,transport,function,num_times,n_elements,min_s,max_s,avg_s" >"$runs"
: >"$out/kle-stats.txt"
for ((r = 1; r <= rounds; r++)); do
  order=("${transports[@]}")
  if [ $((r % 2)) -eq 0 ]; then # reversed every other round
    order=(); for ((i = ${#transports[@]} - 1; i >= 0; i--)); do order+=("${transports[i]}"); done
  fi
  for t in "${order[@]}"; do
    o=$out/r$r-$t.csv e=$out/r$r-$t.err
    rc=0
    { LIBOMPTARGET_KLE_TRANSPORT=$t timeout "$timeout_s" "${run_env[@]}" "$exe" "${bs_args[@]}" >"$o" 2>"$e" \
      || rc=$?; } 2>/dev/null
    if [ $rc -ne 0 ]; then
      [ $rc -eq 124 ] && why="timed out after ${timeout_s}s" || why="exit $rc"
      msg=$(run_error "$e")
      kle_die "BabelStream failed under LIBOMPTARGET_KLE_TRANSPORT=$t, round $r ($why)${msg:+: $msg} (log: $e)"
    fi
    grep -q '^Dot,' "$o" || kle_die "no Dot row in BabelStream's CSV under $t, round $r (output: $o)"
    awk -F, -v r="$r" -v t="$t" 'NR>1 && NF>=8 {print r","t","$1","$2","$3","$6","$7","$8}' "$o" >>"$runs"
    sed -n "s/^omptarget KLE stats: /$t round $r: &/p" "$e" >>"$out/kle-stats.txt"
  done
done

case $kind in
  host) dev="x86_64 host device" ;;
  *) dev="$arch${standin:+ on the CUDA driver stand-in}" ;;
esac
echo
echo "BabelStream (omp, $bs_rev) on $dev: -s $size -n $numtimes, $rounds round(s) per transport"
if [ "$kind" = host ]; then
  echo "HOST DEVICE: PLUMBING CHECK ONLY. Host-plugin kernels get no KLE, so the transports cannot differ here."
  echo "(OMP_NUM_THREADS=${OMP_NUM_THREADS:-1})"
elif [ -n "$standin" ]; then
  echo "HOST-SIDE OVERHEAD ONLY: the CUDA driver stand-in ran no kernel; these are not GPU launch latencies."
fi
echo "median over rounds of BabelStream's avg_runtime (us); /copy = ratio to upstream's copy transport"
# Per kernel: each transport's median over rounds, then its ratio to copy.
python3 - "$runs" "${transports[@]}" <<'PY'
import csv, statistics, sys
ts, us, fns = sys.argv[2:], {}, []
for r in csv.DictReader(open(sys.argv[1])):
    us.setdefault((r["function"], r["transport"]), []).append(float(r["avg_s"]) * 1e6)
    fns += [r["function"]] if r["round"] == "1" and r["transport"] == "copy" else []
med = {k: statistics.median(v) for k, v in us.items()}
def row(label, m):
    print("%-10s" % label + "".join(" %12.2f" % m[t] for t in ts) + "".join(
        " %14s" % ("%.2f" % (m[t] / m["copy"]) if m["copy"] > 0 else "-") for t in ts if t != "copy"))
print("%-10s" % "kernel" + "".join(" %12s" % t for t in ts)
      + "".join(" %14s" % (t + "/copy") for t in ts if t != "copy"))
for f in fns:
    row(f, {t: med.get((f, t), 0) for t in ts})
if ("Dot", "copy") in med and ("Copy", "copy") in med:
    row("Dot-Copy", {t: med.get(("Dot", t), 0) - med.get(("Copy", t), 0) for t in ts})
    print("Dot-Copy: what the teams reduction adds over a no-KLE kernel (KLE, the sum's map to/from, the reduction)")
PY
echo
echo "KLE launches per requested transport (LIBOMPTARGET_KLE_STATS, all rounds):"
for t in "${transports[@]}"; do
  s=$( (grep "^$t round " "$out/kle-stats.txt" || true) | python3 "$KLE_ROOT/bench/klebench.py" stats-summary || true)
  [ "$kind" = host ] && none="none (host-device kernels get no KLE)" ||
    none="no stats line: no launch with a KLE was reported (see $out/r*-$t.err)"
  printf '  %-9s %s\n' "$t" "${s:-$none}"
done
echo "results: $runs"
