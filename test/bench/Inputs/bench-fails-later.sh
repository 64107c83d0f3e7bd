#!/bin/sh
# A kle-bench whose benchmark runs fail from the (KLE_FAIL_AFTER+1)-th on,
# the way a run stopped in the middle of a comparison (the run's time
# limit) ends it: every other call goes to the real kle-bench
# ($KLE_REAL_BENCH). The count is kept in $KLE_FAIL_COUNTER.
case "$1" in
  --list-devices|--latency-samples|--launches|--benchmark_list_tests) exec "$KLE_REAL_BENCH" "$@" ;;
esac
n=$(($(cat "$KLE_FAIL_COUNTER" 2>/dev/null || echo 0) + 1))
echo "$n" > "$KLE_FAIL_COUNTER"
[ "$n" -le "$KLE_FAIL_AFTER" ] || { echo "bench-fails-later: stopped at run $n" >&2; exit 1; }
exec "$KLE_REAL_BENCH" "$@"
