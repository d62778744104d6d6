#!/bin/bash
# pl.sh BUILD TOOL [extra]: perftest latency pair pinned 0/1, prints t_typical
B=$1; T=$2; shift 2
SV=$B/bin/softverbs
G=$($SV devices | sed -n 's/^ *GID\[ *\([0-9]*\)\] *::ffff:127\.0\.0\.1 .*/\1/p' | head -1)
PORT=$((30000 + RANDOM % 5000))
taskset -c 0 $SV run -- $T -d softverbs0 -x $G -p $PORT -s 8 -n 20000 "$@" > pl.srv.log 2>&1 &
SP=$!
sleep 0.5
taskset -c 1 $SV run -- $T -d softverbs0 -x $G -p $PORT -s 8 -n 20000 "$@" 127.0.0.1 > pl.cli.log 2>&1
wait $SP
awk '/^ *8 /{print $5}' pl.cli.log | head -1
