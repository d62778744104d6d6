#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# An ICRC left to the UDP checksum (proto/wire.h, SV_BTH_ICRC_BY_UDP):
# a softverbs endpoint marks every packet it sends (a reserved BTH bit)
# and accepts a marked packet with a zero ICRC; it leaves its own ICRCs
# so only towards a peer whose packets carried the mark.  Unmodified
# Debian ibv_rc_pingpong (-c: the bytes checked; 4 KiB messages, four
# packets each at MTU 1500), server in namespace A, client in B, each
# through build/bin/softverbs run with SOFTVERBS_STATS=1, a capture on A's
# veth end, which cuts segmented sends into their packets (ethtool: no
# UDP segmentation offload) so that the capture holds wire packets:
#   agreed   both ends default: each leaves ICRCs to the UDP checksum
#            (icrc_left_tx) and takes the other's (icrc_left_rx); on the
#            wire both directions carry marked packets with a zero ICRC,
#            and every other packet's ICRC is right over its real headers;
#            tshark decodes every packet as RoCE, none malformed
#   refused  the server runs with SOFTVERBS_SKIP_ICRC=0: it marks nothing
#            and leaves nothing, so the client leaves nothing either (as
#            towards rxe, a NIC or an older softverbs); on the wire every
#            ICRC is right, and the server's packets are unmarked
#   corrupt  both default, the client flips a bit in 2% of its packets
#            (SOFTVERBS_FAULT corrupt): the server refuses those whose
#            ICRC was left to the checksum too (drop_icrc), and the run
#            completes through retransmission with every byte checked
# Every case: both exit 0 with "N bytes in" and "N iters in" on both
# sides; agreed and refused: no packet dropped.  Skips (77) without
# namespaces or ethtool.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
command -v tshark >/dev/null || { echo "tshark not installed"; exit 1; }
command -v ethtool >/dev/null || { echo "ethtool not installed: skipped"; exit 77; }
run=("$build/bin/softverbs" run --)
[ -x "$build/bin/softverbs" ] || { echo "no $build/bin/softverbs"; exit 1; }
source "$net/netns.sh"
source "$net/port.sh"
SV_RUN=("${run[@]}")
source "$net/pingpong.sh"
source "$net/capture.sh"
sv_netns_usable || exit 77

a="svicrc-$$-a" b="svicrc-$$-b"
tmp=$(mktemp -d /tmp/sv-icrc.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	sv_cap_kill
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
sv_netns_pair "$a" "$b" 10.231.8.1/24 10.231.8.2/24 || { echo "veth setup failed"; exit 1; }
for ns in "$a" "$b"; do
	ip netns exec "$ns" ethtool -K sv0 tx-udp-segmentation off >/dev/null ||
		{ echo "ethtool -K failed"; exit 1; }
done
export SOFTVERBS_STATS=1

fail=0
size=4096 iters=500
# pair CASE SERVER_ENV CLIENT_ENV: one ibv_rc_pingpong pair, captured.
pair() {
	local name=$1 senv=$2 cenv=$3 sgid cgid port crc src
	sgid=$(sv_pp_gid 10.231.8.1 "$a") cgid=$(sv_pp_gid 10.231.8.2 "$b")
	[ -n "$sgid" ] && [ -n "$cgid" ] || { echo "FAIL: $name: no GIDs"; fail=1; return; }
	port=$(sv_free_port ip netns exec "$a") || { fail=1; return; }
	sv_cap_start "$tmp/$name.pcapng" sv0 udp 10.231.8.2 "$a" || { fail=1; return; }
	ip netns exec "$a" timeout -k 5 60 env $senv "${run[@]}" "$pp" -c -s $size -g "$sgid" -p "$port" -n $iters \
		>"$tmp/$name.server" 2>&1 &
	srv_pid=$!
	for _ in $(seq 200); do
		ip netns exec "$a" ss -Hltn "sport = :$port" | grep -q . && break
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.05
	done
	ip netns exec "$b" timeout -k 5 60 env $cenv "${run[@]}" "$pp" -c -s $size -g "$cgid" -p "$port" -n $iters 10.231.8.1 \
		>"$tmp/$name.client" 2>&1
	crc=$?
	wait "$srv_pid"
	src=$?
	srv_pid=
	sv_cap_stop || fail=1
	echo "--- $name: server ($senv; exit $src) ---"; cat "$tmp/$name.server"
	echo "--- $name: client ($cenv; exit $crc) ---"; cat "$tmp/$name.client"
	[ $src = 0 ] || { echo "FAIL: $name: server exit status $src"; fail=1; }
	[ $crc = 0 ] || { echo "FAIL: $name: client exit status $crc"; fail=1; }
	sv_pp_check "$name" "$tmp/$name" $size $iters || fail=1
}

# wire CASE: per direction, "marked left right bad" over the capture's
# RoCE packets (marked: the mark set; left: marked with a zero ICRC;
# right: an ICRC right over the real IP and UDP headers; bad: neither).
wire() {
	tshark -r "$tmp/$1.pcapng" -F pcap -w "$tmp/$1.pcap" 2>/dev/null ||
		{ echo "FAIL: $1: tshark cannot convert the capture"; fail=1; return; }
	python3 - "$tmp/$1.pcap" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from pcap_check import icrc_ok, ipv4_udp
count = {d: [0, 0, 0, 0] for d in ("server", "client")}
for ip in ipv4_udp(sys.argv[1]):
    bth = ip[28:]
    c = count["server" if ip[12:16] == bytes([10, 231, 8, 1]) else "client"]
    marked = bth[4] & 1
    left = marked and ip[-4:] == b"\0\0\0\0"
    c[0] += marked
    c[1] += left
    if not left:
        c[2 if icrc_ok(ip) else 3] += 1
for d in ("server", "client"):
    print(d, *count[d])
PY
}

pair agreed "" ""
sv_pp_no_drops agreed "$tmp/agreed" || fail=1
for side in server client; do
	tx=$(sv_pp_stat icrc_left_tx "$tmp/agreed.$side") rx=$(sv_pp_stat icrc_left_rx "$tmp/agreed.$side")
	echo "agreed: $side icrc_left_tx $tx icrc_left_rx $rx"
	[ "$tx" -ge $iters ] && [ "$rx" -ge $iters ] ||
		{ echo "FAIL: agreed: $side left fewer than $iters ICRCs to the UDP checksum, or took fewer"; fail=1; }
done
wire agreed >"$tmp/agreed.wire" || fail=1
while read -r dir marked left right bad; do
	echo "agreed: wire from the $dir: $marked marked, $left left to the checksum, $right right, $bad bad"
	[ "$left" -ge $iters ] || { echo "FAIL: agreed: the $dir left fewer than $iters ICRCs on the wire"; fail=1; }
	[ "$bad" = 0 ] || { echo "FAIL: agreed: $bad packets from the $dir with a wrong ICRC"; fail=1; }
done <"$tmp/agreed.wire"

# tshark decodes every packet as RoCE, with nothing malformed or warned of
# (the mark is a reserved field to it, and it does not check the ICRC).
ports=$(tshark -r "$tmp/agreed.pcapng" -T fields -e udp.dstport 2>/dev/null | sort -u)
as=()
for p in $ports; do as+=(-d "udp.port==$p,infiniband"); done
total=$(tshark -r "$tmp/agreed.pcapng" "${as[@]}" -Y udp 2>/dev/null | wc -l)
roce=$(tshark -r "$tmp/agreed.pcapng" "${as[@]}" -Y infiniband.bth 2>/dev/null | wc -l)
warned=$(tshark -r "$tmp/agreed.pcapng" "${as[@]}" -Y "_ws.malformed || _ws.expert.severity >= warning" 2>/dev/null | wc -l)
echo "agreed: tshark: $total UDP packets, $roce decoded as RoCE, $warned malformed or warned of"
[ "$total" -gt 0 ] && [ "$roce" = "$total" ] && [ "$warned" = 0 ] ||
	{ echo "FAIL: agreed: tshark does not decode every packet cleanly"; fail=1; }

pair refused "SOFTVERBS_SKIP_ICRC=0" ""
sv_pp_no_drops refused "$tmp/refused" || fail=1
for side in server client; do
	tx=$(sv_pp_stat icrc_left_tx "$tmp/refused.$side")
	echo "refused: $side icrc_left_tx $tx"
	[ "$tx" = 0 ] || { echo "FAIL: refused: the $side left $tx ICRCs to the UDP checksum"; fail=1; }
done
wire refused >"$tmp/refused.wire" || fail=1
while read -r dir marked left right bad; do
	echo "refused: wire from the $dir: $marked marked, $left left to the checksum, $right right, $bad bad"
	[ "$left" = 0 ] && [ "$bad" = 0 ] && [ "$right" -ge $iters ] ||
		{ echo "FAIL: refused: the $dir sent packets without a right ICRC"; fail=1; }
	[ "$dir" = client ] || [ "$marked" = 0 ] || { echo "FAIL: refused: the server marked $marked packets"; fail=1; }
done <"$tmp/refused.wire"

pair corrupt "" "SOFTVERBS_FAULT=corrupt=2%;seed=3"
flipped=$(sv_pp_stat fault_corrupt "$tmp/corrupt.client") tx=$(sv_pp_stat icrc_left_tx "$tmp/corrupt.client")
dropped=$(sv_pp_stat drop_icrc "$tmp/corrupt.server")
echo "corrupt: client fault_corrupt $flipped icrc_left_tx $tx, server drop_icrc $dropped"
[ "$flipped" -ge 1 ] && [ "$tx" -ge $iters ] || { echo "FAIL: corrupt: nothing corrupted, or no ICRC left to the checksum"; fail=1; }
[ "$dropped" = "$flipped" ] || { echo "FAIL: corrupt: the server refused $dropped of $flipped corrupted packets"; fail=1; }

[ $fail = 0 ] && echo "PASS: icrc_udp: agreed, refused, corrupt"
exit $fail
