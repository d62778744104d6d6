#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The source address of a UDP send (link/udp.c said_src): a packet names it
# (IP_PKTINFO) unless the kernel would pick that address anyway, which is
# looked up per destination and kept while the host's addresses and routes
# stay as they were.  Unmodified Debian ibv_rc_pingpong (-c: the bytes
# checked), server in namespace A (10.231.7.1/24 and a second address
# 10.231.7.11/24 on the same veth), client in B (10.231.7.2/24), each
# through build/bin/softverbs run with SOFTVERBS_STATS=1:
#   implied  A's GID is 10.231.7.1, the kernel's choice towards B: no send
#            of A's names its source (no src_said), one lookup at least
#   said     A's GID is 10.231.7.11, not the kernel's choice: A's sends
#            name it (src_said), else B would drop them (wrong peer, ICRC)
#   moved    A's GID is 10.231.7.1, and mid-run the route to B is changed
#            to leave from 10.231.7.11: the address monitor hears of it,
#            A looks again and names its source from then on (src_said);
#            a packet sent in between may be dropped and resent, but the
#            run completes with every byte checked
# Every case: both exit 0, "N bytes in" and "N iters in" on both sides;
# implied and said: no packet dropped as bad ICRC or from the wrong peer.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
run=("$build/bin/softverbs" run --)
[ -x "$build/bin/softverbs" ] || { echo "no $build/bin/softverbs"; exit 1; }
source "$net/netns.sh"
source "$net/port.sh"
SV_RUN=("${run[@]}")
source "$net/pingpong.sh"
sv_netns_usable || exit 77

a="svsrc-$$-a" b="svsrc-$$-b"
tmp=$(mktemp -d /tmp/sv-src.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
sv_netns_pair "$a" "$b" 10.231.7.1/24 10.231.7.2/24 || { echo "veth setup failed"; exit 1; }
ip -n "$a" addr add 10.231.7.11/24 dev sv0 || { echo "second address failed"; exit 1; }
export SOFTVERBS_STATS=1

fail=0
size=4096
# pair CASE SERVER_IP ITERS: one ibv_rc_pingpong pair; for "moved", the
# route changes once the server has sent for a while.
pair() {
	local name=$1 sip=$2 iters=$3 sgid cgid port crc src t0=$SECONDS
	sgid=$(sv_pp_gid "$sip" "$a") cgid=$(sv_pp_gid 10.231.7.2 "$b")
	[ -n "$sgid" ] && [ -n "$cgid" ] || { echo "FAIL: $name: no GID for $sip / 10.231.7.2"; fail=1; return; }
	port=$(sv_free_port ip netns exec "$a") || { fail=1; return; }
	ip netns exec "$a" timeout -k 5 60 "${run[@]}" "$pp" -c -g "$sgid" -p "$port" -n "$iters" \
		>"$tmp/$name.server" 2>&1 &
	srv_pid=$!
	for _ in $(seq 200); do
		ip netns exec "$a" ss -Hltn "sport = :$port" | grep -q . && break
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ "$name" = moved ]; then
		(
			# Once the exchange runs (the TCP handshake of the
			# pingpong's setup is done when the listener is gone).
			for _ in $(seq 200); do
				ip netns exec "$a" ss -Hltn "sport = :$port" | grep -q . || break
				sleep 0.05
			done
			ip -n "$a" route change 10.231.7.0/24 dev sv0 proto kernel scope link src 10.231.7.11
			ip -n "$a" route get 10.231.7.2 >"$tmp/route"
			echo "$((SECONDS - t0))" >"$tmp/route.at"
		) &
	fi
	ip netns exec "$b" timeout -k 5 60 "${run[@]}" "$pp" -c -g "$cgid" -p "$port" -n "$iters" 10.231.7.1 \
		>"$tmp/$name.client" 2>&1
	crc=$?
	wait "$srv_pid"
	src=$?
	echo "$((SECONDS - t0))" >"$tmp/$name.end"
	srv_pid=
	wait
	echo "--- $name: server (GID $sgid, $sip; exit $src) ---"; cat "$tmp/$name.server"
	echo "--- $name: client (GID $cgid; exit $crc) ---"; cat "$tmp/$name.client"
	[ $src = 0 ] || { echo "FAIL: $name: server exit status $src"; fail=1; }
	[ $crc = 0 ] || { echo "FAIL: $name: client exit status $crc"; fail=1; }
	sv_pp_check "$name" "$tmp/$name" $size "$iters" || fail=1
}

pair implied 10.231.7.1 2000
sv_pp_no_drops implied "$tmp/implied" || fail=1
said=$(sv_pp_stat src_said "$tmp/implied.server") looked=$(sv_pp_stat src_lookups "$tmp/implied.server")
echo "implied: server src_said $said, src_lookups $looked"
[ "$said" = 0 ] || { echo "FAIL: implied: the server named its source $said times"; fail=1; }
[ "$looked" -ge 1 ] || { echo "FAIL: implied: the server made no route lookup"; fail=1; }

pair said 10.231.7.11 2000
sv_pp_no_drops said "$tmp/said" || fail=1
said=$(sv_pp_stat src_said "$tmp/said.server")
echo "said: server src_said $said"
[ "$said" -ge 2000 ] || { echo "FAIL: said: the server named its source $said times, expected every send (2000 at least)"; fail=1; }

# 100,000 round trips (about 1.5 s on a quiet host, longer under load):
# the route changes as soon as the exchange starts (the listener is gone),
# so the run outlasts the change whatever the load; the 60 s timeout is
# only a safety net.
pair moved 10.231.7.1 100000
echo "route after the change: $(cat "$tmp/route" 2>/dev/null)"
echo "moved: the route changed at $(cat "$tmp/route.at" 2>/dev/null) s, the server ended at $(cat "$tmp/moved.end") s (from the pair's start)"
grep -q "src 10.231.7.11" "$tmp/route" 2>/dev/null || { echo "FAIL: moved: the route did not change (the run ended first?)"; fail=1; }
said=$(sv_pp_stat src_said "$tmp/moved.server")
echo "moved: server src_said $said"
[ "$said" -ge 1 ] || { echo "FAIL: moved: the server never named its source after the route changed"; fail=1; }

[ $fail = 0 ] && echo "PASS: udp_source: implied, said, moved"
exit $fail
