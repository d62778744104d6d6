# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A live capture that holds what a test sent (source this file).
#
#   sv_cap_start FILE IFACE FILTER TO [NS]
#       dumpcap on IFACE (in namespace NS, if given) writes the packets that
#       match the capture filter FILTER to FILE (pcapng); returns once it
#       really captures: once a marker datagram, sent from NS to UDP port 9
#       of TO (an address reached through IFACE: the veth peer's, or
#       127.0.0.1 on lo), is in FILE
#   sv_cap_stop
#       sends a marker again and waits until it is in FILE, so that every
#       packet captured before it is there too; then stops dumpcap and
#       takes the markers out of FILE, which then holds only what FILTER
#       matched
#   sv_cap_kill
#       for an EXIT trap: ends a capture still running
#
# Both say FAIL and return 1 when the marker is not in FILE after
# SV_CAP_WAIT seconds (30 by default) or dumpcap exits.  One capture at a
# time, and from the script's own shell (not in $(...)): it waits for
# dumpcap as its child.
#
# Why markers: dumpcap (and tshark) print "Capturing on" before they open
# the interface, and dumpcap writes FILE out about every half second, so
# neither the message nor a fixed sleep says that the capture has begun
# or that what it captured is in FILE.  A marker goes through the same
# interface and the same capture: once it is in FILE, so is every packet
# captured before it.  To a port nobody binds (softverbs' sockets take
# ephemeral ports and 4791), the answer is an ICMP error, which FILTERs
# of UDP do not match.

SV_CAP_PID=
SV_CAP_FILE=
SV_CAP_TO=
SV_CAP_NS=()
SV_CAP_TAG=
# A marker's payload starts with "svcm" (0x7376636d), which BPF can check.
SV_CAP_BPF="udp dst port 9 and udp[8:4] = 0x7376636d"

sv_cap_start() {
	local file=$1 iface=$2 filter=$3
	SV_CAP_FILE=$1 SV_CAP_TO=$4 SV_CAP_NS=()
	[ -n "${5:-}" ] && SV_CAP_NS=(ip netns exec "$5")
	SV_CAP_TAG="svcm-$$-$RANDOM"
	rm -f "$file"
	"${SV_CAP_NS[@]}" dumpcap -q -i "$iface" -f "($filter) or ($SV_CAP_BPF)" \
		-w "$file" >"$file.dumpcap" 2>&1 &
	SV_CAP_PID=$!
	_sv_cap_marked start && return 0
	sv_cap_kill
	return 1
}

sv_cap_stop() {
	local rc=0 end=$((SECONDS + ${SV_CAP_WAIT:-30}))
	[ -n "$SV_CAP_PID" ] || { echo "FAIL: capture: none to stop"; return 1; }
	_sv_cap_marked end || rc=1
	kill -INT "$SV_CAP_PID" 2>/dev/null
	while kill -0 "$SV_CAP_PID" 2>/dev/null && [ $SECONDS -lt "$end" ]; do
		sleep 0.05
	done
	if kill -0 "$SV_CAP_PID" 2>/dev/null; then
		echo "FAIL: capture: dumpcap did not stop in ${SV_CAP_WAIT:-30} s"
		kill -KILL "$SV_CAP_PID" 2>/dev/null
		rc=1
	fi
	wait "$SV_CAP_PID"
	SV_CAP_PID=
	# (dropped packets are a reason for a count short of what was sent)
	grep -h "dropped on interface" "$SV_CAP_FILE.dumpcap" | sed 's/^/capture: /'
	tshark -r "$SV_CAP_FILE" -Y "!(udp.dstport == 9 && frame contains \"svcm-\")" \
		-F pcapng -w "$SV_CAP_FILE.tmp" 2>"$SV_CAP_FILE.strip" &&
		mv "$SV_CAP_FILE.tmp" "$SV_CAP_FILE" ||
		{ echo "FAIL: capture: tshark cannot take the markers out"; cat "$SV_CAP_FILE.strip"; rc=1; }
	return $rc
}

sv_cap_kill() {
	[ -n "$SV_CAP_PID" ] && kill "$SV_CAP_PID" 2>/dev/null
	SV_CAP_PID=
	return 0
}

# _sv_cap_marked WHAT: send markers (four a second: one may be dropped, or
# sent before the capture begins) until one is in the capture's file.
_sv_cap_marked() {
	local tok="$SV_CAP_TAG-$1" end=$((SECONDS + ${SV_CAP_WAIT:-30})) i=0
	until grep -qaF "$tok" "$SV_CAP_FILE" 2>/dev/null; do
		if ! kill -0 "$SV_CAP_PID" 2>/dev/null; then
			echo "FAIL: capture: dumpcap exited:"
			cat "$SV_CAP_FILE.dumpcap"
			return 1
		fi
		if [ $SECONDS -ge "$end" ]; then
			echo "FAIL: capture: the $1 marker is not in $SV_CAP_FILE after ${SV_CAP_WAIT:-30} s"
			cat "$SV_CAP_FILE.dumpcap"
			return 1
		fi
		[ $((i++ % 5)) = 0 ] &&
			"${SV_CAP_NS[@]}" bash -c 'echo "$1" >"/dev/udp/$2/9"' - "$tok" "$SV_CAP_TO" 2>/dev/null
		sleep 0.05
	done
}
