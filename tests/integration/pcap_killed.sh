#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# SOFTVERBS_PCAP of processes killed while they run (issue #19): Debian's
# ib_send_bw with 512-byte messages (shm: message channels in lean mode;
# udp: packets), server and client through `softverbs run` with
# SOFTVERBS_PCAP=$tmp/cap.%p.pcap (one file each, named by pid), both
# SIGKILLed once their files have grown past the first write and again
# a second later.  The files must be what the writes made them: tshark reads
# them with no option, 0 malformed, InfiniBand only, ICRCs right,
# PSNs in order (a last record cut short by the kill is allowed and left
# out, as README's "Capturing traffic" says).
#
#   pcap_killed.sh shm|udp
set -u
mode=$1
build=${SV_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
sv=$build/bin/softverbs
here=$(cd "$(dirname "$0")" && pwd)
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
bin=$(command -v ib_send_bw) || { echo "SKIP: ib_send_bw not installed"; exit 77; }
source "${SV_NET:-$here/../net}/port.sh"
port=$(sv_free_port) || exit 1

tmp=$(mktemp -d /tmp/sv-pcapk.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

export SOFTVERBS_PCAP=$tmp/cap.%p.pcap
# UDP loses datagrams (a socket buffer full): go-back-N resends are part of
# that path's capture; the shm rings lose none, so there any PSN out of
# order fails (so would a fast-path packet written with a PSN in use).
check=(python3 "$here/pcap_check.py")
case $mode in
shm) unset SOFTVERBS_FASTPATH ;;
udp) export SOFTVERBS_FASTPATH=0 check+=(--resends) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
gid=$("$sv" devices 2>/dev/null |
	awk '/GID\[/ && /::ffff:127\.0\.0\.1[ \t]/ { sub(/.*GID\[ */, ""); sub(/\].*/, ""); print; exit }')
[ -n "$gid" ] || { echo "FAIL: no ::ffff:127.0.0.1 GID"; exit 1; }
args=(-d softverbs0 -x "$gid" -p "$port" -s 512 -n 100000000)

# `softverbs run` execs the tool: $! is its pid, and its file's name.
"$sv" run -- "$bin" "${args[@]}" >"$tmp/server" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
	ss -Htln "sport = :$port" | grep -q . && break
	sleep 0.05
done
"$sv" run -- "$bin" "${args[@]}" 127.0.0.1 >"$tmp/client" 2>&1 &
pids+=($!)

# Both files past their 24-byte header (records written), then a fifth of
# a second of traffic more (at a million small SENDs a second on shm, more
# would give tshark minutes of reading).
grown=0
for _ in $(seq 300); do
	grown=0
	for p in "${pids[@]}"; do
		[ "$(stat -c %s "$tmp/cap.$p.pcap" 2>/dev/null || echo 0)" -gt 24 ] &&
			grown=$((grown + 1))
	done
	[ $grown = 2 ] && break
	sleep 0.05
done
sleep 0.2
for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done

fail=0
alive=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
[ $alive = 0 ] || { echo "FAIL: a process outlived SIGKILL"; fail=1; }
if [ $grown != 2 ]; then
	echo "FAIL: $grown of 2 capture files were written while running"
	ls -l "$tmp"
	tail -3 "$tmp/server" "$tmp/client"
	exit 1
fi
ls -l "$tmp"/cap.*.pcap
"${check[@]}" --cut-ok --expect 0x04,0x11 "$tmp"/cap.*.pcap || fail=1
[ $fail = 0 ] && echo "PASS: killed processes' captures over $mode read back"
exit $fail
