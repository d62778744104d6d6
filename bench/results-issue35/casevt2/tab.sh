#!/bin/bash
# tab.sh ROUNDS: rc_events atomic, main/new x event/poll interleaved
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for b in main new; do
    B=/work/base-casevt2/build; [ $b = new ] && B=/work/wt/casevt2/build
    for m in ev poll; do
      if [ $m = poll ]; then export CASEVT_POLL=1; else unset CASEVT_POLL; fi
      v=$(timeout 60 $B/bin/rc_events atomic 2>&1 | grep -oE "p50 [0-9]*|app_wait_passes [0-9]*" | sed 's/app_wait_passes/P/;s/p50 //' | tr "\n" " ")
      l="$l $b-$m $v"
    done
  done
  echo "$l"
done
