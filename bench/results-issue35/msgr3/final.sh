#!/bin/bash
# final.sh ROUNDS: interleaved base/new for shm, udp, and tcp; raw logs kept
OUT=/work/wt/msgr3/bench/results-issue35/msgr3
R=$1
for r in $(seq 1 $R); do
  for mode in shm udp tcp; do
    for b in base new; do
      [ $mode = tcp ] && [ $b = new ] && continue
      if [ $b = base ]; then B=/work/base-9c15a98/build; else B=/work/wt/msgr3/build; fi
      env=""; m=stream
      [ $mode = udp ] && env="SOFTVERBS_FASTPATH=0"
      [ $mode = tcp ] && m=tcp
      q=$(/tmp/m3/quiet.sh)
      la=$(cut -d' ' -f1 /proc/loadavg)
      f=$OUT/raw/r$r-$mode-$b.log
      env $env taskset -c 0,1 $B/bin/rc_messenger $m > $f 2>&1
      rate=$(grep -o '[0-9.]* MiB/s each way' $f | awk '{print $1}' | sort -n | head -1)
      lng=$(grep -o 'longest SEND [0-9]*' $f | awk '{print $3}' | sort -n | tail -1)
      echo "$r $mode $b $rate ${lng:--} idle_before=$q load=$la"
    done
  done
done
