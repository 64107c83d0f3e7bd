#!/bin/sh
# Stands in for both bench/launch-cost and valgrind in
# launch-cost-errors.test. As the bench: "devices" lists one host device. As
# valgrind (called with --callgrind-out-file=F ... BENCH KIND N): writes a
# callgrind file whose total Ir is FAKE_IR_BASE + N * FAKE_IR_PER_REGION
# (a negative per-region figure plants run-to-run variation larger than the
# regions' work) and prints the bench's "regions done"; a nowait run uses
# FAKE_NOWAIT_PER_REGION if set. FAKE_SLEEP=S: any run but "devices" hangs
# for S seconds instead. FAKE_CUDA=1: "devices" also lists a CUDA device.
if [ "$1" = devices ]; then
  echo "0 x86_64-0"
  [ -z "$FAKE_CUDA" ] || echo "1 CUDA-fake"
  exit 0
fi
[ -z "$FAKE_SLEEP" ] || exec sleep "$FAKE_SLEEP"
out=
for arg in "$@"; do
  case "$arg" in --callgrind-out-file=*) out=${arg#--callgrind-out-file=} ;; esac
  [ "$arg" = nowait ] && [ -n "$FAKE_NOWAIT_PER_REGION" ] &&
    FAKE_IR_PER_REGION=$FAKE_NOWAIT_PER_REGION
  n=$arg
done
printf 'events: Ir\nsummary: %d\n' $((FAKE_IR_BASE + n * FAKE_IR_PER_REGION)) > "$out"
echo "regions done"
