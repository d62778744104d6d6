# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A TCP port for a test's server (source this file).
#
#   sv_free_port [NS-COMMAND...]   print a port no TCP socket uses, in any
#                                  state, in this namespace or the one
#                                  NS-COMMAND (e.g. "ip netns exec A") runs in
#
# The port is taken below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range).  Inside that range a port that nobody
# listens on can still be held by a client connection of an earlier test,
# or by its TIME_WAIT remnant; the pingpong servers' bind() then fails
# with EADDRINUSE even with SO_REUSEADDR ("Couldn't listen to port N"),
# because the client socket did not set it.  Below the range only explicit
# binds take ports, and ss(8) sees every one of them.

sv_free_port() {
	local low hi port _
	read -r low _ <"/proc/sys/net/ipv4/ip_local_port_range" 2>/dev/null || low=32768
	hi=$((low - 1))
	[ "$hi" -gt 20000 ] || hi=60999     # an unusual range: fall back to any
	for _ in $(seq 100); do
		port=$((10000 + RANDOM % (hi - 10000 + 1)))
		"$@" ss -Htan "sport = :$port" | grep -q . || { echo "$port"; return 0; }
	done
	echo "no free TCP port found" >&2
	return 1
}
