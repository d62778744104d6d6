#!/bin/bash
for r in 5 6 7 8 9; do
  for b in base new; do
    if [ $b = base ]; then B=/work/base-8d4e595/build; else B=/work/main/build; fi
    BENCH_REPEATS=1 BENCH_NETNS_MTUS=1500 BENCH_NETNS_LOSS=0 BENCH_NETNS_SHARE_RATE= \
      BENCH_NETNS_ONLY="ib_write_bw,iperf3 TCP" BENCH_OUT=${OUT:-/tmp/ab}/$b-$r \
      python3 /work/main/bench/netns.py $B > ${OUT:-/tmp/ab}/$b-$r.log 2>&1
  done
done
echo done
