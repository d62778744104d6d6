#!/bin/bash
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for v in ev stale poll; do
    unset CASEVT_POLL CASEVT_STALE; B=/work/wt/casevt2/build
    case $v in stale) export CASEVT_STALE=1;; poll) export CASEVT_POLL=1;; esac
    l="$l $v $(timeout 60 $B/bin/rc_events atomic 2>&1 | grep -oE "p50 [0-9]*" | sed 's/p50 //')"
  done
  echo "$l"
done
