#!/bin/bash
# prof.sh BUILD NAME [client-extra]: perf record the qperf client (flat, cpu-clock) for 1.5 s
B=$1; N=$2; shift 2
PORT=$((24000 + RANDOM % 5000))
SV=$B/bin/softverbs
taskset -c 0 $SV run -- qperf -lp $PORT > srv.$N.log 2>&1 &
SP=$!
for i in $(seq 100); do ss -ltn | grep -q ":$PORT " && break; sleep 0.05; done
taskset -c 1 $SV run -- qperf -lp $PORT -cm1 -t 4 "$@" 127.0.0.1 rc_compare_swap_mr > cli.$N.log 2>&1 &
CP=$!
sleep 1.2; pgrep -af "qperf -lp $PORT" >> pids.log
CPID=$(pgrep -f "^qperf -lp $PORT -cm1" | head -1)
SPID=$(pgrep -f "^qperf -lp $PORT$" | tail -1)
perf record -q -F 4000 -e cpu-clock -o perf.$N.c.data -p $CPID -- sleep 1.5 2>/dev/null &
perf record -q -F 4000 -e cpu-clock -o perf.$N.s.data -p $SPID -- sleep 1.5 2>/dev/null
wait $CP; kill $SP; wait $SP 2>/dev/null
grep msg_rate cli.$N.log
