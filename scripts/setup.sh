#!/usr/bin/env bash
# Set up kle-offload on a fresh Debian 12 machine and run its main job:
#   1. check (as root: install) the Debian packages it needs,
#   2. fetch + verify the pinned LLVM 22.1.8 base, apply the patch series and
#      overlays, build libomp, libomptarget + plugins, liboffload and the
#      DeviceRTL (amdgcn, nvptx), and install them into $KLE_PREFIX,
#   3. build the examples as fat binaries (host, gfx90a, sm_90) with the
#      installed CMake package, run each on every available device and print
#      a table of results,
#   4. print the transport table (scripts/transport-table.py): the examples
#      under each KLE transport on the GPU, with a quick 1-team latency
#      comparison, or without a GPU on the CUDA driver stand-in (violations,
#      the KLE's copies and allocations per launch, host ns in the KLE path).
# Environment: KLE_PREFIX (default <repo>/install), KLE_BUILD_DIR (<repo>/build),
# KLE_CACHE_DIR (~/.cache/kle-offload), KLE_JOBS (ninja -j).
set -euo pipefail
source "$(dirname "$0")/common.sh"

KLE_PACKAGES=(clang-22 lld-22 llvm-22-dev llvm-22-tools libomp-22-dev
  libffi-dev libelf-dev libzstd-dev zlib1g-dev ninja-build cmake curl xz-utils
  patch git python3 rocm-device-libs libgtest-dev libbenchmark-dev
  valgrind python3-matplotlib python3-numpy python3-scipy libpolly-22-dev)
# valgrind: instructions per launch (bench/klebench.py instructions);
# python3-matplotlib, python3-numpy, python3-scipy: bench/klebench.py's plot
# and statistics (bench/requirements.txt); libpolly-22-dev: LLVM's static
# export set names libPolly.a, which the relocatable GPU bundle's static link
# (bench/gpu/gpu-bundle.sh) needs present, though nothing uses it.

missing=()
for p in "${KLE_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    kle_note "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || kle_die "apt-get update failed; check the network and apt's sources."
    apt-get install -y -qq "${missing[@]}" >/dev/null \
      || kle_die "apt-get install failed for: ${missing[*]}; install them by hand and rerun."
  else
    kle_die "missing Debian packages: ${missing[*]}; run: sudo apt-get install ${missing[*]} (or rerun this as root)."
  fi
fi

jobs=${KLE_JOBS:-$(nproc)}
cmake -G Ninja -S "$KLE_ROOT" -B "$KLE_BUILD_DIR" -DCMAKE_INSTALL_PREFIX="$KLE_PREFIX" >/dev/null \
  || kle_die "configuring the fork failed (see the output above)."
ninja -C "$KLE_BUILD_DIR" -j "$jobs" install \
  || kle_die "building the fork failed (see the output above)."
kle_note "fork installed in $KLE_PREFIX"

# kle-bench (bench/), built like a user's project with the CMake package.
cmake -G Ninja -S "$KLE_ROOT/bench" -B "$KLE_BUILD_DIR/bench" -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_PREFIX_PATH="$KLE_PREFIX" >/dev/null && ninja -C "$KLE_BUILD_DIR/bench" >/dev/null \
  || kle_die "building bench/kle-bench failed (see the output above)."

rc=0
"$KLE_ROOT/scripts/run-examples.sh" || rc=$?
echo
python3 "$KLE_ROOT/scripts/transport-table.py" --examples "$KLE_BUILD_DIR/examples" \
  --standin "$KLE_BUILD_DIR/test/cuda-standin/lib" --bench "$KLE_BUILD_DIR/bench/kle-bench" \
  --out "$KLE_BUILD_DIR/bench-results/setup" || rc=$((rc ? rc : 1))
exit $rc
