#!/bin/bash
# run1.sh BUILD N TOOL [WRAP...]: one perftest pair in l9a/l9b; in WRAP, SIDE becomes srv/cli
BUILD=$1; N=$2; TOOL=$3; shift 3
SV=$BUILD/bin/softverbs; P=$((19000 + RANDOM % 1000))
W=("$@"); WS=("${W[@]//SIDE/srv}"); WC=("${W[@]//SIDE/cli}")
ip netns exec l9a taskset -c 0 "${WS[@]}" $SV run -- $TOOL -d softverbs0 -x 0 -p $P -s 8 -n $N $EXTRA > /tmp/lat9k/srv.out 2>&1 &
S=$!
sleep 0.4
ip netns exec l9b taskset -c 1 "${WC[@]}" $SV run -- $TOOL -d softverbs0 -x 0 -p $P -s 8 -n $N $EXTRA 10.233.9.1 > /tmp/lat9k/cli.out 2>&1
wait $S
grep -A1 t_typical /tmp/lat9k/cli.out | tail -1
