#!/usr/bin/env bash
# Build stock LLVM 22.1.8's libomp and libomptarget (CUDA and host plugins)
# from the pristine base, for side-by-side benchmarks against the fork (CMake
# target kle-stock; see the "Stock LLVM" section of CMakeLists.txt). Not part
# of the default build and never installed. Reuses $KLE_BUILD_DIR's
# configuration (configuring it first if needed), then prints the library
# directories to put first on LD_LIBRARY_PATH, one per line.
# Environment: KLE_BUILD_DIR (<repo>/build), KLE_JOBS (ninja -j).
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [ ! -f "$KLE_BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$KLE_ROOT" -B "$KLE_BUILD_DIR" -DCMAKE_INSTALL_PREFIX="$KLE_PREFIX" >/dev/null \
    || kle_die "configuring $KLE_BUILD_DIR failed (see the output above)."
fi
ninja -C "$KLE_BUILD_DIR" -j "${KLE_JOBS:-$(nproc)}" kle-stock >&2 \
  || kle_die "building stock LLVM $KLE_LLVM_VERSION (target kle-stock) failed (see the output above)."
for lib in "$KLE_BUILD_DIR/stock/offload/libomptarget.so" "$KLE_BUILD_DIR/stock/libomp/runtime/src/libomp.so"; do
  [ -e "$lib" ] || kle_die "the stock build did not produce $lib."
done
echo "$KLE_BUILD_DIR/stock/offload"
echo "$KLE_BUILD_DIR/stock/libomp/runtime/src"
