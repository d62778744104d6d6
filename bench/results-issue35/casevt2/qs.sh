#!/bin/bash
# usage: qs.sh BUILD TEST [client-extra...]: 4 s run, stats snapshots at 1.2 s and 2.2 s, diff printed
B=$1; T=$2; shift 2
PORT=${PORT:-$((24000 + RANDOM % 5000))}
SV=$B/bin/softverbs
D=/tmp/casevt2/s.$PORT; mkdir -p $D
env $ENVS taskset -c 0 $SV run -- qperf -lp $PORT > $D/srv.log 2>&1 &
SP=$!
for i in $(seq 100); do ss -ltn | grep -q ":$PORT " && break; sleep 0.05; done
env $ENVS taskset -c 1 $SV run -- qperf -lp $PORT -cm1 -t 4 "$@" 127.0.0.1 $T > $D/cli.log 2>&1 &
CP=$!
sleep 1.2; for i in 1 2 3 4 5 6 7 8 9 10; do [ "$(pgrep -f "^qperf -lp $PORT$" | wc -l)" -ge 2 ] && break; sleep 0.1; done
SPID=$(pgrep -f "^qperf -lp $PORT$" | tail -1)
CPID=$(pgrep -f "^qperf -lp $PORT -cm1" | head -1); echo "pids s=$SPID c=$CPID"
$SV stats -v $SPID > $D/s1 2>/dev/null; $SV stats -v $CPID > $D/c1 2>/dev/null
if [ -n "$PERF" ]; then perf stat -e context-switches,cpu-migrations,task-clock -p $SPID,$CPID --per-thread -- sleep 1 2> $D/perf.txt; else sleep 1; fi
$SV stats -v $SPID > $D/s2 2>/dev/null; $SV stats -v $CPID > $D/c2 2>/dev/null
wait $CP
kill $SP 2>/dev/null; wait $SP 2>/dev/null
grep msg_rate $D/cli.log
python3 - $D <<'PY'
import sys,re
d=sys.argv[1]
def rd(f):
    r={}
    for l in open(f):
        m=re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s",l)
        if m: r[m.group(1)]=int(m.group(2))
    return r
for side in "sc":
    a,b=rd(f"{d}/{side}1"),rd(f"{d}/{side}2")
    print("server" if side=="s" else "client", " ".join(f"{k}={b[k]-a.get(k,0)}" for k in sorted(b) if b[k]-a.get(k,0)))
PY
if [ -n "$PERF" ]; then grep -E "context|migr|task-clock" $D/perf.txt; fi
true
