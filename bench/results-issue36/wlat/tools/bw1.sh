#!/bin/bash
# bw1.sh BUILD TOOL [ARGS...]: one perftest bandwidth pair, 8 B, between the
# namespaces of lat9k/tools/ns.sh (server l9a on core 0, client l9b on core 1), with
# SOFTVERBS_STATS=1; prints the client's result line and both sides' counters
# named in $SHOW (a regex).
BUILD=$1; TOOL=$2; shift 2
SV=$BUILD/bin/softverbs; P=$((19000 + RANDOM % 1000)); D=/tmp/wlat-bw1
mkdir -p $D
export SOFTVERBS_STATS=1
ip netns exec l9a taskset -c 0 $SV run -- $TOOL -d softverbs0 -x 0 -p $P -s 8 -D 3 "$@" > $D/srv.out 2>&1 &
S=$!
sleep 0.4
ip netns exec l9b taskset -c 1 $SV run -- $TOOL -d softverbs0 -x 0 -p $P -s 8 -D 3 "$@" 10.233.9.1 > $D/cli.out 2>&1
wait $S
echo "$TOOL $* $(grep -A1 'BW average' $D/cli.out | tail -1 | awk '{print "MsgRate(Mpps)=" $5}' | sed 's/softverbs:.*//')"
for s in srv cli; do echo " $s: $(grep -E "${SHOW:-thread_handoffs|handoff_passes|thread_late_rx|thread_naps |handoff_late}" $D/$s.out | awk '{printf "%s=%s ", $1, $2}')"; done
