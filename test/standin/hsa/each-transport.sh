#!/bin/sh
# Usage: each-transport.sh env VAR=... PROGRAM [ARGS...]   (lit: %hsa-each-transport)
# Runs the command once per KLE transport in $KLE_TRANSPORTS (one list, set in
# test/lit.cfg.py), with LIBOMPTARGET_KLE_TRANSPORT and the HSA stand-in's
# KLE_STANDIN_EXPECT set to it, and LIBOMPTARGET_KLE_STATS=1. Each run's
# output (stdout and stderr) follows a line "== transport <t>"; each run has a
# 120 s limit. Exits with the first non-zero status, after the run that gave it;
# with KLE_PROGRAM_MAY_FAIL=1 in the environment, statuses 1..95 (the program's own verdict:
# kernels compute nothing on a stand-in) are printed and tolerated, while 96
# (watchdog), 97 (contract violations), timeouts and crashes still fail.
set -u
: "${KLE_TRANSPORTS:?KLE_TRANSPORTS is not set (test/lit.cfg.py sets it)}"
may_fail=${KLE_PROGRAM_MAY_FAIL:-0}
[ $# -ge 1 ] || { echo "each-transport.sh: no command" >&2; exit 2; }
for t in $KLE_TRANSPORTS; do
  case "$t" in
    zerocopy|staged|copy|resident) expect=$t ;;
    *) expect=any ;;  # a transport the stand-in has no placement rule for yet
  esac
  echo "== transport $t"
  LIBOMPTARGET_KLE_TRANSPORT=$t KLE_STANDIN_EXPECT=$expect LIBOMPTARGET_KLE_STATS=1 \
    timeout 120 "$@" 2>&1
  rc=$?
  if [ $may_fail -eq 1 ] && [ $rc -ge 1 ] && [ $rc -le 95 ]; then
    echo "each-transport.sh: transport $t: program exit status $rc (tolerated)"; rc=0
  fi
  [ $rc -eq 0 ] || { echo "each-transport.sh: transport $t: exit status $rc"; exit $rc; }
done
