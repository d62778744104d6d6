#!/bin/bash
# usage: q.sh BUILD TEST [client-extra...]   env: PORT, WRAPS (prefix for client), SWRAP (prefix for server), ENVS
B=$1; T=$2; shift 2
PORT=${PORT:-$((24000 + RANDOM % 5000))}
SV=$B/bin/softverbs
env $ENVS taskset -c 0 $SWRAP $SV run -- qperf -lp $PORT > /tmp/casevt2/srv.$PORT.log 2>&1 &
SP=$!
for i in $(seq 100); do ss -ltn | grep -q ":$PORT " && break; sleep 0.05; done
env $ENVS taskset -c 1 $WRAPS $SV run -- qperf -lp $PORT -cm1 -t ${SECS:-2} "$@" 127.0.0.1 $T > /tmp/casevt2/cli.$PORT.log 2>&1; grep -E "msg_rate|bw  |latency" /tmp/casevt2/cli.$PORT.log; [ -n "$SHOWCLI" ] && cat /tmp/casevt2/cli.$PORT.log
kill $SP 2>/dev/null; wait $SP 2>/dev/null
[ -n "$SHOWSRV" ] && cat /tmp/casevt2/srv.$PORT.log
true
