#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The traffic class on the wire (issue #39): two network namespaces joined
# by a veth pair, a capture on the veth read by tshark, and
#   ud_ops tclass / tclass6  UD through AHs with grh.traffic_class 0xb8 and
#                            0, answered with 0x48: each GRH area holds the
#                            class its datagram carried (the program checks
#                            that), and the capture shows the same DSCP/ECN
#                            byte in the IPv4 TOS / IPv6 traffic class;
#   rc_ops tclass            RC QPs with ah_attr.grh.traffic_class 0xb8:
#                            every packet both ways (requests, ACKs, READ
#                            responses) carries it;
# then ud_ops tclass again in one namespace with SOFTVERBS_ROCE=standard,
# where the process that holds UDP 4791 forwards the other's datagrams
# through its shared-memory ring (the ring's packet keeps the class).
# Skips (77) when namespaces cannot be created or tshark is missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"
source "$net/capture.sh"

command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
sv_netns_usable || exit 77
tmp=$(mktemp -d /tmp/sv-tclass.XXXXXX)
cleanup() {
	sv_cap_kill
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT

a="svtc-$$-a" b="svtc-$$-b"
sv_netns_pair "$a" "$b" 10.234.0.1/24 10.234.0.2/24 || { echo "veth setup failed"; exit 1; }
ip -n "$a" addr add fd00:234::1/64 dev sv0 nodad || exit 1
ip -n "$b" addr add fd00:234::2/64 dev sv0 nodad || exit 1
env=(HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.234.0.1 HX_ADDR_B=10.234.0.2
	HX_ADDR6_A=fd00:234::1 HX_ADDR6_B=fd00:234::2)

fail=0
# run NAME PROG CASE: the case between the namespaces, captured on B's veth.
run() {
	local name=$1 prog=$2 case=$3 rc
	sv_cap_start "$tmp/$name.pcapng" sv0 udp 10.234.0.1 "$b" || { fail=1; return; }
	env "${env[@]}" timeout -k 5 60 "$bin/$prog" "$case"
	rc=$?
	echo "$prog $case (netns): exit $rc"
	[ $rc = 0 ] || fail=1
	sv_cap_stop || fail=1
}

# count FILE FILTER: packets of the capture that match the display filter.
count() {
	tshark -r "$tmp/$1.pcapng" -Y "$2" 2>/dev/null | wc -l
}

# expect NAME WHAT FILTER N: exactly N packets match (N "+": at least one).
expect() {
	local n
	n=$(count "$1" "$3")
	if [ "$4" = + ]; then
		[ "$n" -ge 1 ] || { echo "FAIL: $1: no $2"; fail=1; }
	else
		[ "$n" = "$4" ] || { echo "FAIL: $1: $n $2, expected $4"; fail=1; }
	fi
	echo "$1: $n $2"
}

run ud4 ud_ops tclass
# A -> B twice (0xb8, then 0), B -> A once (0x48); nothing else on 4791's
# side of the QPs' ports but these three datagrams and the control TCP.
expect ud4 "datagrams from A with TOS 0xb8" "udp && ip.src==10.234.0.1 && ip.dsfield==0xb8" 1
expect ud4 "datagrams from A with TOS 0" "udp && ip.src==10.234.0.1 && ip.dsfield==0" 1
expect ud4 "datagrams from B with TOS 0x48" "udp && ip.src==10.234.0.2 && ip.dsfield==0x48" 1

run ud6 ud_ops tclass6
expect ud6 "datagrams from A with class 0xb8" "udp && ipv6.src==fd00:234::1 && ipv6.tclass==0xb8" 1
expect ud6 "datagrams from A with class 0" "udp && ipv6.src==fd00:234::1 && ipv6.tclass==0" 1
expect ud6 "datagrams from B with class 0x48" "udp && ipv6.src==fd00:234::2 && ipv6.tclass==0x48" 1

run rc rc_ops tclass
expect rc "RoCE packets from A with TOS 0xb8" "udp && ip.src==10.234.0.1 && ip.dsfield==0xb8" +
expect rc "RoCE packets from B with TOS 0xb8" "udp && ip.src==10.234.0.2 && ip.dsfield==0xb8" +
expect rc "RoCE packets with another TOS" "udp && !(ip.dsfield==0xb8)" 0

# Standard mode in one namespace: one of the two holds UDP 4791 and hands
# the other's datagrams to it through its ring.
ip netns exec "$a" env SOFTVERBS_ROCE=standard SOFTVERBS_STATS=1 \
	timeout -k 5 60 "$bin/ud_ops" tclass >"$tmp/std.log" 2>&1
rc=$?
cat "$tmp/std.log" | grep -v "^  " | head -20
echo "ud_ops tclass (standard, one namespace): exit $rc"
[ $rc = 0 ] || fail=1
fwd=$(awk '$1 == "roce_forwarded" { n += $2 } END { print n + 0 }' "$tmp/std.log")
echo "datagrams forwarded through a ring: $fwd"
[ "$fwd" -ge 1 ] || { echo "FAIL: no datagram went through the holder's forwarding"; fail=1; }

[ $fail = 0 ] && echo "PASS: the traffic class on the wire and in the GRH"
exit $fail
