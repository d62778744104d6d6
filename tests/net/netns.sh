# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Network-namespace helpers for the transport tests (source this file).
#
#   sv_netns_usable                 0 if we may create namespaces (root, ip netns)
#   sv_netns_pair A B ADDR_A ADDR_B create namespaces A and B joined by a veth
#                                   pair (ADDR_x in CIDR form, e.g. 10.231.0.1/24)
#   sv_netns_udp_loss NS PERCENT    nftables in NS drops PERCENT% of UDP packets
#                                   at random, in both directions
#   sv_netns_cleanup                delete every namespace created here
#
# Everything lives inside namespaces created by these functions: the veth
# ends are created directly in them, so the caller's namespace is never
# touched.  Register cleanup with: trap sv_netns_cleanup EXIT

SV_NETNS_CREATED=()

sv_netns_usable() {
	[ "$(id -u)" = 0 ] || { echo "netns: not root" >&2; return 1; }
	command -v ip >/dev/null || { echo "netns: no ip(8)" >&2; return 1; }
	local probe="svprobe-$$-$RANDOM"
	ip netns add "$probe" 2>/dev/null || { echo "netns: ip netns add not supported" >&2; return 1; }
	ip netns del "$probe"
}

sv_netns_pair() {
	local a=$1 b=$2 addr_a=$3 addr_b=$4
	ip netns add "$a" || return 1
	SV_NETNS_CREATED+=("$a")
	ip netns add "$b" || return 1
	SV_NETNS_CREATED+=("$b")
	# veth names only need to be unique inside each namespace.
	ip link add sv0 netns "$a" type veth peer name sv0 netns "$b" || return 1
	ip -n "$a" addr add "$addr_a" dev sv0 || return 1
	ip -n "$b" addr add "$addr_b" dev sv0 || return 1
	local ns
	for ns in "$a" "$b"; do
		# No duplicate address detection: the link-local address is
		# there as soon as the link is, not a second later.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.sv0.accept_dad=0 2>/dev/null
		ip -n "$ns" link set lo up || return 1
		ip -n "$ns" link set sv0 up || return 1
	done
	# Wait for the IPv6 link-local addresses: the GID table a test reads
	# its indices from must be the one its programs use (with
	# SOFTVERBS_STRICT=1 fe80:: is GID index 0, and its arrival moves
	# every other GID up by one).
	for ns in "$a" "$b"; do
		[ "$(ip netns exec "$ns" cat /proc/sys/net/ipv6/conf/sv0/disable_ipv6 2>/dev/null)" = 0 ] || continue
		for _ in $(seq 100); do
			ip -n "$ns" -6 addr show dev sv0 scope link | grep -q inet6 &&
				! ip -n "$ns" -6 addr show dev sv0 tentative | grep -q inet6 && break
			sleep 0.02
		done
	done
}

sv_netns_udp_loss() {
	local ns=$1 pct=$2
	command -v nft >/dev/null || { echo "netns: nft not installed" >&2; return 1; }
	ip netns exec "$ns" nft -f - <<NFT || return 1
table inet svloss {
	chain in {
		type filter hook input priority 0; policy accept;
		meta l4proto udp numgen random mod 100 < $pct counter drop
	}
	chain out {
		type filter hook output priority 0; policy accept;
		meta l4proto udp numgen random mod 100 < $pct counter drop
	}
}
NFT
}

# A bottleneck: what ns sends on its veth leaves at most at rate (a token
# bucket, tc tbf, e.g. 200mbit; what would wait more than 20 ms is dropped.
# tbf rather than netem's rate: netem is not in every kernel).
sv_netns_rate() {
	local ns=$1 rate=$2
	command -v tc >/dev/null || { echo "netns: tc not installed" >&2; return 1; }
	ip netns exec "$ns" tc qdisc add dev sv0 root tbf rate "$rate" \
		burst 16kb latency 20ms
}

# Print the drop counters of sv_netns_udp_loss (for the log).
sv_netns_loss_stats() {
	ip netns exec "$1" nft list table inet svloss 2>/dev/null | grep -E 'counter'
}

sv_netns_cleanup() {
	local ns
	for ns in "${SV_NETNS_CREATED[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	SV_NETNS_CREATED=()
}
