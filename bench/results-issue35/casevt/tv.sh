#!/bin/bash
# tv.sh ROUNDS: one binary, variants by env, interleaved
B=/work/wt/casevt/build/bin/rc_events
for r in $(seq $1); do
  l="$(cut -d' ' -f1 /proc/loadavg)"
  for v in full late poll; do
    unset CASEVT_NOLOOK CASEVT_POLL CASEVT_RELAX CASEVT_LATE
    case $v in full) export CASEVT_NOLOOK=1;; poll) export CASEVT_POLL=1;; late) export CASEVT_NOLOOK=1 CASEVT_LATE=1;; esac
    l="$l $v $($B atomic 2>&1 | grep -oE "p50 [0-9]*|app_wait_passes [0-9]*" | sed 's/app_wait_passes/P/' | tr '\n' ' ')"
  done
  echo "$l"
done
