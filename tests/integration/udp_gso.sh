#!/bin/bash
# UDP segmentation offloads between two network namespaces (issue #20):
# an RC stream of mixed WRITE/SEND/READ (rc_loss, every byte verified)
# across a veth pair, then each side's counters (SOFTVERBS_STATS=1).
#   on:  runs left as UDP_SEGMENT sends (gso_sends, several packets each)
#        and arrived coalesced (gro_pkts), and no ICRC failed
#   off: SOFTVERBS_GSO=0: neither, and no ICRC failed
# Skips (77) only when namespaces cannot be created (not root / no ip netns).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"
mode=${1:?usage: udp_gso.sh on|off}

sv_netns_usable || exit 77
log=$(mktemp)
trap 'sv_netns_cleanup; rm -f "$log"' EXIT

a="svgso-$$-a" b="svgso-$$-b"
sv_netns_pair "$a" "$b" 10.232.0.1/24 10.232.0.2/24 || { echo "veth setup failed"; exit 1; }
[ "$mode" = off ] && export SOFTVERBS_GSO=0

SOFTVERBS_STATS=1 HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.232.0.1 \
	HX_ADDR_B=10.232.0.2 HX_LOSS_MB=${HX_LOSS_MB:-64} \
	timeout -k 5 120 "$bin/rc_loss" stream >"$log" 2>&1
rc=$?
cat "$log"
[ $rc = 124 ] && echo "rc_loss: timed out"
[ $rc = 0 ] || { echo "FAIL: rc_loss exited $rc"; exit 1; }

# A counter summed over both sides' contexts.
sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$log"; }
sends=$(sum gso_sends) pkts=$(sum gso_pkts) gro=$(sum gro_pkts)
sent=$(sum sent_pkts) icrc=$(sum drop_icrc)
echo "sent_pkts $sent gso_sends $sends gso_pkts $pkts gro_pkts $gro drop_icrc $icrc"
[ "$sent" -gt 0 ] || { echo "FAIL: no stats printed"; exit 1; }
[ "$icrc" = 0 ] || { echo "FAIL: $icrc packets failed their ICRC"; exit 1; }
if [ "$mode" = on ]; then
	[ "$sends" -gt 0 ] || { echo "FAIL: no UDP_SEGMENT send"; exit 1; }
	[ "$pkts" -ge $((2 * sends)) ] || { echo "FAIL: sends of one packet"; exit 1; }
	[ "$gro" -gt 0 ] || { echo "FAIL: nothing received coalesced"; exit 1; }
else
	[ "$sends" = 0 ] && [ "$pkts" = 0 ] && [ "$gro" = 0 ] ||
		{ echo "FAIL: offloads used with SOFTVERBS_GSO=0"; exit 1; }
fi
echo "udp_gso $mode: ok"
