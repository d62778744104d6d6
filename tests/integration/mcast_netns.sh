#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UD multicast across hosts: two network namespaces joined by a veth pair
# (IPv4 and IPv6 addresses on it), the sender A and a receiver C in one,
# a receiver B in the other; runs every case of mcast_ops there (the ipv6
# case needs the veth: the kernel does not loop IPv6 multicast over lo).
# Skips (77) when namespaces cannot be created.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"

sv_netns_usable || exit 77
trap sv_netns_cleanup EXIT

a="svmc-$$-a" b="svmc-$$-b"
sv_netns_pair "$a" "$b" 10.233.0.1/24 10.233.0.2/24 || { echo "veth setup failed"; exit 1; }
ip -n "$a" addr add fd00:233::1/64 dev sv0 nodad || exit 1
ip -n "$b" addr add fd00:233::2/64 dev sv0 nodad || exit 1

fail=0
for c in $("$bin/mcast_ops" --list); do
	HX_NETNS_A=$a HX_NETNS_B=$b HX_ADDR_A=10.233.0.1 HX_ADDR_B=10.233.0.2 \
		HX_ADDR6_A=fd00:233::1 HX_ADDR6_B=fd00:233::2 \
		timeout -k 5 60 "$bin/mcast_ops" "$c"
	rc=$?
	echo "mcast_ops $c (netns): exit $rc"
	[ $rc = 0 ] || fail=1
done
exit $fail
