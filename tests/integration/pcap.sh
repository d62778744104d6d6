#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# SOFTVERBS_PCAP (issue #19): Debian's unmodified TOOL (ib_write_bw,
# ib_read_bw, ib_send_bw, ib_atomic_bw: -n 200; rping: -C 10 -v), server
# and client through `softverbs run` on this host, both with the same
# SOFTVERBS_PCAP=$tmp/cap.pcap (so the second process to open it must
# capture to cap.pcap.PID and say so), over the shared-memory fast path
# (shm) or UDP (udp: SOFTVERBS_FASTPATH=0).  Then pcap_check.py reads both
# files with tshark and no option: 0 malformed packets, every packet
# InfiniBand to UDP port 4791 with a right ICRC, the tool's opcodes
# present, each connection's request PSNs in order.
#
#   pcap.sh TOOL shm|udp
set -u
tool=$1 mode=$2
build=${SV_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
sv=$build/bin/softverbs
here=$(cd "$(dirname "$0")" && pwd)
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
bin=$(command -v "$tool") || { echo "SKIP: $tool not installed"; exit 77; }
source "${SV_NET:-$here/../net}/port.sh"
port=$(sv_free_port) || exit 1

tmp=$(mktemp -d /tmp/sv-pcap.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

export SOFTVERBS_PCAP=$tmp/cap.pcap
# UDP loses datagrams (a socket buffer full): go-back-N resends are part of
# that path's capture; the shm rings lose none, so there any PSN out of
# order fails (so would a fast-path packet written with a PSN in use),
# unless a requester counted a retransmission (below): on a loaded host a
# retransmission timer may fire before a descheduled peer answers, and the
# resend then starts again at the oldest unacknowledged PSN.  The capture
# cannot shift a PSN in flight: the fast path stands for packets only
# when no packet-path PSN is outstanding (paths/direct.c, paths/chan.c).
export SOFTVERBS_STATS=1
check=(python3 "$here/pcap_check.py")
case $mode in
shm) unset SOFTVERBS_FASTPATH ;;
udp) export SOFTVERBS_FASTPATH=0 check+=(--resends) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

# BTH opcodes each tool's traffic must show (IBA 9.2; both files together).
case $tool in
ib_write_bw) expect=0x06,0x07,0x08,0x11 ;; # WRITE FIRST/MIDDLE/LAST, ACK
ib_read_bw) expect=0x0c,0x0d,0x0e,0x0f ;; # READ request, responses
ib_send_bw) expect=0x00,0x01,0x02,0x11 ;; # SEND FIRST/MIDDLE/LAST, ACK
ib_atomic_bw) expect=0x14,0x12 ;; # FETCH_ADD, ATOMIC ACKNOWLEDGE
rping) expect=0x04,0x0c,0x10,0x0a,0x11 ;; # SEND, READ, WRITE ONLY, ACK
*) echo "unknown tool $tool"; exit 2 ;;
esac

if [ "$tool" = rping ]; then
	srv=(rping -s -a 127.0.0.1 -p "$port" -v -C 10)
	cli=(rping -c -a 127.0.0.1 -p "$port" -v -C 10)
else
	gid=$("$sv" devices 2>/dev/null |
		awk '/GID\[/ && /::ffff:127\.0\.0\.1[ \t]/ { sub(/.*GID\[ */, ""); sub(/\].*/, ""); print; exit }')
	[ -n "$gid" ] || { echo "FAIL: no ::ffff:127.0.0.1 GID"; exit 1; }
	srv=("$bin" -d softverbs0 -x "$gid" -p "$port" -n 200)
	cli=("${srv[@]}" 127.0.0.1)
fi

timeout -k 5 60 "$sv" run -- "${srv[@]}" >"$tmp/server" 2>&1 &
srv_pid=$!
# The server listens on a TCP port (perftest's exchange, rping's CM).
for _ in $(seq 200); do
	ss -Htln "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
timeout -k 5 60 "$sv" run -- "${cli[@]}" >"$tmp/client" 2>&1
cli_rc=$?
wait "$srv_pid"
srv_rc=$?
srv_pid=

fail=0
# rping's own exit race (tests/cm/compat.sh, rdma-core PR #1622).
rping_race() { [ "$tool" = rping ] && [ "$1" = 255 ] &&
	grep -q "^rdma_get_cm_event: Bad file descriptor" "$2"; }
for side in server client; do
	rc=$srv_rc
	[ $side = client ] && rc=$cli_rc
	if [ "$rc" != 0 ] && ! rping_race "$rc" "$tmp/$side"; then
		echo "FAIL: $side exit status $rc"
		tail -5 "$tmp/$side" | sed 's/^/    /'
		fail=1
	fi
done
files=("$tmp"/cap.pcap*)
if [ ${#files[@]} != 2 ]; then
	echo "FAIL: ${#files[@]} capture files, not 2: ${files[*]}"
	fail=1
fi
# The second process says where it captures instead.
grep -q "SOFTVERBS_PCAP: .*cap.pcap is being written by another process; capturing to .*cap.pcap\.[0-9]" \
	"$tmp/server" "$tmp/client" || { echo "FAIL: no warning about the shared name"; fail=1; }
# SOFTVERBS_STATS' line at each QP's destroy: "..., N retransmissions, ..."
# (after the tool's last output, which may not end its line).
resent=$(cat "$tmp/server" "$tmp/client" |
	sed -n 's/.*softverbs: destroying qp .* \([0-9]*\) retransmissions.*/\1/p' |
	awk '{ n += $1 } END { print n + 0 }')
if [ "$mode" = shm ] && [ "$resent" -gt 0 ]; then
	echo "note: the requesters counted $resent retransmissions: go-back-N resends accepted"
	check+=(--resends)
fi
"${check[@]}" --expect "$expect" "${files[@]}" || fail=1
[ $fail = 0 ] && echo "PASS: $tool over $mode captured and decoded"
exit $fail
