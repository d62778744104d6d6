#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified Debian ibv_rc_pingpong, server and client on one host, both run
# through build/bin/softverbs run (or LD_LIBRARY_PATH=<build>/lib until that
# exists), on a random free TCP port, each under a timeout.
#   rc_pingpong.sh default|events|size1m|small100k|validate
# and in the modes that use the extended verbs:
#   rc_pingpong.sh newsend      -N: ibv_create_qp_ex + the ibv_wr_* API
#   rc_pingpong.sh ts           -t: ibv_create_cq_ex with completion
#                               timestamps, ibv_query_rt_values_ex
#   rc_pingpong.sh all          -N -t -c -s 20000 (validated payloads)
# Checks both exit codes and the "N bytes in S seconds" / "N iters in"
# lines, whose byte count must be size * iters * 2.  With -t, rc_pingpong
# prints the average distance between receive completions in device clock
# cycles; softverbs' clock ticks once per nanosecond (hca_core_clock 1 GHz),
# so that average must agree with the measured usec/iter: real timestamps,
# not made-up ones.
set -u
mode=${1:-default}
build=${SV_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }

size=4096 iters=1000 extra=() ts=0
case $mode in
default) ;;
events) extra=(-e) ;;
size1m) size=1000000; extra=(-s 1000000) ;;
small100k) size=1 iters=100000; extra=(-n 100000 -s 1) ;;
validate) size=20000; extra=(-c -s 20000) ;;
newsend) extra=(-N) ;;
ts) extra=(-t); ts=1 ;;
all) size=20000; extra=(-N -t -c -s 20000); ts=1 ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

if [ -x "$build/bin/softverbs" ]; then
	run=("$build/bin/softverbs" run --)
else
	export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	run=()
fi

source "${SV_NET:-$(dirname "$0")/../net}/port.sh"
source "${SV_NET:-$(dirname "$0")/../net}/gid.sh"
# Loopback's GID: both processes of this host (SV_GID_INDEX overrides).
gid=${SV_GID_INDEX:-$(sv_gid_of 127.0.0.1 "${run[@]}")}
[ -n "$gid" ] || { echo "FAIL: no GID for 127.0.0.1"; exit 1; }
port=$(sv_free_port) || exit 1

tmp=$(mktemp -d /tmp/sv-rcpp.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

timeout -k 5 75 "${run[@]}" "$pp" -g "$gid" -p "$port" "${extra[@]}" >"$tmp/server" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do
	ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
timeout -k 5 70 "${run[@]}" "$pp" -g "$gid" -p "$port" "${extra[@]}" localhost >"$tmp/client" 2>&1
crc=$?
wait "$srv_pid"
src=$?
srv_pid=

echo "--- server (exit $src) ---"; cat "$tmp/server"
echo "--- client (exit $crc) ---"; cat "$tmp/client"

fail=0
want=$((size * iters * 2))
for side in server client; do
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds' "$tmp/$side")
	if [ -z "$line" ]; then
		echo "FAIL: $side printed no 'bytes in' line"; fail=1; continue
	fi
	got=${line%% *}
	if [ "$got" != "$want" ]; then
		echo "FAIL: $side moved $got bytes, expected $want"; fail=1
	fi
	iline=$(grep -E "^$iters iters in [0-9.]+ seconds" "$tmp/$side")
	[ -n "$iline" ] || { echo "FAIL: $side has no '$iters iters in' line"; fail=1; continue; }
	[ $ts = 1 ] || continue
	avg=$(sed -n 's/^Average receive completion clock cycles = \([0-9.]*\).*/\1/p' "$tmp/$side")
	usec=$(echo "$iline" | sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p')
	if [ -z "$avg" ] || [ -z "$usec" ]; then
		echo "FAIL: $side printed no timestamp average"; fail=1; continue
	fi
	# One receive completion per iteration: cycles (ns) per completion
	# against the wall-clock time per iteration.  The average is the
	# span from the first receive completion to the last over their
	# number, and ibv_rc_pingpong keeps up to rx_depth messages in flight:
	# on a loaded host the receives bunch up at the end of the run and the
	# span was 0.35 of it (CI rehearsal, 8128 ns against 23.09 us).  So
	# at most 2x above (a clock in CPU cycles, not ns), and no more than
	# 10x below (a clock in us).
	awk -v a="$avg" -v u="$usec" 'BEGIN { r = a / (u * 1000); exit !(r > 0.1 && r < 2) }' ||
		{ echo "FAIL: $side: $avg cycles per completion vs $usec usec/iter"; fail=1; }
done
[ $src = 0 ] || { echo "FAIL: server exit status $src"; fail=1; }
[ $crc = 0 ] || { echo "FAIL: client exit status $crc"; fail=1; }
[ $fail = 0 ] && echo "PASS: ibv_rc_pingpong $mode"
exit $fail
