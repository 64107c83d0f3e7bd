# Shared helpers for kle-offload's scripts. Source it; do not run it.
# shellcheck shell=bash

# The pinned base: LLVM 22.1.8 as Debian's source archive ships it.
KLE_LLVM_VERSION=22.1.8
KLE_TARBALL_NAME="llvm-toolchain-22_${KLE_LLVM_VERSION}.orig.tar.xz"
KLE_TARBALL_POOL_PATH="pool/main/l/llvm-toolchain-22/${KLE_TARBALL_NAME}"
KLE_TARBALL_SHA256=b49b9277aef97616320b2da259e1f8174c65b0ce2fbe2e8629644a97693402fe
KLE_TARBALL_TOPDIR="llvm-toolchain-22_${KLE_LLVM_VERSION}"
# The upstream subtrees the build needs (relative to the llvm-project root).
KLE_BASE_SUBTREES=(offload openmp libc cmake runtimes)

KLE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KLE_BUILD_DIR=${KLE_BUILD_DIR:-$KLE_ROOT/build}
KLE_PREFIX=${KLE_PREFIX:-$KLE_ROOT/install}
KLE_CACHE_DIR=${KLE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kle-offload}

kle_die() {
  # One line, prefixed, on stderr; exit status 1 unless given.
  echo "kle-offload: error: $1" >&2
  exit "${2:-1}"
}

kle_note() { echo "kle-offload: $*" >&2; }

kle_sha256() { sha256sum "$1" | cut -d' ' -f1; }

# kle_gate_report LOG KNOWN_FILE SUITE_NAME
# Compare the failures in a `lit -v` log with the "<test> <reason>" lines of
# KNOWN_FILE. Prints each unexpected failure and sets KLE_GATE_PASSED (count
# of PASS lines) and KLE_GATE_UNEXPECTED (count of unexplained failures).
kle_gate_report() {
  local log=$1 known=$2 suite=$3 t
  local -a fails unexpected=()
  KLE_GATE_PASSED=$(grep -c '^PASS: ' "$log")
  mapfile -t fails < <(sed -n -E "s/^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ${suite} :: ([^ ]+ :: )?([^ ]+) .*/\3/p" "$log")
  for t in "${fails[@]}"; do
    grep -q -E "^${t//./\\.}[[:space:]]" "$known" || unexpected+=("$t")
  done
  sed -n '/^Total Discovered/,$p' "$log"
  echo "$KLE_GATE_PASSED passed, ${#fails[@]} failed (${#unexpected[@]} not explained in $(basename "$known"))"
  for t in "${unexpected[@]}"; do echo "GATE FAILED: unexpected failure $t"; done
  KLE_GATE_UNEXPECTED=${#unexpected[@]}
}
