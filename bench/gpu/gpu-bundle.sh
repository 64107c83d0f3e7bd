#!/usr/bin/env bash
# The relocatable GPU bundle for a one-shot run on a machine with only an
# NVIDIA driver (docs/GPU-RUN.md: its files and checks).
#
#   bench/gpu/gpu-bundle.sh [build]       build $KLE_BUILD_DIR/gpu-bundle and check it
#   bench/gpu/gpu-bundle.sh check [DIR]   check an existing bundle only
#   bench/gpu/gpu-bundle.sh verify RESULTS_DIR
#                                       FileCheck run-gpu.sh's GPU test outputs
set -euo pipefail
source "$(dirname "$0")/../../scripts/common.sh"

bundle="$KLE_BUILD_DIR/gpu-bundle"
log="$KLE_BUILD_DIR/offload-bundle.log"
jobs=${KLE_JOBS:-$(nproc)}
# logged WHAT CMD...: CMD's output into the log; on failure its tail.
logged() {
  local what=$1
  shift
  "$@" >>"$log" 2>&1 || { tail -20 "$log" >&2; kle_die "$what failed (log: $log)"; }
}
limit=$((64 * 1024 * 1024))
base_libs="libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libz.so.1 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2 linux-vdso.so.1"
arch=${KLE_BUNDLE_ARCH:-sm_90}

deps_of() { env -i LD_LIBRARY_PATH="$1/lib:$1/lib/kernel-timer" /usr/bin/ldd "$2" 2>&1 || true; }

# "<elf> <library> <path or empty>" per library an ELF under bundle $1 needs
# from outside it, other than the base libraries and the driver.
foreign_deps() {
  local b=$1 f line name path
  while IFS= read -r f; do
    file -b "$f" | grep -q '^ELF' || continue
    while IFS= read -r line; do
      name=$(awk '{print $1}' <<<"$line")
      path=$(sed -n 's/.*=> \([^ ]*\) .*/\1/p' <<<"$line")
      [ -n "$name" ] || continue
      case " $base_libs libcuda.so.1 " in *" $name "*) continue ;; esac
      case $name in /*) continue ;; esac # the loader itself
      case $path in "$b"/*) continue ;; esac
      echo "$f $name $path"
    done < <(deps_of "$b" "$f" | grep -v 'statically linked')
  done < <(find "$b" -type f)
}

# The newest GLIBC, GLIBCXX and CXXABI versions any ELF in bundle $1 needs.
needs() {
  find "$1" -type f -exec objdump -T {} \; 2>/dev/null \
    | grep -o -E '(GLIBC|GLIBCXX|CXXABI)_[0-9.]+' | sort -u -V \
    | awk -F_ '{v[$1]=$0} END{printf "%s %s %s", v["GLIBC"], v["GLIBCXX"], v["CXXABI"]}'
}

check() {
  local b=$1 bad=0 f name path size glibc
  [ -f "$b/MANIFEST" ] || kle_die "$b is not a bundle (no MANIFEST); run: bench/gpu/gpu-bundle.sh build"
  size=$(du -sb "$b" | cut -f1)
  echo "bundle: $b, $((size / 1024 / 1024)) MiB ($size bytes), limit 64 MiB"
  [ "$size" -le "$limit" ] || { echo "CHECK FAILED: larger than 64 MiB"; bad=1; }
  while read -r f name path; do
    echo "CHECK FAILED: ${f#"$b"/} needs $name (${path:-not found}) from outside the bundle"
    bad=1
  done < <(foreign_deps "$b")
  while IFS= read -r f; do
    file -b "$f" | grep -q '^ELF' || continue
    if deps_of "$b" "$f" | grep -q 'libLLVM'; then
      echo "CHECK FAILED: ${f#"$b"/} needs libLLVM"; bad=1
    fi
    glibc=$(objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
    if [ -n "$glibc" ] && [ "$(printf '%s\nGLIBC_2.36\n' "$glibc" | sort -V | tail -1)" != GLIBC_2.36 ]; then
      echo "CHECK FAILED: ${f#"$b"/} needs $glibc (newer than 2.36)"; bad=1
    fi
  done < <(find "$b" -type f)
  [ $bad = 0 ] && echo "dependencies: every ELF resolves inside the bundle, to base libraries, or to the driver"
  contents_check "$b" || bad=1
  echo "needs at least: $(needs "$b")"
  if [ "$(id -u)" = 0 ] && [ -x "$KLE_BUILD_DIR/test/cuda-standin/lib/libcuda.so.1" ]; then
    chroot_check "$b" || bad=1
  else
    echo "chroot start check skipped (needs root and the CUDA driver stand-in built)"
  fi
  return $bad
}

# Every file the MANIFEST lists has its SHA-256; every program gpu-tests.plan
# runs is there and executable.
contents_check() {
  local b=$1 bad=0 sum path f n=0 test runs
  while read -r sum path; do
    n=$((n + 1))
    f="$b/${path#./}"
    if [ ! -f "$f" ]; then
      echo "CHECK FAILED: ${path#./} is listed in the MANIFEST but missing"; bad=1
    elif [ "$(kle_sha256 "$f")" != "$sum" ]; then
      echo "CHECK FAILED: ${path#./} does not match its SHA-256 in the MANIFEST (changed after the bundle was built)"; bad=1
    fi
  done < <(grep -E '^[0-9a-f]{64}  ' "$b/MANIFEST")
  [ $n -gt 0 ] || { echo "CHECK FAILED: the MANIFEST lists no files (no SHA-256 lines)"; bad=1; }
  if [ -f "$b/gpu-tests.plan" ]; then
    runs=$(cut -f1 "$b/gpu-tests.plan" | grep -c . || true)
    while read -r test; do # each program once
      f="bin/gpu-tests/${test%.c}"
      if [ ! -f "$b/$f" ]; then
        echo "CHECK FAILED: gpu-tests.plan runs $f, which is missing"; bad=1
      elif [ ! -x "$b/$f" ]; then
        echo "CHECK FAILED: gpu-tests.plan runs $f, which is not executable"; bad=1
      fi
    done < <(cut -f1 "$b/gpu-tests.plan" | grep . | sort -u)
    [ "$runs" -gt 0 ] || { echo "CHECK FAILED: gpu-tests.plan lists no runs"; bad=1; }
  else
    echo "CHECK FAILED: no gpu-tests.plan"; bad=1
  fi
  [ $bad = 1 ] || echo "contents: the $n files the MANIFEST lists match their SHA-256; the $runs runs of gpu-tests.plan have their programs"
  return $bad
}

# Starts the bundle where only the base libraries and a "driver" exist.
chroot_check() {
  local b=$1 root lib out rc
  root=$(mktemp -d)
  mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/tmp" "$root/drv" "$root/usr/bin" "$root/bin"
  for lib in $base_libs; do
    [ -e "/lib/x86_64-linux-gnu/$lib" ] && cp -L "/lib/x86_64-linux-gnu/$lib" "$root/lib/x86_64-linux-gnu/"
  done
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
  cp -a "$b" "$root/bundle"
  cp -L "$KLE_BUILD_DIR/test/cuda-standin/lib/libcuda.so.1" "$root/drv/libcuda.so.1"
  ldd "$root/drv/libcuda.so.1" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' | while read -r lib; do
    case " $base_libs " in *" $(basename "$lib") "*) ;; *) cp -L "$lib" "$root/drv/" ;; esac
  done
  ln -s libcuda.so.1 "$root/drv/libcuda.so"
  set +e
  out=$(chroot "$root" /lib64/ld-linux-x86-64.so.2 --library-path /bundle/lib:/drv:/lib/x86_64-linux-gnu \
        /bundle/bin/kle-bench --list-devices 2>&1)
  rc=$?
  set -e
  rm -rf "$root"
  if [ $rc = 0 ] && grep -q ' CUDA-' <<<"$out"; then
    echo "chroot start: kle-bench --list-devices found the CUDA device with only base libraries + driver present"
    return 0
  fi
  echo "CHECK FAILED: kle-bench did not start in a chroot with only base libraries (status $rc):"
  sed 's/^/  /' <<<"$out" | head -20
  return 1
}

# kle-bench against the synchronous-read DeviceRTL (the A/B's baseline) and
# zerocopy-read, into $KLE_BUILD_DIR/bench-syncread.
build_read_ab() {
  local rtl="$KLE_BUILD_DIR/bundle/devicertl-syncread-nvptx/lib/nvptx64-nvidia-cuda" d="$KLE_BUILD_DIR/bench-syncread"
  local nvcc=${KLE_NVCC:-/usr/local/cuda/bin/nvcc}
  [ -x "$nvcc" ] || kle_die "no nvcc at $nvcc (set KLE_NVCC): the bundle carries bench/gpu/zerocopy-read.cu, built with it"
  kle_note "building the synchronous-read nvptx DeviceRTL and kle-bench against it (issue 19 A/B)"
  logged "building target devicertl-syncread-nvptx" ninja -C "$KLE_BUILD_DIR" -j "$jobs" devicertl-syncread-nvptx
  [ -f "$rtl/libomptarget-nvptx.bc" ] || kle_die "devicertl-syncread-nvptx built no $rtl/libomptarget-nvptx.bc"
  if llvm-dis-22 "$rtl/libomptarget-nvptx.bc" -o - | grep -q 'cp\.async'; then
    kle_die "$rtl/libomptarget-nvptx.bc issues cp.async: it is not the synchronous-read DeviceRTL"
  fi
  logged "configuring kle-bench against the synchronous-read DeviceRTL" cmake -G Ninja \
    -S "$KLE_ROOT/bench" -B "$d" -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_PREFIX_PATH="$KLE_PREFIX" \
    -DKLE_BENCH_NVPTX_DEVICERTL="$rtl"
  logged "building kle-bench against the synchronous-read DeviceRTL" ninja -C "$d" -j "$jobs" kle-bench
  logged "compiling bench/gpu/zerocopy-read.cu with $nvcc" \
    "$nvcc" -O2 -std=c++17 -arch="$arch" "$KLE_ROOT/bench/gpu/zerocopy-read.cu" -o "$d/zerocopy-read"
}

build() {
  [ -f "$KLE_PREFIX/share/kle-offload/kle-offload.cfg" ] \
    || kle_die "the fork is not installed in $KLE_PREFIX; run scripts/setup.sh first."
  [ -x "$KLE_BUILD_DIR/bench/kle-bench" ] || kle_die "no $KLE_BUILD_DIR/bench/kle-bench; run scripts/setup.sh first."
  [ -f "$KLE_BUILD_DIR/bench/kernel-timer/libcuda.so" ] \
    || kle_die "no kernel timer ($KLE_BUILD_DIR/bench/kernel-timer/libcuda.so): the CUDA toolkit's cuda.h was not found when bench/ was configured."
  : > "$log"
  logged "bringing the installed fork up to date" ninja -C "$KLE_BUILD_DIR" -j "$jobs" install
  logged "bringing kle-bench up to date" ninja -C "$KLE_BUILD_DIR/bench" -j "$jobs"
  kle_note "building the relocatable libomptarget (target offload-bundle; a few minutes the first time)"
  logged "building target offload-bundle" ninja -C "$KLE_BUILD_DIR" -j "$jobs" offload-bundle
  local omptarget="$KLE_BUILD_DIR/bundle/offload/libomptarget.so.22.1" t
  [ -f "$omptarget" ] || kle_die "offload-bundle built no $omptarget"
  build_read_ab

  rm -rf "$bundle.tmp"
  mkdir -p "$bundle.tmp"/{bin/gpu-tests,lib/kernel-timer,bench/kle}
  grep -q kle_floor_kernel "$KLE_BUILD_DIR/bench/kle-bench" \
    || kle_die "$KLE_BUILD_DIR/bench/kle-bench has no floor kernel (kle_floor_kernel): bench/ was configured without the CUDA toolkit's nvcc"
  cp "$KLE_BUILD_DIR/bench/kle-bench" "$bundle.tmp/bin/"
  cp "$KLE_BUILD_DIR/bench/kernel-timer/libcuda.so" "$bundle.tmp/lib/kernel-timer/"
  cp -L "$KLE_PREFIX/lib/libomp.so" "$bundle.tmp/lib/"
  cp "$omptarget" "$bundle.tmp/lib/"
  cp "$KLE_ROOT/bench/gpu/run-gpu.sh" "$bundle.tmp/run-gpu.sh"
  cp "$KLE_ROOT/bench/klebench.py" "$bundle.tmp/bench/"
  cp "$KLE_ROOT"/bench/kle/*.py "$bundle.tmp/bench/kle/"
  cp "$KLE_BUILD_DIR/bench-syncread/kle-bench" "$bundle.tmp/bin/kle-bench-syncread"
  cp "$KLE_BUILD_DIR/bench-syncread/zerocopy-read" "$bundle.tmp/bin/zerocopy-read"
  for t in "$KLE_ROOT"/test/gpu/*.c; do
    clang-22 --config="$KLE_PREFIX/share/kle-offload/kle-offload.cfg" -fopenmp \
      --offload-arch="$arch" -O2 "$t" -o "$bundle.tmp/bin/gpu-tests/$(basename "$t" .c)" -ldl \
      || kle_die "compiling $t for $arch failed"
  done
  python3 "$KLE_ROOT/test/utils/gpu-tests.py" plan "$bundle.tmp" "$KLE_ROOT"/test/gpu/*.c >/dev/null
  strip --strip-unneeded "$bundle.tmp/bin/kle-bench" "$bundle.tmp"/bin/gpu-tests/* 2>/dev/null || true

  # Copy in whatever else the binaries need, until only base libraries are left.
  local pass f name path
  for pass in 1 2 3; do
    while read -r f name path; do
      case $path in /*) ;; *) continue ;; esac
      [ -e "$bundle.tmp/lib/$name" ] || cp -L "$path" "$bundle.tmp/lib/$name"
    done < <(foreign_deps "$bundle.tmp")
  done

  {
    echo "kle-offload GPU bundle"
    echo "git: $(git -C "$KLE_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$([ -z "$(git -C "$KLE_ROOT" status --porcelain 2>/dev/null)" ] || echo ' (uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
    echo "llvm: $KLE_LLVM_VERSION, offload arch: $arch"
    echo "wait switch (__kle_bench_set_wait): $(nm -D --defined-only "$bundle.tmp/lib/libomptarget.so.22.1" 2>/dev/null | awk '$NF == "__kle_bench_set_wait" {f = 1} END {print f ? "yes" : "no"}')"
    echo "needs: $(needs "$bundle.tmp")"
    (cd "$bundle.tmp" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
  } > "$bundle.tmp/MANIFEST"
  rm -rf "$bundle"
  mv "$bundle.tmp" "$bundle"
  kle_note "bundle in $bundle"
  check "$bundle" || kle_die "the bundle failed its checks (see CHECK FAILED above)"
  echo "Run it on the GPU machine (docs/GPU-RUN.md): bash build/gpu-bundle/run-gpu.sh RESULTS_DIR"
}

verify() {
  local r=${1:-}
  [ -n "$r" ] && [ -f "$r/gpu-tests.txt" ] || kle_die "usage: bench/gpu/gpu-bundle.sh verify RESULTS_DIR (with the gpu-tests.txt run-gpu.sh wrote)"
  [ -f "$bundle/gpu-tests.plan" ] || kle_die "no $bundle/gpu-tests.plan: verify with the bundle that produced the results"
  python3 "$KLE_ROOT/test/utils/gpu-tests.py" verify "$bundle/gpu-tests.plan" "$r/gpu-tests.txt" "$KLE_ROOT/test/gpu"
}

case ${1:-build} in
  build) build ;;
  check) check "${2:-$bundle}" ;;
  verify) verify "${2:-}" ;;
  *) kle_die "unknown command '$1' (use: build, check [DIR], verify RESULTS_DIR)" ;;
esac
