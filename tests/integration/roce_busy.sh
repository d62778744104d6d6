#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# SOFTVERBS_ROCE=standard: one endpoint per network namespace holds UDP
# 4791, and forwards to the others through their shm rings.  Without the
# rings (SOFTVERBS_FASTPATH=0) nothing could reach a second process: in a
# namespace of its own (root), an ibv_rc_pingpong server in standard mode
# takes the port; a second standard-mode process there must fail to
# create its QP, with one error line naming the holder's pid and command,
# and leave the holder's port alone.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
run=("$build/bin/softverbs" run --)
[ -x "$build/bin/softverbs" ] || { echo "no $build/bin/softverbs"; exit 1; }
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
source "$net/netns.sh"
source "$net/gid.sh"
sv_netns_usable || exit 77

ns="svbusy-$$"
tmp=$(mktemp -d /tmp/sv-busy.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
ip netns add "$ns" && SV_NETNS_CREATED+=("$ns") && ip -n "$ns" link set lo up ||
	{ echo "namespace setup failed"; exit 1; }
in_ns=(ip netns exec "$ns")
gid=$(sv_gid_of 127.0.0.1 "${in_ns[@]}" "${run[@]}")
[ -n "$gid" ] || { echo "FAIL: no GID for 127.0.0.1 in $ns"; exit 1; }
export SOFTVERBS_ROCE=standard SOFTVERBS_FASTPATH=0

"${in_ns[@]}" timeout -k 5 50 "${run[@]}" "$pp" -g "$gid" -p 18515 >"$tmp/server" 2>&1 &
srv_pid=$!
holder=
for _ in $(seq 200); do
	holder=$("${in_ns[@]}" ss -Hlunp "sport = :4791" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n1)
	[ -n "$holder" ] && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
[ -n "$holder" ] || { echo "FAIL: the standard-mode server holds no UDP 4791"; cat "$tmp/server"; exit 1; }

"${in_ns[@]}" timeout -k 5 20 "${run[@]}" "$pp" -g "$gid" -p 18515 localhost >"$tmp/client" 2>&1
crc=$?
echo "--- second process (exit $crc) ---"; cat "$tmp/client"
fail=0
[ $crc != 0 ] || { echo "FAIL: the second standard endpoint was not refused"; fail=1; }
grep -q "Couldn't create QP" "$tmp/client" || { echo "FAIL: its QP was not the refusal"; fail=1; }
want="softverbs error: SOFTVERBS_ROCE=standard: cannot bind UDP 4791: Address already in use; held by pid $holder (ibv_rc_pingpong)"
grep -qxF "$want" "$tmp/client" || { echo "FAIL: no line: $want"; fail=1; }
"${in_ns[@]}" ss -Hlunp "sport = :4791" | grep -q "pid=$holder," ||
	{ echo "FAIL: the holder lost the port"; fail=1; }
[ $fail = 0 ] && echo "PASS: a second standard endpoint is refused, naming pid $holder"
exit $fail
