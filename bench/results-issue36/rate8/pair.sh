#!/bin/bash
# usage: pair.sh BUILD TOOL SIZE [extra env...]
B=$1; T=$2; S=$3; shift 3
P=$((20000 + RANDOM % 20000))
env "$@" taskset -c 0 $B/bin/softverbs run -- $T -d softverbs0 -x 3 -p $P -s $S -D 2 > /tmp/srv.$$ 2>&1 &
sp=$!
sleep 0.3
env "$@" taskset -c 1 $B/bin/softverbs run -- $T -d softverbs0 -x 3 -p $P -s $S -D 2 127.0.0.1 > /tmp/cli.$$ 2>&1
wait $sp
echo "$T $S $(basename $(dirname $B)): $(grep -E '^ *'$S' ' /tmp/cli.$$ | awk '{print $NF}') Mmsg/s"
[ -n "$SHOW" ] && { echo ---srv; cat /tmp/srv.$$ | grep -iv "^ *$" | tail -30; echo ---cli; tail -30 /tmp/cli.$$; }
rm -f /tmp/srv.$$ /tmp/cli.$$
