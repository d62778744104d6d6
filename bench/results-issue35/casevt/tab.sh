#!/bin/bash
# tab.sh ROUNDS: rc_events atomic, base/new x event/poll interleaved
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for b in base new; do
    B=/tmp/casevt-base/build; [ $b = new ] && B=/work/wt/casevt/build
    for m in ev poll; do
      if [ $m = poll ]; then export CASEVT_POLL=1; else unset CASEVT_POLL; fi
      v=$($B/bin/rc_events atomic 2>&1 | grep -oE "p10 [0-9]* p50 [0-9]*|[0-9]* K/s" | tr "\n" " ")
      l="$l $b-$m $v"
    done
  done
  echo "$l"
done
