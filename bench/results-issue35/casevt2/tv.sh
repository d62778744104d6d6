#!/bin/bash
# tv.sh ROUNDS: variants interleaved: main ev, new ev, new ev+pause in the look loop, new poll
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for v in main new relax poll; do
    unset CASEVT_POLL CASEVT_RELAX; B=/work/wt/casevt2/build
    case $v in main) B=/work/base-casevt2/build;; relax) export CASEVT_RELAX=1;; poll) export CASEVT_POLL=1;; esac
    l="$l $v $(timeout 60 $B/bin/rc_events atomic 2>&1 | grep -oE "p50 [0-9]*" | sed 's/p50 //')"
  done
  echo "$l"
done
