#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified Debian ibv_xsrq_pingpong (XRC: an XRC domain from a file,
# XRC SRQs, XRC_SEND and XRC_RECV QPs), server and client on one host, both
# run through build/bin/softverbs run on a random free TCP port, each under
# a timeout.
#   xrc_pingpong.sh default|events|big
# Checks every exit code, the "success" line each prints when every
# message arrived without error, and that each side printed its SRQ number
# and the peer's.
#
# clients4 and clients4ev run the server with -c 4 and four client
# processes: the server sends to one client's SRQ through another client's
# target QP (ibv_xsrq_pingpong's round robin), so the target QP of one
# process delivers into an XRC SRQ of another, the domain shared through
# the file /tmp/xrc_domain (docs/windows-xrc.md "Domains and files").
set -u
mode=${1:-default}
build=${SV_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
pp=$(command -v ibv_xsrq_pingpong) || { echo "ibv_xsrq_pingpong not installed (ibverbs-utils)"; exit 77; }

extra=()
nclients=1
case $mode in
default) ;;
events) extra=(-e -n 200) ;;
big) extra=(-s 100000 -n 100 -m 4096) ;;
clients4) nclients=4 extra=(-n 50) ;;
clients4ev) nclients=4 extra=(-e -n 50 -s 10000) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

# ibv_xsrq_pingpong opens that file read-only, creating it mode 0440: one
# made by another user (an earlier run as root) cannot be opened, and the
# tool then goes on with a domain per process, which cannot work.
if [ "$nclients" -gt 1 ] && [ -e /tmp/xrc_domain ] && [ ! -r /tmp/xrc_domain ]; then
	echo "SKIP: /tmp/xrc_domain, ibv_xsrq_pingpong's shared domain file, belongs to $(stat -c %U /tmp/xrc_domain) (mode $(stat -c %a /tmp/xrc_domain)): this user cannot open it"
	exit 77
fi

if [ -x "$build/bin/softverbs" ]; then
	run=("$build/bin/softverbs" run --)
else
	export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	run=()
fi

source "${SV_NET:-$(dirname "$0")/../net}/port.sh"
source "${SV_NET:-$(dirname "$0")/../net}/gid.sh"
# Loopback's GID: both processes of this host (SV_GID_INDEX overrides).
gid=${SV_GID_INDEX:-$(sv_gid_of 127.0.0.1 "${run[@]}")}
[ -n "$gid" ] || { echo "FAIL: no GID for 127.0.0.1"; exit 1; }
port=$(sv_free_port) || exit 1

tmp=$(mktemp -d /tmp/sv-xsrq.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

srv_extra=()
[ "$nclients" -gt 1 ] && srv_extra=(-c "$nclients")
timeout -k 5 60 "${run[@]}" "$pp" -g "$gid" -p "$port" "${srv_extra[@]}" "${extra[@]}" >"$tmp/server" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do
	ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
cli_pids=()
for i in $(seq "$nclients"); do
	timeout -k 5 55 "${run[@]}" "$pp" -g "$gid" -p "$port" "${extra[@]}" localhost >"$tmp/client$i" 2>&1 &
	cli_pids+=($!)
done
crcs=()
for pid in "${cli_pids[@]}"; do
	wait "$pid"
	crcs+=($?)
done
wait "$srv_pid"
src=$?
srv_pid=

echo "--- server (exit $src) ---"; cat "$tmp/server"
for i in $(seq "$nclients"); do
	echo "--- client $i (exit ${crcs[$((i - 1))]}) ---"; cat "$tmp/client$i"
done

fail=0
sides=(server)
for i in $(seq "$nclients"); do sides+=("client$i"); done
for side in "${sides[@]}"; do
	grep -qx success "$tmp/$side" || { echo "FAIL: $side did not print success"; fail=1; }
	for who in local remote; do
		grep -qE "^ *$who: LID [0-9a-f]+, QPN RECV [0-9a-f]{6} SEND [0-9a-f]{6}, PSN [0-9a-f]{6}, SRQN [0-9a-f]{6}" "$tmp/$side" ||
			{ echo "FAIL: $side printed no $who address line"; fail=1; }
	done
done
# The server printed one pair of address lines per client.
n=$(grep -cE "^ *remote: LID" "$tmp/server")
[ "$n" = "$nclients" ] || { echo "FAIL: the server saw $n clients, not $nclients"; fail=1; }
[ $src = 0 ] || { echo "FAIL: server exit status $src"; fail=1; }
for i in $(seq "$nclients"); do
	c=${crcs[$((i - 1))]}
	[ "$c" = 0 ] || { echo "FAIL: client $i exit status $c"; fail=1; }
done
[ $fail = 0 ] && echo "PASS: ibv_xsrq_pingpong $mode"
exit $fail
