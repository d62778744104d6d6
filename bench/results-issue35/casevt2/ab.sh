#!/bin/bash
# ab.sh ROUNDS TEST: main/new x events/-cp1 interleaved qperf, 2 s each
T=${2:-rc_compare_swap_mr}
for r in $(seq $1); do
  l="r$r $(cut -d' ' -f1 /proc/loadavg)"
  for b in main new; do
    B=/work/base-casevt2/build; [ $b = new ] && B=/work/wt/casevt2/build
    ev=$("$(dirname "$0")"/../casevt/q.sh $B $T | awk '{print $3 $4}')
    po=$("$(dirname "$0")"/../casevt/q.sh $B $T -cp1 | awk '{print $3 $4}')
    l="$l $b ev=$ev cp1=$po"
  done
  echo "$l"
done
