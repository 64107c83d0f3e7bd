#!/usr/bin/env bash
# Build the fork's source tree: pristine base + patch series + overlays.
#
#   base     $KLE_BASE_DIR     (default $KLE_BUILD_DIR/base, from fetch-base.sh)
#   series   $KLE_PATCHES_DIR  (default <repo>/patches; `series` lists the order)
#   overlays project-owned files copied onto the tree (see KLE_OVERLAYS below)
#   result   $KLE_SRC_DIR      (default $KLE_BUILD_DIR/src)
#
# The result is rebuilt in a temporary directory and renamed into place only
# when every patch applied cleanly (no fuzz) and every overlay was placed. It
# is skipped when the stamp (a hash of base, series and overlays) is unchanged.
# A patch that does not apply fails with its name. An overlay file that would
# replace an upstream file is refused: upstream files change only via patches.
set -euo pipefail
source "$(dirname "$0")/common.sh"

BASE=${KLE_BASE_DIR:-$KLE_BUILD_DIR/base}
PATCHES=${KLE_PATCHES_DIR:-$KLE_ROOT/patches}
SRC=${KLE_SRC_DIR:-$KLE_BUILD_DIR/src}
OVERLAY_ROOT=${KLE_OVERLAY_ROOT:-$KLE_ROOT}
# repo directory -> directory in the llvm-project tree
KLE_OVERLAYS=${KLE_OVERLAYS:-"offload:offload openmp:openmp DeviceRTL:openmp/device plugins/amdgpu:offload/plugins-nextgen/amdgpu"}

[ -f "$BASE/.kle-base-complete" ] || kle_die "no complete base tree at $BASE; run scripts/fetch-base.sh first."
[ -f "$PATCHES/series" ] || kle_die "missing $PATCHES/series (the ordered patch list; it may be empty)."
command -v patch >/dev/null || kle_die "the 'patch' tool is missing; install the Debian package 'patch'."

# Series entries: one file name per line; blank lines and '#' comments ignored.
[ -d "$OVERLAY_ROOT" ] || kle_die "overlay root $OVERLAY_ROOT is not a directory (KLE_OVERLAY_ROOT)."
mapfile -t series < <(sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$PATCHES/series" | grep -v '^$' || true)
for p in "${series[@]}"; do
  [ -f "$PATCHES/$p" ] || kle_die "patch '$p' is listed in $PATCHES/series but $PATCHES/$p does not exist."
  grep -q '^@@ ' "$PATCHES/$p" || kle_die "patch '$p' holds no diff hunk (empty or header only); remove it from $PATCHES/series or refresh it."
done

overlay_files() { # prints "repo-relative-path<TAB>tree-relative-path"
  local pair from to f
  for pair in $KLE_OVERLAYS; do
    from=${pair%%:*}; to=${pair#*:}
    [ -d "$OVERLAY_ROOT/$from" ] || continue
    # README.md files document the overlay directory itself and stay here.
    ( cd "$OVERLAY_ROOT" && find "$from" -type f ! -name '*.orig' ! -name '*~' ! -name README.md | LC_ALL=C sort ) | while read -r f; do
      printf '%s\t%s\n' "$f" "$to/${f#"$from"/}"
    done
  done
}

stamp_of() {
  {
    cat "$BASE/.kle-base-complete"
    echo "overlays: $KLE_OVERLAYS"
    for p in "${series[@]}"; do echo "patch $p"; cat "$PATCHES/$p"; done
    overlay_files | while IFS=$'\t' read -r from to; do echo "overlay $from $to"; cat "$OVERLAY_ROOT/$from"; done
  } | sha256sum | cut -d' ' -f1
}

want=$(stamp_of)
if [ -f "$SRC/.kle-src-stamp" ] && [ "$(cat "$SRC/.kle-src-stamp")" = "$want" ]; then
  kle_note "patched source up to date at $SRC"
  exit 0
fi

tmp="$SRC.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$SRC")"
cp -a "$BASE" "$tmp"
rm -f "$tmp/.kle-base-complete"

n=0
for p in "${series[@]}"; do
  n=$((n + 1))
  if ! out=$(patch -d "$tmp" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -r - --dry-run < "$PATCHES/$p" 2>&1); then
    first=$(printf '%s\n' "$out" | grep -m1 -E 'FAILED|can.t find file|malformed|Only garbage|Reversed|No file to patch' || printf '%s\n' "$out" | head -1)
    first=${first%.}
    kle_die "patch $n/${#series[@]} '$p' does not apply cleanly to the base: ${first}. Refresh it (docs/PATCHES.md)."
  fi
  patch -d "$tmp" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -r - -s < "$PATCHES/$p" \
    || kle_die "patch $n/${#series[@]} '$p' failed while applying after a clean dry run; the tree at $tmp was discarded."
done

placed=0
while IFS=$'\t' read -r from to; do
  if [ -e "$tmp/$to" ]; then
    kle_die "overlay $from would replace $to, which exists in the base, a patch of the series or an earlier overlay; change upstream files with a patch instead."
  fi
  mkdir -p "$(dirname "$tmp/$to")"
  # Not cp -p: a placed file must be newer than objects built from an
  # earlier copy of it (test/scripts/prepare-overlay-mtime.test).
  cp "$OVERLAY_ROOT/$from" "$tmp/$to"
  placed=$((placed + 1))
done < <(overlay_files)

echo "$want" > "$tmp/.kle-src-stamp"
rm -rf "$SRC"
mv "$tmp" "$SRC"
trap - EXIT
kle_note "patched source ready at $SRC (${#series[@]} patches, $placed overlay files)"
