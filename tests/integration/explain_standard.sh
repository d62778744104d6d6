#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The explanations of refusals in standard mode (SOFTVERBS_ROCE=standard,
# UDP 4791, the packets demultiplexed by QPN), where two processes need two
# network namespaces: rc_explain's cases that assert whole lines (a SEND
# longer than the receive, invalid READ and atomic requests, a request to a
# QP in the error state, an rkey that cannot be invalidated), each side in its own namespace, must print the
# very lines they print on shm and over UDP.  Skips (77) only when
# namespaces cannot be created (not root / no ip netns).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"

sv_netns_usable || exit 77
trap sv_netns_cleanup EXIT

a="svex-$$-a" b="svex-$$-b"
sv_netns_pair "$a" "$b" 10.241.0.1/24 10.241.0.2/24 || { echo "veth setup failed"; exit 1; }
rc=0
for c in recvlen rdatomic qperr invrkey; do
	HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.241.0.1 HX_ADDR_B=10.241.0.2 \
		SOFTVERBS_ROCE=standard SOFTVERBS_FASTPATH=0 \
		timeout -k 5 60 "$bin/rc_explain" "$c" || { echo "rc_explain $c failed"; rc=1; }
done
exit $rc
