#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified Debian ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong,
# server and client each run through build/bin/softverbs run, under a
# timeout, with -g <the GID index of the address used>:
#   xpingpong.sh rc|uc|ud|srq default|events host|netns|standard
#     host      both on this host, over loopback (GID of 127.0.0.1)
#     netns     server and client in two network namespaces joined by a
#               veth pair (tests/net/netns.sh), over the veth addresses
#     standard  netns with SOFTVERBS_ROCE=standard on both sides: every
#               connected QP must send to UDP 4791 (the QP's engine
#               state at its destroy, SOFTVERBS_LOG=3: "ports N->4791")
#               and none be dropped as malformed,
#               bad ICRC or from the wrong peer
# Checks both exit codes and the "N bytes in" / "N iters in" lines.  The
# byte count is size * iters * 2; ibv_ud_pingpong sends min(2048, port MTU)
# bytes per message (Debian's build clamps its default size to the port's
# active MTU), the other two 4096.
set -u
tool=${1:-uc} mode=${2:-default} where=${3:-host}
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
pp=$(command -v "ibv_${tool}_pingpong") || { echo "ibv_${tool}_pingpong not installed (ibverbs-utils)"; exit 1; }
run=("$build/bin/softverbs" run --)
[ -x "$build/bin/softverbs" ] || { echo "no $build/bin/softverbs"; exit 1; }

extra=()
case $mode in
default) ;;
events) extra=(-e) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

srv_ns=() cli_ns=() srv_ip=127.0.0.1 cli_ip=127.0.0.1 server=localhost
if [ "$where" = standard ]; then
	export SOFTVERBS_ROCE=standard SOFTVERBS_STATS=1 SOFTVERBS_LOG=3
fi
if [ "$where" = netns ] || [ "$where" = standard ]; then
	source "$net/netns.sh"
	sv_netns_usable || exit 77
	trap sv_netns_cleanup EXIT
	a="svxp-$$-a" b="svxp-$$-b"
	sv_netns_pair "$a" "$b" 10.232.0.1/24 10.232.0.2/24 || { echo "veth setup failed"; exit 1; }
	srv_ns=(ip netns exec "$a") cli_ns=(ip netns exec "$b")
	srv_ip=10.232.0.1 cli_ip=10.232.0.2 server=10.232.0.1
elif [ "$where" != host ]; then
	echo "unknown place $where"; exit 2
fi

# The GID index of an address, and the port's active MTU, as an
# unmodified ibv_devinfo sees them through softverbs.
gid_of() { # ip [ns-command...]
	local ip=$1
	shift
	"$@" "${run[@]}" ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$ip, RoCE v2/\1/p" | head -n1
}
sgid=$(gid_of "$srv_ip" "${srv_ns[@]}") cgid=$(gid_of "$cli_ip" "${cli_ns[@]}")
[ -n "$sgid" ] && [ -n "$cgid" ] || { echo "no GID for $srv_ip / $cli_ip"; exit 1; }
mtu=$("${srv_ns[@]}" "${run[@]}" ibv_devinfo | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n1)
size=4096 iters=1000
if [ "$tool" = ud ]; then
	size=2048
	[ -n "$mtu" ] && [ "$mtu" -lt "$size" ] && size=$mtu
fi
echo "server GID index $sgid ($srv_ip), client GID index $cgid ($cli_ip), port MTU $mtu, size $size"

source "$net/port.sh"
port=$(sv_free_port "${srv_ns[@]}") || exit 1

tmp=$(mktemp -d /tmp/sv-xpp.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
	[ "$where" != host ] && sv_netns_cleanup
}
trap cleanup EXIT

"${srv_ns[@]}" timeout -k 5 75 "${run[@]}" "$pp" -g "$sgid" -p "$port" "${extra[@]}" >"$tmp/server" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do
	"${srv_ns[@]}" ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
"${cli_ns[@]}" timeout -k 5 70 "${run[@]}" "$pp" -g "$cgid" -p "$port" "${extra[@]}" "$server" >"$tmp/client" 2>&1
crc=$?
wait "$srv_pid"
src=$?
srv_pid=

echo "--- server (exit $src) ---"; cat "$tmp/server"
echo "--- client (exit $crc) ---"; cat "$tmp/client"

fail=0
want=$((size * iters * 2))
for side in server client; do
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds' "$tmp/$side")
	if [ -z "$line" ]; then
		echo "FAIL: $side printed no 'bytes in' line"; fail=1; continue
	fi
	got=${line%% *}
	[ "$got" = "$want" ] || { echo "FAIL: $side moved $got bytes, expected $want"; fail=1; }
	grep -qE "^$iters iters in [0-9.]+ seconds" "$tmp/$side" ||
		{ echo "FAIL: $side has no '$iters iters in' line"; fail=1; }
done
if [ "$where" = standard ]; then
	for side in server client; do
		# Connected QPs name their ports; UD's are per packet.
		if [ "$tool" != ud ] && ! grep -qE "ports [0-9]+->4791 " "$tmp/$side"; then
			echo "FAIL: $side's QPs did not send to UDP 4791"; fail=1
		fi
		# Not drop_no_qp: ibv_srq_pingpong's server may send one
		# message more than the client waits for, which arrives
		# after the client destroyed its QPs.
		if grep -E "^ +(drop_(icrc|wrong_peer|malformed|pkey|transport)|send_err) +[1-9]" "$tmp/$side"; then
			echo "FAIL: $side dropped packets"; fail=1
		fi
	done
fi
[ $src = 0 ] || { echo "FAIL: server exit status $src"; fail=1; }
[ $crc = 0 ] || { echo "FAIL: client exit status $crc"; fail=1; }
[ $fail = 0 ] && echo "PASS: ibv_${tool}_pingpong $mode $where"
exit $fail
