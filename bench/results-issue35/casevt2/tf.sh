#!/bin/bash
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for v in ev evnf poll pollnf; do
    unset CASEVT_POLL CASEVT_NOFENCE; B=/work/wt/casevt2/build
    case $v in evnf) export CASEVT_NOFENCE=1;; poll) export CASEVT_POLL=1;; pollnf) export CASEVT_POLL=1 CASEVT_NOFENCE=1;; esac
    l="$l $v $(timeout 60 $B/bin/rc_events atomic 2>&1 | grep -oE "p50 [0-9]*" | sed 's/p50 //')"
  done
  echo "$l"
done
