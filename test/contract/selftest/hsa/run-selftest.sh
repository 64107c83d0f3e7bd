#!/bin/sh
# One HSA stand-in self-test case and its verdict:
#   run-selftest.sh <kle_hsa_standin_selftest> <case> ok
#       must exit 0, with "violations=0" and no VIOLATION line
#   run-selftest.sh <kle_hsa_standin_selftest> <case> <ERE>
#       must exit 97 with at least one VIOLATION line matching <ERE>
set -u
T="$1"; c="$2"; want="$3"
out=$(mktemp)
"$T" "$c" 2>"$out"; rc=$?
nviol=$(grep -c 'kle-hsa-standin: VIOLATION' "$out")
if [ "$want" = ok ]; then
  if [ $rc -eq 0 ] && [ "$nviol" -eq 0 ] && grep -q 'violations=0' "$out"; then
    echo "PASS $c"; rm -f "$out"; exit 0
  fi
else
  if [ $rc -eq 97 ] && grep 'kle-hsa-standin: VIOLATION' "$out" | grep -Eq -- "$want"; then
    echo "PASS $c (rc=$rc, $nviol violation line(s))"
    grep 'kle-hsa-standin: VIOLATION' "$out" | sed 's/^/    /'
    rm -f "$out"; exit 0
  fi
fi
echo "FAIL $c (rc=$rc, $nviol violation line(s), want $want)"
cat "$out"; rm -f "$out"; exit 1
