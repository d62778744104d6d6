#!/bin/bash
# floor1.sh BUILD MODE N [WRAP]: udp_floor pair
BUILD=$1; M=$2; N=$3; shift 3
P=$((20000 + RANDOM % 1000))
W=("$@"); WS=("${W[@]//SIDE/srv}"); WC=("${W[@]//SIDE/cli}")
ip netns exec l9a taskset -c 0 "${WS[@]}" $BUILD/bench/udp_floor $M server $P > /tmp/lat9k/fsrv.out 2>&1 &
S=$!; sleep 0.3
ip netns exec l9b taskset -c 1 "${WC[@]}" $BUILD/bench/udp_floor $M client $P 10.233.9.1 $N
sleep 0.3; ip netns pids l9a | xargs -r kill; wait $S 2>/dev/null
