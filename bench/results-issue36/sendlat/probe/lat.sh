#!/bin/bash
# usage: lat.sh BUILD TOOL SIZE [N] ; env passed through
B=$1; T=$2; S=$3; N=${4:-100}
P=$((20000 + RANDOM % 20000))
taskset -c 0 $B/bin/softverbs run -- $T -d softverbs0 -x 3 -p $P -s $S -n $N >/tmp/sl/srv.$$ 2>&1 &
sp=$!
sleep 0.3
taskset -c 1 $B/bin/softverbs run -- $T -d softverbs0 -x 3 -p $P -s $S -n $N 127.0.0.1 >/tmp/sl/cli.$$ 2>&1
wait $sp
grep -E "^ *[0-9]+ +[0-9]+" /tmp/sl/cli.$$ | tail -1
[ -n "$SHOW" ] && { cat /tmp/sl/srv.$$; cat /tmp/sl/cli.$$; }
rm -f /tmp/sl/srv.$$ /tmp/sl/cli.$$
