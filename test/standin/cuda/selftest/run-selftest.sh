#!/bin/sh
# Runs every self-test case and checks the verdicts:
#   overwrite, free, staged-race : must exit non-zero with VIOLATION lines
#   correct, staged-ok, api      : must exit 0 with "violations=0"
# Usage: run-selftest.sh <path-to-kle_standin_selftest> [cubin]
set -u
T="$1"; shift
rc_all=0
out=$(mktemp)
for c in overwrite free staged-race correct staged-ok api; do
  if [ "$c" = api ]; then
    KLE_STANDIN_FAIL=cuMemAllocHost:2:2 "$T" "$c" "$@" 2>"$out"; rc=$?
  else
    "$T" "$c" "$@" 2>"$out"; rc=$?
  fi
  [ $rc -eq 77 ] && { echo "SKIP $c"; continue; }
  nviol=$(grep -c 'kle-standin: VIOLATION' "$out")
  case $c in
    overwrite|free|staged-race)
      if [ $rc -ne 0 ] && [ "$nviol" -gt 0 ]; then echo "PASS $c (rc=$rc, $nviol violation line(s))";
      else echo "FAIL $c (rc=$rc, $nviol violation line(s))"; cat "$out"; rc_all=1; fi ;;
    *)
      if [ $rc -eq 0 ] && [ "$nviol" -eq 0 ] && grep -q 'violations=0' "$out"; then echo "PASS $c";
      else echo "FAIL $c (rc=$rc)"; cat "$out"; rc_all=1; fi ;;
  esac
  grep 'kle-standin: VIOLATION' "$out" | sed 's/^/    /'
done
rm -f "$out"
exit $rc_all
