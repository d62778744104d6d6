#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# softverbs0's identity per network namespace, as `softverbs devices` and an
# unmodified ibv_devinfo show it (root, namespaces; 77 otherwise):
#   - the GID table puts the host's addresses first, loopback's last: in a
#     namespace with a veth, GID 0 is the veth's IPv4 address, then its
#     IPv6 ones, then ::ffff:127.0.0.1 and ::1; with SOFTVERBS_STRICT=1
#     the fe80:: GID comes first (as on mlx5 and rxe), loopback's still
#     last; in a namespace with only lo, GID 0 is ::ffff:127.0.0.1 and an
#     ibv_rc_pingpong -g 0 there completes;
#   - the node GUID differs between the caller's namespace and each of
#     two others, and is the same for two processes of one namespace.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
sv=$build/bin/softverbs
[ -x "$sv" ] || { echo "no $sv"; exit 1; }
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
source "$net/netns.sh"
source "$net/port.sh"
sv_netns_usable || exit 77

a="svgida-$$" b="svgidb-$$" lo="svgidlo-$$"
tmp=$(mktemp -d /tmp/sv-gidorder.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
sv_netns_pair "$a" "$b" 10.234.0.1/24 10.234.0.2/24 &&
	ip -n "$a" addr add fd10::1/64 dev sv0 nodad &&
	ip netns add "$lo" && SV_NETNS_CREATED+=("$lo") && ip -n "$lo" link set lo up ||
	{ echo "namespace setup failed"; exit 1; }

fail=0
bad() { echo "FAIL: $*"; fail=1; }
# gids NS [ENV...]: the GID column of softverbs devices in NS, one a line.
gids() {
	local ns=$1
	shift
	ip netns exec "$ns" env -u SOFTVERBS_STRICT "$@" "$sv" devices |
		sed -n 's/^ *GID\[ *[0-9]*\] *\([^ ]*\) .*/\1/p'
}
guid() { # NS-COMMAND...: node GUID as ibv_devinfo sees it
	"$@" "$sv" run -- ibv_devinfo | sed -n 's/^[[:space:]]*node_guid:[[:space:]]*//p'
}

got=$(gids "$a" | paste -sd' ')
want="::ffff:10.234.0.1 fd10::1 $(ip -n "$a" -6 -o addr show dev sv0 scope link | awk '{ sub("/.*", "", $4); print $4 }') ::ffff:127.0.0.1 ::1"
echo "$a: $got"
[ "$got" = "$want" ] || bad "$a's GIDs '$got', expected '$want'"
got=$(gids "$a" SOFTVERBS_STRICT=1 | paste -sd' ')
echo "$a (strict): $got"
case $got in
fe80::*" ::ffff:10.234.0.1 fd10::1 ::ffff:127.0.0.1 ::1") ;;
*) bad "$a's strict GIDs '$got': expected fe80:: first, loopback last" ;;
esac
got=$(gids "$lo" | paste -sd' ')
echo "$lo: $got"
[ "$got" = "::ffff:127.0.0.1 ::1" ] || bad "$lo's GIDs '$got', expected '::ffff:127.0.0.1 ::1'"

# GID 0 on a host with only lo: both sides of one host on it.
port=$(sv_free_port ip netns exec "$lo") || exit 1
ip netns exec "$lo" timeout -k 5 40 "$sv" run -- "$pp" -g 0 -p "$port" >"$tmp/server" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do
	ip netns exec "$lo" ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
ip netns exec "$lo" timeout -k 5 35 "$sv" run -- "$pp" -g 0 -p "$port" 127.0.0.1 >"$tmp/client" 2>&1
crc=$?
wait "$srv_pid"
src=$?
srv_pid=
for side in server client; do
	grep -qE '^8192000 bytes in' "$tmp/$side" || { bad "$side -g 0 in $lo:"; cat "$tmp/$side"; }
done
[ $src = 0 ] && [ $crc = 0 ] || bad "-g 0 in $lo: exit $src/$crc"

g0=$(guid) ga=$(guid ip netns exec "$a") ga2=$(guid ip netns exec "$a") gb=$(guid ip netns exec "$b")
echo "node GUIDs: here $g0, $a $ga ($ga2), $b $gb"
for g in "$g0" "$ga" "$gb"; do
	[[ $g =~ ^[0-9a-f]{4}(:[0-9a-f]{4}){3}$ ]] || bad "node GUID '$g'"
done
[ "$ga" = "$ga2" ] || bad "two processes of $a: node GUIDs $ga and $ga2"
[ "$g0" != "$ga" ] && [ "$g0" != "$gb" ] && [ "$ga" != "$gb" ] ||
	bad "node GUIDs not distinct per namespace: $g0 $ga $gb"
[ $fail = 0 ] && echo "PASS: gid_order"
exit $fail
