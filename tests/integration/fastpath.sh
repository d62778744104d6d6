#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Which link a QP uses between two processes of this host (issue #7), with
# Debian's ibv_rc_pingpong validating every received buffer (-c), both
# sides with SOFTVERBS_STATS=1 (counters and each QP's path at close):
#   fastpath.sh shm      QPs on shared memory: "path=shm" on both sides,
#                        shm packets or channel messages both ways, no UDP
#                        data packets
#   fastpath.sh udp      SOFTVERBS_FASTPATH=0 on both: "path=udp (disabled
#                        by SOFTVERBS_FASTPATH=0)", UDP counters, no shm ones
#   fastpath.sh users    the server runs as one ordinary user, the client as
#                        another (useradd users, tests/users.sh; root only,
#                        else 77): neither side attaches to the other's
#                        process (no fast path between users,
#                        docs/security.md), both send through UDP and say
#                        why; the run completes
#   fastpath.sh root     root's server, an ordinary user's client: the same
#                        (root could attach, and did before issue #17)
# Both sides use loopback's GID; with a second argument "host" they use
# GID 0 of the default order, which must be an IPv4 address of this host
# outside lo (the table puts loopback last): a QP addressed to the host's
# real address takes the same paths (77 on a host with only lo).
set -u
mode=${1:-shm}
addr=${2:-lo}
build=${SV_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
pp=$(command -v ibv_rc_pingpong) || { echo "ibv_rc_pingpong not installed (ibverbs-utils)"; exit 1; }
size=20000 iters=300

srv_env=(env SOFTVERBS_STATS=1) cli_env=(env SOFTVERBS_STATS=1) srv_pre=() cli_pre=()
case $mode in
shm) ;;
udp) srv_env+=(SOFTVERBS_FASTPATH=0) cli_env+=(SOFTVERBS_FASTPATH=0) ;;
users | root)
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to act as two users)"; exit 77; }
	. "$(dirname "$0")/../users.sh"
	sv_users_ready || { echo "SKIP: $SV_USERS_WHY"; exit 77; }
	sv_as 2
	cli_pre=("${SV_AS[@]}")
	if [ "$mode" = users ]; then
		sv_as 1
		srv_pre=("${SV_AS[@]}")
	fi
	;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
run=("$build/bin/softverbs" run --)

source "${SV_NET:-$(dirname "$0")/../net}/port.sh"
source "${SV_NET:-$(dirname "$0")/../net}/gid.sh"
port=$(sv_free_port) || exit 1
case $addr in
lo)
	gid=$(sv_gid_of 127.0.0.1 "${run[@]}")
	[ -n "$gid" ] || { echo "FAIL: no GID for 127.0.0.1"; exit 1; }
	;;
host)
	# GID 0 of the default order (strict mode's, as hardware's, is
	# fe80::), and that address's index in this run's mode.
	ip -4 -o addr show scope global | grep -q . ||
		{ echo "SKIP: no IPv4 address outside lo"; exit 77; }
	a0=$(sv_gid0_addr env -u SOFTVERBS_STRICT "${run[@]}")
	case $a0 in
	::ffff:127.* | ::1 | "") echo "FAIL: GID 0 is '$a0', not the host's address"; exit 1 ;;
	::ffff:*) ;;
	*) echo "FAIL: GID 0 is '$a0', not an IPv4 address"; exit 1 ;;
	esac
	gid=$(sv_gid_of "${a0#::ffff:}" "${run[@]}")
	echo "GID 0 is $a0; index $gid here"
	;;
*) echo "unknown address $addr"; exit 2 ;;
esac

tmp=$(mktemp -d /tmp/sv-fastpath.XXXXXX)
chmod 755 "$tmp"
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

timeout -k 5 60 "${srv_pre[@]}" "${srv_env[@]}" "${run[@]}" "$pp" -g "$gid" -p "$port" -c -s $size -n $iters \
	>"$tmp/server" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do
	ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
timeout -k 5 55 "${cli_pre[@]}" "${cli_env[@]}" "${run[@]}" "$pp" -g "$gid" -p "$port" -c -s $size -n $iters \
	localhost >"$tmp/client" 2>&1
crc=$?
wait "$srv_pid"
src=$?
srv_pid=

echo "--- server (exit $src) ---"; cat "$tmp/server"
echo "--- client (exit $crc) ---"; cat "$tmp/client"

fail=0
bad() { echo "FAIL: $*"; fail=1; }
# A counter's value in one side's stats (0 when not printed: zero).
counter() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }' "$tmp/$1"; }

want=$((size * iters * 2))
for side in server client; do
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds' "$tmp/$side")
	[ "${line%% *}" = "$want" ] || bad "$side moved '${line%% *}' bytes, expected $want"
	grep -q "Completion wth error\|parse WC failed\|Couldn't" "$tmp/$side" && bad "$side reported an error"
done
[ $src = 0 ] || bad "server exit status $src"
[ $crc = 0 ] || bad "client exit status $crc"

path() { grep -o 'path=[a-z]*\( ([^)]*)\)\?' "$tmp/$1" | head -n1; }
case $mode in
shm)
	for side in server client; do
		[ "$(path $side)" = "path=shm" ] || bad "$side QP: '$(path $side)', expected path=shm"
		tx=$(counter $side shm_tx_pkts) rx=$(counter $side shm_rx_pkts)
		ctx=$(counter $side chan_sends) crx=$(counter $side chan_recvs)
		udp=$(counter $side sent_pkts)
		# Every message is a packet or more each way, plus ACKs, or a
		# channel message (a 20000-byte SEND: a descriptor the
		# receiver pulls, docs/fastpath.md).
		[ $((tx + ctx)) -ge $iters ] && [ $((rx + crx)) -ge $iters ] ||
			bad "$side: shm_tx_pkts $tx chan_sends $ctx shm_rx_pkts $rx chan_recvs $crx, expected >= $iters"
		[ "$udp" -eq 0 ] || bad "$side sent $udp UDP packets"
	done
	;;
udp)
	for side in server client; do
		[ "$(path $side)" = "path=udp (disabled by SOFTVERBS_FASTPATH=0)" ] ||
			bad "$side QP: '$(path $side)'"
		[ "$(counter $side shm_tx_pkts)" -eq 0 ] || bad "$side used shm"
		[ "$(counter $side sent_pkts)" -ge $iters ] || bad "$side sent too few UDP packets"
	done
	;;
users | root)
	# Each side finds the other's process owned by someone else (in a
	# user's run, through its user namespace where the other uid is
	# unmapped) and stays on UDP, saying why.
	for side in server client; do
		[ "$(path $side)" = "path=udp (peer is another user: no fast path between users)" ] ||
			bad "$side QP: '$(path $side)'"
		[ "$(counter $side shm_other_user)" -ge 1 ] || bad "$side did not count the other user"
		[ "$(counter $side shm_tx_pkts)" -eq 0 ] || bad "$side used shm"
		[ "$(counter $side sent_pkts)" -ge $iters ] || bad "$side sent too few UDP packets"
	done
	;;
esac
[ $fail = 0 ] && echo "PASS: fastpath $mode ($addr)"
exit $fail
