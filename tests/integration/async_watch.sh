#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Port and GID events through unmodified Debian ibv_asyncwatch: in a fresh
# network namespace with only lo up, asyncwatch (through softverbs run)
# must print, in this order,
#   an address added to lo          -> IBV_EVENT_GID_CHANGE
#   lo down (no address left)       -> IBV_EVENT_PORT_ERR, IBV_EVENT_GID_CHANGE
#   lo up again                     -> IBV_EVENT_PORT_ACTIVE, IBV_EVENT_GID_CHANGE
# each on port 1, and ibv_devinfo must show the port DOWN while lo is down.
# Skips (77) when namespaces cannot be created.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
source "$net/netns.sh"
aw=$(command -v ibv_asyncwatch) || { echo "ibv_asyncwatch not installed (ibverbs-utils)"; exit 1; }
run=("$build/bin/softverbs" run --)

sv_netns_usable || exit 77
ns="svaw-$$"
ip netns add "$ns" || exit 1
SV_NETNS_CREATED+=("$ns")
out=$(mktemp /tmp/sv-aw.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -f "$out"
	sv_netns_cleanup
}
trap cleanup EXIT
ip -n "$ns" link set lo up || exit 1

ip netns exec "$ns" timeout -k 2 30 "${run[@]}" "$aw" >"$out" 2>&1 &
pid=$!
# Wait until it is listening (it prints its fd first).
for _ in $(seq 100); do grep -q "async event FD" "$out" && break; sleep 0.05; done

# Each step waits for its events before the next one, so the order is
# deterministic.
wait_lines() { # count
	for _ in $(seq 100); do
		[ "$(grep -c event_type "$out")" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
fail=0
ip -n "$ns" addr add 10.235.0.1/32 dev lo
wait_lines 1 || { echo "FAIL: no event after adding an address"; fail=1; }
ip -n "$ns" link set lo down
wait_lines 3 || { echo "FAIL: missing events after lo down"; fail=1; }
state=$(ip netns exec "$ns" "${run[@]}" ibv_devinfo | sed -n 's/.*state:[[:space:]]*\(PORT_[A-Z]*\).*/\1/p' | head -n1)
echo "port state with lo down: $state"
[ "$state" = PORT_DOWN ] || { echo "FAIL: port state $state with no address, expected PORT_DOWN"; fail=1; }
ip -n "$ns" link set lo up
wait_lines 5 || { echo "FAIL: missing events after lo up"; fail=1; }
state=$(ip netns exec "$ns" "${run[@]}" ibv_devinfo | sed -n 's/.*state:[[:space:]]*\(PORT_[A-Z]*\).*/\1/p' | head -n1)
[ "$state" = PORT_ACTIVE ] || { echo "FAIL: port state $state with lo up, expected PORT_ACTIVE"; fail=1; }
sleep 0.3
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=

echo "--- ibv_asyncwatch ---"
cat "$out"
# One change may come as two GID_CHANGEs (addresses settling): compare
# the sequence with repeats collapsed.
got=$(grep event_type "$out" | sed 's/^[[:space:]]*event_type \([A-Z_]*\) ([0-9]*), port \([0-9]*\)$/\1 \2/' | uniq)
want="IBV_EVENT_GID_CHANGE 1
IBV_EVENT_PORT_ERR 1
IBV_EVENT_GID_CHANGE 1
IBV_EVENT_PORT_ACTIVE 1
IBV_EVENT_GID_CHANGE 1"
if [ "$got" != "$want" ]; then
	echo "FAIL: events differ; expected:"
	echo "$want"
	fail=1
fi
[ $fail = 0 ] && echo "PASS: ibv_asyncwatch printed the port and GID events"
exit $fail
