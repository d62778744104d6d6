#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# SOFTVERBS_ROCE=standard shared by the processes of a namespace: the one
# holding UDP 4791 forwards what belongs to the others into their shm
# rings, and when it exits another takes the port over.  Two network
# namespaces joined by a veth pair (root), unmodified ibv_rc_pingpong -c
# (every received byte checked):
#   roce_shared.sh forward   an idle standard-mode process holds 4791 in
#                            each namespace; a pingpong pair between two
#                            other processes must complete, each side
#                            warned once naming the holder's pid and
#                            receiving through its ring (shm_rx_pkts)
#   roce_shared.sh takeover  the server starts while another process
#                            holds 4791, which then exits: the server must
#                            take the port over (roce_takeover 1) and the
#                            pair complete
set -u
mode=${1:-forward}
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
run=("$build/bin/softverbs" run --)
[ -x "$build/bin/softverbs" ] || { echo "no $build/bin/softverbs"; exit 1; }
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
source "$net/netns.sh"
sv_netns_usable || exit 77

a="svrs-$$-a" b="svrs-$$-b"
tmp=$(mktemp -d /tmp/sv-rshared.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
sv_netns_pair "$a" "$b" 10.233.0.1/24 10.233.0.2/24 || { echo "veth setup failed"; exit 1; }
export SOFTVERBS_ROCE=standard SOFTVERBS_STATS=1
gid_of() { # ns ip
	ip netns exec "$1" "${run[@]}" ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$2, RoCE v2/\1/p" | head -n1
}
ga=$(gid_of "$a" 10.233.0.1) gb=$(gid_of "$b" 10.233.0.2)
[ -n "$ga" ] && [ -n "$gb" ] || { echo "no GIDs"; exit 1; }

# The pid holding UDP 4791 in namespace $1 ("" if none), waiting up to
# 10 s for it to be $2 (any holder when $2 is empty).
holder() {
	local h
	for _ in $(seq 200); do
		h=$(ip netns exec "$1" ss -Hlunp "sport = :4791" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n1)
		[ -n "$h" ] && { [ -z "$2" ] || [ "$h" = "$2" ]; } && break
		sleep 0.05
	done
	echo "$h"
}
# An idle holder: a pingpong server on a TCP port no client comes to.
idle() { # ns gid
	ip netns exec "$1" timeout -k 5 60 "${run[@]}" "$pp" -g "$2" -p 18599 >"$tmp/idle.$1" 2>&1 &
	pids+=($!)
}
wait_listen() { # ns port
	for _ in $(seq 200); do
		ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

fail=0
case $mode in
forward)
	idle "$a" "$ga"
	idle "$b" "$gb"
	ha=$(holder "$a" "") hb=$(holder "$b" "")
	[ -n "$ha" ] && [ -n "$hb" ] || { echo "FAIL: no idle holder of 4791"; exit 1; }
	;;
takeover)
	idle "$a" "$ga"
	ha=$(holder "$a" "")
	[ -n "$ha" ] || { echo "FAIL: no idle holder of 4791"; exit 1; }
	;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

ip netns exec "$a" timeout -k 5 60 "${run[@]}" "$pp" -g "$ga" -p 18515 -c -n 1000 >"$tmp/server" 2>&1 &
srv=$!
pids+=($srv)
wait_listen "$a" 18515 || { echo "FAIL: the server does not listen"; cat "$tmp/server"; exit 1; }
if [ "$mode" = takeover ]; then
	kill "${pids[0]}"
	# The server's progress thread tries every 200 ms.
	spid=$(ip netns exec "$a" ss -Hltnp "sport = :18515" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n1)
	now=$(holder "$a" "$spid")
	[ "$now" = "$spid" ] || echo "FAIL: the server (pid $spid) did not take 4791 over (holder: '$now')"
fi
ip netns exec "$b" timeout -k 5 60 "${run[@]}" "$pp" -g "$gb" -p 18515 -c -n 1000 10.233.0.1 >"$tmp/client" 2>&1
crc=$?
wait "$srv"
src=$?

echo "--- server (exit $src) ---"; cat "$tmp/server"
echo "--- client (exit $crc) ---"; cat "$tmp/client"
[ $src = 0 ] || { echo "FAIL: server exit status $src"; fail=1; }
[ $crc = 0 ] || { echo "FAIL: client exit status $crc"; fail=1; }
for side in server client; do
	grep -qE "^$((4096 * 1000 * 2)) bytes in [0-9.]+ seconds" "$tmp/$side" ||
		{ echo "FAIL: $side did not move every byte"; fail=1; }
done
stat() { sed -n "s/^ *$2 *\([0-9]*\) .*/\1/p" "$tmp/$1" | head -n1; }
case $mode in
forward)
	for side in server client; do
		h=$ha; [ $side = client ] && h=$hb
		grep -q "softverbs warning: SOFTVERBS_ROCE=standard: UDP 4791 is held by pid $h (ibv_rc_pingpong)" "$tmp/$side" ||
			{ echo "FAIL: $side was not told pid $h holds 4791"; fail=1; }
		[ "$(stat $side shm_rx_pkts)" -ge 1000 ] 2>/dev/null ||
			{ echo "FAIL: $side did not receive through its ring"; fail=1; }
	done
	;;
takeover)
	[ "$(stat server roce_takeover)" = 1 ] || { echo "FAIL: server's roce_takeover is not 1"; fail=1; }
	;;
esac
[ $fail = 0 ] && echo "PASS: roce_shared $mode"
exit $fail
