#!/usr/bin/env bash
# Fetch, verify and extract the pinned LLVM base (Debian's llvm-toolchain-22
# orig tarball) into $KLE_BUILD_DIR/base.
#
# - The mirror is read from apt's configured sources (never hard-coded):
#   the first `.../debian` archive URI in /etc/apt/sources.list{,.d/*}.
#   KLE_DEBIAN_MIRROR overrides it; KLE_TARBALL names a local copy instead.
# - The tarball is cached in $KLE_CACHE_DIR (outside the work tree) and reused.
# - The SHA-256 is checked on every use; a mismatch is refused.
# - Extraction goes to a temporary directory that is renamed into place only
#   when complete, so a half-extracted tree is never trusted.
# Every failure is one line on stderr saying what to do, and exit status 1.
set -euo pipefail
source "$(dirname "$0")/common.sh"

APT_SOURCES_DIR=${KLE_APT_SOURCES_DIR:-/etc/apt}

# Print candidate Debian archive base URIs from apt's sources, one per line.
apt_debian_mirrors() {
  local f
  {
    for f in "$APT_SOURCES_DIR"/sources.list "$APT_SOURCES_DIR"/sources.list.d/*.list; do
      [ -r "$f" ] || continue
      # one-line style: deb [opts] URI suite components
      sed -n -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' "$f"
    done
    for f in "$APT_SOURCES_DIR"/sources.list.d/*.sources; do
      [ -r "$f" ] || continue
      # deb822 style: URIs: a b c
      sed -n -E 's/^URIs:[[:space:]]*(.*)$/\1/p' "$f" | tr ' ' '\n'
    done
  } | sed -E 's#/+$##' | grep -E '^(https?|file)://.*/debian$' | awk '!seen[$0]++'
}

if [ "${1:-}" = "--print-mirrors" ]; then
  apt_debian_mirrors
  exit 0
fi

verify() { # file -> 0 if the checksum matches
  [ "$(kle_sha256 "$1")" = "$KLE_TARBALL_SHA256" ]
}

tarball=""
if [ -n "${KLE_TARBALL:-}" ]; then
  [ -f "$KLE_TARBALL" ] && [ -r "$KLE_TARBALL" ] || kle_die "KLE_TARBALL=$KLE_TARBALL is not a readable file; unset it to download from apt's mirror."
  verify "$KLE_TARBALL" || kle_die "checksum mismatch for KLE_TARBALL=$KLE_TARBALL (want sha256 $KLE_TARBALL_SHA256); point it at an intact $KLE_TARBALL_NAME or unset it."
  tarball=$KLE_TARBALL
else
  mkdir -p "$KLE_CACHE_DIR" 2>/dev/null || kle_die "cannot create cache directory $KLE_CACHE_DIR; set KLE_CACHE_DIR to a writable directory."
  cached="$KLE_CACHE_DIR/$KLE_TARBALL_NAME"
  if [ -f "$cached" ]; then
    if ! verify "$cached"; then
      mv -f "$cached" "$cached.corrupt"
      kle_die "cached $cached failed its sha256 check (moved to $cached.corrupt); rerun to download it again."
    fi
    kle_note "using cached base $cached"
  else
    command -v curl >/dev/null || kle_die "curl is missing; install the Debian package 'curl' (apt-get install curl)."
    if [ -n "${KLE_DEBIAN_MIRROR:-}" ]; then mirrors=$KLE_DEBIAN_MIRROR; else mirrors=$(apt_debian_mirrors || true); fi
    [ -n "$mirrors" ] || kle_die "no Debian archive found in apt's sources under $APT_SOURCES_DIR; set KLE_DEBIAN_MIRROR=<mirror URL ending in /debian> or KLE_TARBALL=<path to $KLE_TARBALL_NAME>."
    # 200 MB tarball; refuse early rather than fill the disk half-way.
    avail_kb=$(df -Pk "$KLE_CACHE_DIR" | awk 'NR==2{print $4}')
    [ "${avail_kb:-0}" -ge 250000 ] || kle_die "not enough disk space in $KLE_CACHE_DIR (need 250 MB free for the base tarball); free space or set KLE_CACHE_DIR."
    part="$cached.part.$$"
    trap 'rm -f "$part"' EXIT
    ok=""
    for m in $mirrors; do
      kle_note "downloading $KLE_TARBALL_NAME from apt mirror $m"
      if curl -fsSL --retry 2 --connect-timeout 20 -o "$part" "$m/$KLE_TARBALL_POOL_PATH"; then ok=1; break; fi
    done
    [ -n "$ok" ] || kle_die "could not download $KLE_TARBALL_POOL_PATH from apt's mirror(s) ($(echo $mirrors)); check the network, or set KLE_TARBALL to a local copy."
    if ! verify "$part"; then
      rm -f "$part"
      kle_die "downloaded $KLE_TARBALL_NAME failed its sha256 check (want $KLE_TARBALL_SHA256); the mirror served a bad file: retry later or set KLE_TARBALL."
    fi
    mv -f "$part" "$cached"
    trap - EXIT
  fi
  tarball=$cached
fi

# Extract the needed subtrees. The stamp names the tarball's checksum and the
# subtree list: anything else means re-extract.
base="$KLE_BUILD_DIR/base"
stamp="$base/.kle-base-complete"
# KLE_BASE_SUBTREES_ONLY (tests) narrows the extraction to fewer subtrees.
if [ -n "${KLE_BASE_SUBTREES_ONLY:-}" ]; then read -r -a KLE_BASE_SUBTREES <<< "$KLE_BASE_SUBTREES_ONLY"; fi
want="$KLE_TARBALL_SHA256 ${KLE_BASE_SUBTREES[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  kle_note "base source already extracted at $base"
  exit 0
fi
mkdir -p "$KLE_BUILD_DIR"
tmp="$KLE_BUILD_DIR/.base.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
members=()
for s in "${KLE_BASE_SUBTREES[@]}"; do members+=("$KLE_TARBALL_TOPDIR/$s"); done
kle_note "extracting ${KLE_BASE_SUBTREES[*]} into $base"
# --no-same-owner: as root, tar would keep the archive's owner (uid 1000).
if ! tar --no-same-owner -xJf "$tarball" -C "$tmp" --strip-components=1 "${members[@]}" 2>"$tmp.err"; then
  msg=$(grep -m1 -i 'space' "$tmp.err" || true); rm -f "$tmp.err"
  [ -n "$msg" ] && kle_die "extraction ran out of disk space in $KLE_BUILD_DIR; free space and rerun."
  if [ -n "${KLE_TARBALL:-}" ]; then kle_die "extracting KLE_TARBALL=$tarball failed although its checksum matched; check the file system and rerun."; fi
  kle_die "extracting $tarball failed although its checksum matched; check the file system, or delete it and rerun to download a fresh copy."
fi
rm -f "$tmp.err"
echo "$want" > "$tmp/.kle-base-complete"
rm -rf "$base"
mv "$tmp" "$base"
trap - EXIT
kle_note "base ready at $base"
