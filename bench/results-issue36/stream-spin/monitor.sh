#!/bin/bash
one(){ (cd $1/tests/integration; SOFTVERBS_FASTPATH=0 SOFTVERBS_STRICT=1 timeout 60 ../../bin/$2 $3 2>&1 | grep -oE 'in [0-9]+ ms|: [0-9]+ voluntary|messages, [0-9]+ voluntary|preempted [0-9]+' | tr '\n' ' '); }
while :; do
  echo "$(date +%H:%M:%S) base: $(one ${BASE:-/work/base-8d4e595/build} rc_stream write) new: $(one ${NEW:-build} rc_stream write) polled-new: $(one ${NEW:-build} rc_events stream_polled) polled-base: $(one ${BASE:-/work/base-8d4e595/build} rc_events stream_polled) load=$(cut -d' ' -f1 /proc/loadavg)"
  sleep 60
done
