#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Loss test: two network namespaces joined by a veth pair, nftables in one
# of them dropping 10% of UDP packets (both directions) at random, and an RC
# stream of >= 256 MiB of mixed WRITE/SEND/READ between them (rc_loss),
# verified byte-exact, under a timeout.  Skips (77) only when namespaces
# cannot be created (not root / no ip netns).
#
#   rc_loss.sh [PERCENT [RATE [MIB]]]
# PERCENT lost (default $SV_LOSS_PCT or 10); RATE, a bottleneck both ways
# (tc tbf, e.g. 200mbit: the congestion window must back off to the
# queue it overflows; default none); MIB moved (default $HX_LOSS_MB
# or 256).
set -u
pct=${1:-${SV_LOSS_PCT:-10}}
rate=${2:-}
mb=${3:-${HX_LOSS_MB:-256}}
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"

sv_netns_usable || exit 77
trap sv_netns_cleanup EXIT

a="svrc-$$-a" b="svrc-$$-b"
sv_netns_pair "$a" "$b" 10.231.0.1/24 10.231.0.2/24 || { echo "veth setup failed"; exit 1; }
sv_netns_udp_loss "$b" "$pct" || { echo "nftables setup failed"; exit 1; }
if [ -n "$rate" ]; then
	sv_netns_rate "$a" "$rate" && sv_netns_rate "$b" "$rate" ||
		{ echo "tc setup failed"; exit 1; }
fi

# The counters (SOFTVERBS_STATS=1, on stderr at exit) go to a file too:
# no READ the requester resends may reach past the request it repeats,
# which rxe would never answer (engine/transport/req.c, rd_end).
out=$(mktemp)
HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.231.0.1 HX_ADDR_B=10.231.0.2 \
	HX_LOSS_MB=$mb SOFTVERBS_STATS=1 timeout -k 5 180 "$bin/rc_loss" stream \
	2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
echo "nftables drop counters in $b:"
sv_netns_loss_stats "$b"
[ $rc = 124 ] && echo "rc_loss: timed out"
beyond=$(awk '$1 == "dup_read_beyond" { n += $2 } END { print n + 0 }' "$out")
rm -f "$out"
if [ "$beyond" != 0 ]; then
	echo "rc_loss: $beyond resent READs reached past the request they repeat"
	[ $rc = 0 ] && rc=1
fi
exit $rc
