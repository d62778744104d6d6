#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UC under loss: two network namespaces joined by a veth pair, nftables in
# B's dropping 10% of UDP packets (the RC loss test's set-up, tests/net),
# and a stream of 8-packet UC messages (uc_loss): every message that
# arrives is byte-exact and in order, some are lost (dropped whole), and
# later messages keep arriving.  Skips (77) when namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"

sv_netns_usable || exit 77
trap sv_netns_cleanup EXIT

a="svuc-$$-a" b="svuc-$$-b"
sv_netns_pair "$a" "$b" 10.234.0.1/24 10.234.0.2/24 || { echo "veth setup failed"; exit 1; }
sv_netns_udp_loss "$b" "${SV_LOSS_PCT:-10}" || { echo "nftables setup failed"; exit 1; }

HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.234.0.1 HX_ADDR_B=10.234.0.2 \
	HX_EXPECT_LOSS=1 timeout -k 5 180 "$bin/uc_loss" stream
rc=$?
echo "nftables drop counters in $b:"
sv_netns_loss_stats "$b"
[ $rc = 124 ] && echo "uc_loss: timed out"
exit $rc
