#!/bin/sh
# Prints what a runner run sees, and a KLE report with $N launches under the
# transport (test/utils/each-transport.test).
echo "transport=$LIBOMPTARGET_KLE_TRANSPORT expect=$KLE_STANDIN_EXPECT stats=$LIBOMPTARGET_KLE_STATS x=$X"
c=0 s=0 z=0 r=0
case $LIBOMPTARGET_KLE_TRANSPORT in copy) c=$N ;; staged) s=$N ;; zerocopy) z=$N ;; resident) r=$N ;; esac
echo "omptarget KLE stats: device 0: launches copy=$c staged=$s zerocopy=$z resident=$r; fallbacks PoolExhausted=0; slabs=1"
exit ${STATUS:-0}
