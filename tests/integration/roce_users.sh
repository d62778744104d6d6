#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Standard mode's UDP 4791 between two users (issue #37), as root playing
# two ordinary accounts made with useradd (tests/users.sh): the owner A
# (test user 1) runs an ibv_rc_pingpong server in namespace 1 and its
# client in namespace 2, with SOFTVERBS_ROCE=standard; the thief B (test
# user 2) works in namespace 1.
#   roce_users.sh bind WHO   while A's server holds 4791, B tries every bind
#                            of 4791 (roce_thief.py): each must fail with
#                            EADDRINUSE, as against rxe's kernel socket
#   roce_users.sh name WHO   B holds the abstract name the election used
#                            (@softverbs-roce-4791) before A starts: A's
#                            server must hold 4791 all the same
# In both, a standard-mode process of B in namespace 1 must say in one
# error line that another user's process (uid of A) holds the port, and
# A's traffic must complete with its buffers validated (-c) and every
# byte counted, while B tries.  WHO is who runs through `softverbs run`
# (a user namespace of its own): none, owner or thief.
#   roce_users.sh kernel WHO a kernel socket holds 4791 in namespace 1 (a
#                            VXLAN device's, standing in for rxe's): A's
#                            standard-mode process says in one error line
#                            that the kernel has it and receives nothing,
#                            and does not blame a user (or a process of
#                            its own, as it did when A was root)
#   roce_users.sh mad WHO    A's rping server listens in standard mode
#                            (its CM's route is an abstract Unix name); B
#                            sends it MAD datagrams: A must drop each (one
#                            debug line each) and then serve its own
#                            client's 10 pings (A has CAP_NET_RAW, which
#                            a CM on QP1 needs, as an ambient capability;
#                            `softverbs run` drops it, so WHO is not owner
#                            here).  WHO also takes unmapped: A
#                            in a user namespace that maps no uid
#                            (`unshare --user`), where every other user's
#                            uid shows as A's own.
set -u
attack=${1:-bind} who=${2:-none}
here=$(cd "$(dirname "$0")" && pwd)
build=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
net=${SV_NET:-$here/../net}
sv=$build/bin/softverbs
[ -x "$sv" ] || { echo "no $sv"; exit 1; }
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
py=$(PATH=/usr/bin:/bin command -v python3) || { echo "no python3"; exit 1; }
source "$net/netns.sh"
source "$here/../users.sh"
sv_netns_usable || exit 77
sv_users_ready "$build" "$here" || { echo "SKIP: $SV_USERS_WHY"; exit 77; }
uid_a=$(id -u "$SV_USER1")

# Without `run`, our libibverbs through the loader's path.
lib=(LD_LIBRARY_PATH="$build/lib")
a_run=("${lib[@]}") b_run=("${lib[@]}")
case $who in
none) ;;
owner) a_run=("$sv" run --) ;;
unmapped) a_run=(unshare --user --keep-caps env "${lib[@]}") ;;
thief) b_run=("$sv" run --) ;;
*) echo "unknown WHO $who"; exit 2 ;;
esac
sv_as 1; as_a=("${SV_AS[@]}" SOFTVERBS_ROCE=standard "${a_run[@]}")
# The IB CM on QP1 needs CAP_NET_RAW (its Q_Key is privileged, as the
# kernel's CM is): A gets it as an ambient capability, as a site grants it.
as_a_cm=("${SV_AS[0]}" --inh-caps=+net_raw --ambient-caps=+net_raw "${SV_AS[@]:1}" SOFTVERBS_ROCE=standard "${a_run[@]}")
sv_as 2; as_b=("${SV_AS[@]}" SOFTVERBS_ROCE=standard "${b_run[@]}")

tmp=$(mktemp -d /tmp/sv-roceusers.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
	sv_netns_cleanup
}
trap cleanup EXIT
n1="svru-$$-1" n2="svru-$$-2"
sv_netns_pair "$n1" "$n2" 10.233.0.1/24 10.233.0.2/24 || { echo "veth setup failed"; exit 1; }
in1=(ip netns exec "$n1") in2=(ip netns exec "$n2")

gid_of() { # ip ns-command...
	local ip=$1
	shift
	"$@" "$sv" run -- ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$ip, RoCE v2/\1/p" | head -n1
}
g1=$(gid_of 10.233.0.1 "${in1[@]}") g2=$(gid_of 10.233.0.2 "${in2[@]}")
[ -n "$g1" ] && [ -n "$g2" ] || { echo "FAIL: no GID for 10.233.0.1 / 10.233.0.2"; exit 1; }

fail=0
if [ "$attack" = kernel ]; then
	"${in1[@]}" ip link add vx0 type vxlan id 1 dstport 4791 local 10.233.0.1 2>"$tmp/vx" &&
		"${in1[@]}" ip link set vx0 up ||
		{ echo "SKIP: no VXLAN device here: $(cat "$tmp/vx")"; exit 77; }
	for as in as_a root; do
		if [ $as = root ]; then
			cmd=(env SOFTVERBS_ROCE=standard "${lib[@]}")
		else
			cmd=("${as_a[@]}")
		fi
		"${in1[@]}" timeout -k 2 5 "${cmd[@]}" "$pp" -g "$g1" >"$tmp/k" 2>&1
		want="softverbs error: SOFTVERBS_ROCE=standard: UDP 4791 is held by "
		if [ $as = root ]; then
			want+="the kernel (rxe, or a tunnel such as VXLAN, in this namespace?): uid 0, "
		elif [ "$who" = owner ]; then
			# From A's user namespace root's uid is not mapped.
			want+="another user's process, root's or the kernel (rxe, or a tunnel such as VXLAN, in this namespace?): a uid this user namespace does not map, "
		else
			want+="root's process or the kernel (rxe, or a tunnel such as VXLAN, in this namespace?): uid 0, "
		fi
		grep -qF "$want" "$tmp/k" ||
			{ echo "FAIL: $as was not told the kernel holds 4791 ($want...):"; cat "$tmp/k"; fail=1; }
		grep -F SOFTVERBS_ROCE "$tmp/k" | head -n1
	done
	[ $fail = 0 ] && echo "PASS: kernel ($who): the kernel's socket on 4791 named as such"
	exit $fail
fi
if [ "$attack" = mad ]; then
	need_rping=$(command -v rping) || { echo "rping not installed (rdmacm-utils)"; exit 1; }
	port=7174
	"${in1[@]}" timeout -k 5 100 "${as_a_cm[@]}" env SOFTVERBS_LOG=3 rping -s -a 10.233.0.1 -p $port -v -C 10 -V >"$tmp/server" 2>"$tmp/server.err" &
	srv=$!
	pids+=($srv)
	for _ in $(seq 200); do
		"${in1[@]}" ss -Hlun "sport = :4791" | grep -q . && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	# The CM's route carries A's uid as A's namespace shows it.
	seen=$uid_a
	[ "$who" = unmapped ] && seen=$(cat /proc/sys/kernel/overflowuid)
	name=$(printf "softverbs-cm.%u.service.%016x" "$seen" $(((0x0106 << 16) | port)))
	for _ in $(seq 200); do
		grep -qaF "@$name" <("${in1[@]}" cat /proc/net/unix) && break
		sleep 0.05
	done
	"${in1[@]}" timeout -k 2 10 "${as_b[@]}" "$py" "$here/roce_thief.py" mad "$name" 3 ||
		{ echo "FAIL: B could not send to A's CM route @$name"; cat "$tmp/server.err"; exit 1; }
	for _ in $(seq 100); do
		[ "$(grep -c "dropped: not one MAD from a process of our user" "$tmp/server.err")" -ge 3 ] && break
		sleep 0.05
	done
	n=$(grep -c "GSI: a forwarded datagram of 296 bytes from pid [0-9]* dropped: not one MAD from a process of our user" "$tmp/server.err")
	[ "$n" = 3 ] || { echo "FAIL: A's CM dropped $n of B's 3 datagrams"; grep "cm\[" "$tmp/server.err" | head; fail=1; }
	echo "A's CM dropped $n of B's 3 datagrams"
	"${in2[@]}" timeout -k 5 100 "${as_a_cm[@]}" rping -c -a 10.233.0.1 -p $port -v -C 10 -V >"$tmp/client" 2>"$tmp/client.err"
	crc=$?
	wait "$srv"; src=$?
	pids=()
	# Debian's rping may exit 255 after a complete run (rdma-core PR
	# #1622, tests/cm/compat.sh): the pings printed decide.
	[ "$(grep -c '^ping data: rdma-ping-' "$tmp/client")" = 10 ] &&
		[ "$(grep -c '^server ping data: rdma-ping-' "$tmp/server")" = 10 ] ||
		{ echo "FAIL: A's rping did not complete 10 pings (exit $src / $crc):"; cat "$tmp/client" "$tmp/client.err" "$tmp/server"; fail=1; }
	[ $fail = 0 ] && echo "PASS: mad ($who): B's MADs dropped, A's 10 pings done"
	exit $fail
fi
if [ "$attack" = name ]; then
	"${in1[@]}" timeout -k 2 60 "${as_b[@]}" "$py" "$here/roce_thief.py" name 50 >"$tmp/name" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do grep -q held "$tmp/name" && break; sleep 0.05; done
	grep -q held "$tmp/name" || { echo "FAIL: the thief could not take the name"; cat "$tmp/name"; exit 1; }
	echo "thief (uid $(id -u "$SV_USER2")) holds @softverbs-roce-4791"
fi

iters=5000
"${in1[@]}" timeout -k 5 100 "${as_a[@]}" "$pp" -g "$g1" -c -n $iters >"$tmp/server" 2>&1 &
srv=$!
pids+=($srv)
holder=
for _ in $(seq 200); do
	holder=$("${in1[@]}" ss -Hlunp "sport = :4791" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n1)
	[ -n "$holder" ] && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
[ -n "$holder" ] || { echo "FAIL: A's standard-mode server holds no UDP 4791"; cat "$tmp/server"; exit 1; }
[ "$(stat -c %u /proc/"$holder")" = "$uid_a" ] ||
	{ echo "FAIL: 4791 is held by pid $holder, not by A (uid $uid_a)"; exit 1; }
echo "A's server (pid $holder) holds UDP 4791"

"${in2[@]}" timeout -k 5 100 "${as_a[@]}" "$pp" -g "$g2" -c -n $iters 10.233.0.1 >"$tmp/client" 2>&1 &
cli=$!
pids+=($cli)

# B, while A's traffic runs.
if [ "$attack" = bind ]; then
	"${in1[@]}" timeout -k 2 30 "${as_b[@]}" "$py" "$here/roce_thief.py" bind 10.233.0.1 >"$tmp/bind" 2>&1 ||
		{ echo "FAIL: another user bound UDP 4791 beside A's holder:"; grep -v EADDRINUSE "$tmp/bind"; fail=1; }
	tail -n1 "$tmp/bind"
fi
# B's own standard-mode endpoint: refused by the kernel, and told why.
"${in1[@]}" timeout -k 2 5 "${as_b[@]}" "$pp" -g "$g1" -p 18600 >"$tmp/b" 2>&1
# Seen from B's own user namespace, A's uid is one it does not map.
holder_is="another user's process (uid $uid_a, "
[ "$who" = thief ] && holder_is="another user's process, root's or the kernel (rxe, or a tunnel such as VXLAN, in this namespace?): a uid this user namespace does not map, "
want="softverbs error: SOFTVERBS_ROCE=standard: UDP 4791 is held by $holder_is"
grep -qF "$want" "$tmp/b" ||
	{ echo "FAIL: B's process did not say who holds the port ($want...):"; cat "$tmp/b"; fail=1; }
grep -F "SOFTVERBS_ROCE" "$tmp/b" | head -n1

wait "$cli"; crc=$?
wait "$srv"; src=$?
left=()
for p in "${pids[@]}"; do [ "$p" = "$srv" ] || [ "$p" = "$cli" ] || left+=("$p"); done
pids=("${left[@]}")
bytes=$((4096 * iters * 2))
for side in server client; do
	grep -q "^$bytes bytes in .* seconds" "$tmp/$side" && grep -q "^$iters iters in" "$tmp/$side" ||
		{ echo "FAIL: A's $side did not move $bytes bytes:"; cat "$tmp/$side"; fail=1; }
done
[ "$crc" = 0 ] && [ "$src" = 0 ] || { echo "FAIL: A's pingpong exited $src (server) / $crc (client)"; fail=1; }
[ $fail = 0 ] && echo "PASS: $attack ($who under softverbs run): B was refused, A moved $bytes bytes each way, validated"
exit $fail
