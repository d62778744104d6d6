#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Capture test: the traffic of "rc_ops all_opcodes" (every RC opcode and
# IBA 1.5's ATOMIC WRITE, two QPs on one host) is captured live on
# lo, on exactly the UDP ports of its two QPs (QPN >> 8), and decoded
# with tshark's InfiniBand dissector (-d udp.port==N,infiniband).  Every
# posted opcode must appear under tshark's own name (ATOMIC WRITE, which
# Debian 12's tshark cannot name, by its BTH opcode), every packet must
# decode as InfiniBand, and none may be malformed.
#
# tshark guesses the protocol carried in SEND payloads with heuristics
# (RPC-over-RDMA, SMB Direct, iSER...); our test payloads are random bytes,
# so those heuristics are disabled: they judge the payload, not our headers.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${SV_INTEG_BIN:-$PWD}
net=${SV_NET:-$here/../net}
source "$net/capture.sh"
command -v tshark >/dev/null || { echo "tshark not installed"; exit 1; }

tmp=$(mktemp -d /tmp/sv-rccap.XXXXXX)
ops_pid=
cleanup() {
	[ -n "$ops_pid" ] && kill "$ops_pid" 2>/dev/null
	sv_cap_kill
	rm -rf "$tmp"
}
trap cleanup EXIT

# A live capture needs the privilege to capture (root, or dumpcap made
# capable for the user, which Debian does not do by default).
if ! probe=$(timeout 20 dumpcap -q -i lo -a duration:1 -w "$tmp/probe.pcapng" 2>&1); then
	echo "SKIP: no live capture on lo for this user: $(echo "$probe" | grep -m1 -i 'permission\|denied\|error' || echo "$probe" | tail -n 1)"
	exit 77
fi

# The capture needs the wire: no shared-memory fast path for this run,
# and no UDP_SEGMENT sends, which lo carries unsegmented (README.md, live
# capture; udp_gso.sh wire checks what a segmenting device sends).
SOFTVERBS_FASTPATH=0 SOFTVERBS_GSO=0 HX_PORTS_FILE=$tmp/ports HX_GO_FILE=$tmp/go timeout -k 5 60 "$bin/rc_ops" all_opcodes \
	>"$tmp/ops.log" 2>&1 &
ops_pid=$!
for _ in $(seq 400); do
	[ -s "$tmp/ports" ] && break
	kill -0 "$ops_pid" 2>/dev/null || break
	sleep 0.05
done
if [ ! -s "$tmp/ports" ]; then
	echo "FAIL: rc_ops did not set up its QPs"; cat "$tmp/ops.log"; exit 1
fi
read -r p1 p2 <"$tmp/ports"
echo "QP ports: $p1 $p2"

sv_cap_start "$tmp/cap.pcapng" lo "udp port $p1 or udp port $p2" 127.0.0.1 || exit 1
touch "$tmp/go"
wait "$ops_pid"
ops_rc=$?
ops_pid=
sv_cap_stop
cap_rc=$?
cat "$tmp/ops.log"

disable=()
known=$(tshark -G protocols 2>/dev/null | cut -f3)
for p in $(tshark -G heuristic-decodes 2>/dev/null | awk '$1=="infiniband.payload"{print $2}'); do
	# (ethertype also frames lo's packets: it must stay on)
	[ "$p" = ethertype ] && continue
	grep -qx "$p" <<<"$known" && disable+=(--disable-protocol "$p")
done
decode=(tshark -r "$tmp/cap.pcapng" -d "udp.port==$p1,infiniband" -d "udp.port==$p2,infiniband" "${disable[@]}")

"${decode[@]}" -T fields -e frame.number -e _ws.col.Protocol -e _ws.col.Info \
	>"$tmp/decoded" 2>/dev/null
echo "--- decoded ($(wc -l <"$tmp/decoded") packets) ---"
cut -f3 "$tmp/decoded" | sed 's/ QP=.*//' | sort | uniq -c

fail=$cap_rc
[ $ops_rc = 0 ] || { echo "FAIL: rc_ops all_opcodes exit status $ops_rc"; fail=1; }
for op in "Send Only" "Send Only Immediate" "RDMA Write First" "RDMA Write Middle" \
	"RDMA Write Last" "RDMA Write Only Immediate" "RDMA Read Request" \
	"RDMA Read Response First" "RDMA Read Response Middle" \
	"RDMA Read Response Last" "Acknowledge" "Compare Swap" "Fetch Add" \
	"Atomic Acknowledge"; do
	grep -qP "\tRC $op QP=" "$tmp/decoded" || { echo "FAIL: no '$op' packet decoded"; fail=1; }
done
# IBA 1.5 ATOMIC WRITE (0x1D): Debian 12's tshark (4.0) has no name for
# the opcode, so it is found by the BTH field its dissector does decode.
aw=$("${decode[@]}" -Y "infiniband.bth.opcode == 0x1d" 2>/dev/null | wc -l)
[ "$aw" -ge 1 ] || { echo "FAIL: no ATOMIC WRITE (BTH opcode 0x1D) packet"; fail=1; }
total=$(wc -l <"$tmp/decoded")
ib=$(awk -F'\t' '$2=="RRoCE" || $2=="InfiniBand"' "$tmp/decoded" | wc -l)
[ "$total" -gt 0 ] && [ "$ib" = "$total" ] ||
	{ echo "FAIL: $ib of $total packets decoded as InfiniBand"; fail=1; }
malformed=$("${decode[@]}" -Y "_ws.malformed || _ws.expert.severity == error" 2>/dev/null | wc -l)
if [ "$malformed" != 0 ]; then
	echo "FAIL: $malformed malformed/error packets:"
	"${decode[@]}" -Y "_ws.malformed || _ws.expert.severity == error" -V 2>/dev/null | head -60
	fail=1
fi
[ $fail = 0 ] && echo "PASS: every opcode decoded, nothing malformed"
exit $fail
