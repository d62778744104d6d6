#!/bin/bash
# alternate main and wbwq builds: netns ib_write_bw / ib_send_bw / iperf3 at MTU 1500
for i in 1 2 3; do
  for b in main wbwq; do
    BENCH_REPEATS=3 BENCH_NETNS_MTUS=1500 BENCH_NETNS_LOSS=0 BENCH_NETNS_SHARE_RATE= \
    BENCH_NETNS_ONLY="ib_write_bw,ib_send_bw,iperf3*" BENCH_OUT=/tmp/wbwab/$b.$i \
    timeout 900 python3 /work/main/bench/netns.py /work/$b/build > /tmp/wbwab/$b.$i.log 2>&1
    grep -i "ib_write_bw 1 MiB / iperf3\|ib_send_bw 1 MiB / iperf3" /tmp/wbwab/$b.$i/netns.md | sed "s/^/$b.$i /"
  done
done
