#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UDP segmentation offloads between two network namespaces (issue #20):
# an RC stream of mixed WRITE/SEND/READ (rc_loss, every byte verified)
# across a veth pair, then each side's counters (SOFTVERBS_STATS=1).
#   on:  runs left as UDP_SEGMENT sends (gso_sends, several packets each)
#        and arrived coalesced (gro_pkts), and no ICRC failed
#   off: SOFTVERBS_GSO=0: neither, and no ICRC failed
#   wire: both veth ends without UDP segmentation offload, so the kernel
#        cuts each send into its packets before the veth, as before a NIC
#        without it: tshark on the veth sees packets of at most the MTU,
#        IPv4 IDs counting up within a send, and every ICRC right over the
#        real IP header (pcap_check.py's icrc_ok; SOFTVERBS_SKIP_ICRC=0, so
#        that none is left to the UDP checksum: icrc_udp.sh tests that)
#   wire_small: the same wire, carrying rc_batch's stream of 20,000 8-byte
#        RDMA WRITEs, which posts keep for sends of several packets
#        (rc_batch.c asserts it): tshark decodes every packet on the veth
#        as a standard RoCE v2 RC RDMA WRITE ONLY or ACKNOWLEDGE, each of
#        at most the MTU with its ICRC right
# Skips (77) when namespaces cannot be created (not root / no ip netns),
# and for wire without ethtool.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"
source "$net/capture.sh"
mode=${1:?usage: udp_gso.sh on|off|wire|wire_small}

sv_netns_usable || exit 77
if [ "${mode%_small}" = wire ]; then
	command -v ethtool >/dev/null || { echo "ethtool not installed: skipped"; exit 77; }
	command -v tshark >/dev/null || { echo "tshark not installed"; exit 1; }
fi
log=$(mktemp) cap=$(mktemp -d)
trap 'sv_cap_kill; sv_netns_cleanup; rm -rf "$log" "$cap"' EXIT

a="svgso-$$-a" b="svgso-$$-b"
sv_netns_pair "$a" "$b" 10.232.0.1/24 10.232.0.2/24 || { echo "veth setup failed"; exit 1; }
[ "$mode" = off ] && export SOFTVERBS_GSO=0
if [ "${mode%_small}" = wire ]; then
	for ns in "$a" "$b"; do
		ip netns exec "$ns" ethtool -K sv0 tx-udp-segmentation off ||
			{ echo "ethtool -K failed"; exit 1; }
	done
	sv_cap_start "$cap/cap.pcapng" sv0 udp 10.232.0.2 "$a" || exit 1
	HX_LOSS_MB=${HX_LOSS_MB:-4}
	export SOFTVERBS_SKIP_ICRC=0
fi

prog=rc_loss
[ "$mode" = wire_small ] && prog=rc_batch
SOFTVERBS_STATS=1 HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.232.0.1 \
	HX_ADDR_B=10.232.0.2 HX_LOSS_MB=${HX_LOSS_MB:-64} \
	timeout -k 5 120 "$bin/$prog" stream >"$log" 2>&1
rc=$? cap_rc=0
if [ "${mode%_small}" = wire ]; then
	sv_cap_stop || cap_rc=1
fi
cat "$log"
[ $cap_rc = 0 ] || exit 1
[ $rc = 124 ] && echo "$prog: timed out"
[ $rc = 0 ] || { echo "FAIL: $prog exited $rc"; exit 1; }

# A counter summed over both sides' contexts.
sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$log"; }
sends=$(sum gso_sends) pkts=$(sum gso_pkts) gro=$(sum gro_pkts)
sent=$(sum sent_pkts) icrc=$(sum drop_icrc)
echo "sent_pkts $sent gso_sends $sends gso_pkts $pkts gro_pkts $gro drop_icrc $icrc"
[ "$sent" -gt 0 ] || { echo "FAIL: no stats printed"; exit 1; }
[ "$icrc" = 0 ] || { echo "FAIL: $icrc packets failed their ICRC"; exit 1; }
if [ "${mode%_small}" = wire ]; then
	tshark -r "$cap/cap.pcapng" -F pcap -w "$cap/cap.pcap" 2>/dev/null ||
		{ echo "FAIL: tshark cannot convert the capture"; exit 1; }
	python3 - "$cap/cap.pcap" "$here" <<'PY' || exit 1
import struct, sys
sys.path.insert(0, sys.argv[2])
from pcap_check import icrc_ok, ipv4_udp
n, bad, big, counted = 0, 0, 0, 0
for ip in ipv4_udp(sys.argv[1]):
    iplen = len(ip)
    n += 1
    big += iplen > 1500
    bad += not icrc_ok(ip)
    counted += struct.unpack(">H", ip[4:6])[0] > 0
print("wire: %d RoCE packets, %d over 1500 bytes, %d bad ICRC, %d with "
      "an IPv4 ID above 0" % (n, big, bad, counted))
sys.exit(0 if n > 1000 and not big and not bad and counted else 1)
PY
fi
if [ "$mode" = wire_small ]; then
	# Every UDP port in the capture decoded as InfiniBand: RoCE v2 runs
	# on the QPs' own ports (QPN >> 8).
	ports=$(tshark -r "$cap/cap.pcap" -T fields -e udp.dstport 2>/dev/null | sort -u)
	dec=()
	for p in $ports; do dec+=(-d "udp.port==$p,infiniband"); done
	tshark -r "$cap/cap.pcap" "${dec[@]}" -T fields -e infiniband.bth.opcode \
		2>/dev/null | sort | uniq -c >"$cap/ops"
	cat "$cap/ops"
	total=$(tshark -r "$cap/cap.pcap" 2>/dev/null | wc -l)
	writes=$(awk '$2 == 10 { print $1 }' "$cap/ops")
	known=$(awk '$2 == 10 || $2 == 17 { s += $1 } END { print s + 0 }' "$cap/ops")
	echo "wire_small: $total packets, ${writes:-0} RDMA WRITE ONLY, $known WRITE ONLY or ACKNOWLEDGE"
	# (a capture on a loaded host may miss some: most are enough)
	[ "${writes:-0}" -ge 10000 ] && [ "$known" = "$total" ] ||
		{ echo "FAIL: packets tshark does not decode as RC RDMA WRITE ONLY or ACKNOWLEDGE"; exit 1; }
fi
if [ "$mode" != off ]; then
	[ "$sends" -gt 0 ] || { echo "FAIL: no UDP_SEGMENT send"; exit 1; }
	[ "$pkts" -ge $((2 * sends)) ] || { echo "FAIL: sends of one packet"; exit 1; }
	# (cut before the veth, the packets arrive one by one)
	[ "${mode%_small}" = wire ] || [ "$gro" -gt 0 ] ||
		{ echo "FAIL: nothing received coalesced"; exit 1; }
else
	[ "$sends" = 0 ] && [ "$pkts" = 0 ] && [ "$gro" = 0 ] ||
		{ echo "FAIL: offloads used with SOFTVERBS_GSO=0"; exit 1; }
fi
echo "udp_gso $mode: ok"
