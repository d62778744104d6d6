#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Debian's unmodified rdmacm-utils (and our examples) through softverbs run.
# Usage: compat.sh CASE    (SV_BUILD: the build tree; exit 77: skipped)
#
# Each case starts a server in the background, waits until its port
# listens, runs the client, and checks both exit codes and what they
# print.  Every program runs under `timeout`; the servers that never exit
# on their own (cmtime, the examples) are killed by pid at the end.
set -uo pipefail

case_name=${1:?usage: compat.sh CASE}
build=${SV_BUILD:?SV_BUILD is the build tree}
sv=$build/bin/softverbs
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
fail=0

# Background programs run in their own process group (setsid), so that
# the group (timeout, softverbs run, the program) goes down together.
killgroup() {
	kill -TERM -- "-$1" 2>/dev/null || return 0
	sleep 0.2
	kill -KILL -- "-$1" 2>/dev/null
	return 0
}

cleanup() {
	local p
	for p in "${pids[@]}"; do
		killgroup "$p"
	done
	[ -n "${SV_NETNS_CREATED+x}" ] && sv_netns_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT

[ -x "$sv" ] || { echo "no $sv" >&2; exit 1; }

need() {
	command -v "$1" >/dev/null || { echo "SKIP: $1 not installed (rdmacm-utils)"; exit 77; }
}

check() { # check DESCRIPTION COMMAND...
	if "${@:2}"; then
		echo "ok: $1"
	else
		echo "FAILED: $1"
		fail=1
	fi
}

source "$here/../net/port.sh"
free_port() { sv_free_port; }

# wait_listen PORT [NETNS]: until a TCP socket listens there (5 s).
wait_listen() {
	local port=$1 ns=${2:-} i
	for i in $(seq 1 100); do
		if [ -n "$ns" ]; then
			ip netns exec "$ns" ss -Hltn "sport = :$port" | grep -q . && return 0
		else
			ss -Hltn "sport = :$port" | grep -q . && return 0
		fi
		sleep 0.05
	done
	echo "nothing listens on port $port" >&2
	return 1
}

# start NAME CMD...: a background program, its output in $tmp/NAME (and
# its stderr in $tmp/NAME.err: rping writes events there, unbuffered, in
# the middle of its buffered stdout lines).
start() {
	local name=$1
	shift
	setsid "$@" >"$tmp/$name" 2>"$tmp/$name.err" &
	pids+=($!)
	eval "${name}_pid=$!"
}

# finish NAME SECONDS: its exit code (124 if it had to be killed).
finish() {
	local pid i
	eval "pid=\$${1}_pid"
	for i in $(seq 1 $(($2 * 20))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		killgroup "$pid"
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid"
}

show() { # show NAME: the tail of its output, for the log
	echo "--- $1:"
	tail -n "${2:-15}" "$tmp/$1" | cut -c1-200
	[ -s "$tmp/$1.err" ] && tail -n 5 "$tmp/$1.err"
}

run() { timeout "$1" "$sv" run -- "${@:2}"; }

# cmtime's two command lines.  Up to rdma-core 58 a server (-p PORT) that
# serves until killed and a client (-s SERVER) printing "connect : ..."
# lines; from 59 two peers that both exit: the first to bind the
# controller's out-of-band TCP port (-C ADDR -p PORT) leads, the listener
# (-L) accepts -c connections from the other, each binds its own address
# (-b) and prints a table ("cm connect  AVG ...").
cmtime_peers() {
	local usage
	usage=$(cmtime -h 2>&1)
	case $usage in *controller_address*) return 0 ;; esac
	return 1
}
# cmtime_oob_clash: rdma-core 52 to 58's cmtime, whose server listens on
# TCP itself at the port of its RDMA CM listener, which softverbs' CM holds
# as a TCP port: the limit README's compatibility notes document.
cmtime_oob_clash() {
	local v
	v=$(dpkg-query -W -f '${Version}' rdmacm-utils 2>/dev/null) || return 1
	v=${v%%.*}
	[ "$v" -ge 52 ] 2>/dev/null && [ "$v" -le 58 ] && ! cmtime_peers
}
cmtime_clash_why="rdmacm-utils $(dpkg-query -W -f '${Version}' rdmacm-utils 2>/dev/null)'s cmtime listens on TCP at its RDMA CM port, which softverbs' CM holds as a TCP port (README, compatibility notes)"

# Whether the device delivers UD datagrams (udaddy's and mckey's data).
ud_ok() { "$build/bin/test_cm_data" --ud-supported; }

count() { grep -c "$2" "$tmp/$1"; }

# tcp_bytes STRACE_FILE: the bytes a traced process wrote into kernel TCP
# sockets (write/writev/send/sendto/sendmsg on descriptors made by
# socket(AF_INET*, SOCK_STREAM) or accept), from `strace -f -e
# trace=%network,write,writev,close` output.  Our own rdma_cm's handshake
# uses a TCP connection too, but carries only a few hundred bytes.
tcp_bytes() {
	perl -ne '
		my ($pid, $rest) = /^(\d+)\s+(.*)$/ or next;
		if ($rest =~ /^<\.\.\. (\w+) resumed>.*= (-?\d+)/) {
			my $c = $pend{$pid}; delete $pend{$pid};
			$rest = "$1($c, ) = $2" if defined $c;
		} elsif ($rest =~ /^(\w+)\((\d+),.*<unfinished/) {
			$pend{$pid} = $2; next;
		} elsif ($rest =~ /^(socket|accept4?)\(.*<unfinished/) {
			$pend{$pid} = -1; next;
		}
		if ($rest =~ /^socket\(AF_INET6?, SOCK_STREAM.*= (\d+)$/) { $tcp{$1} = 1 }
		elsif ($rest =~ /^accept4?\(.*= (\d+)$/) { $tcp{$1} = 1 }
		elsif ($rest =~ /^close\((\d+)\)/) { delete $tcp{$1} }
		elsif ($rest =~ /^(write|writev|send|sendto|sendmsg)\((\d+),.*= (\d+)$/) {
			$n += $3 if $tcp{$2};
		}
		END { print $n + 0, "\n" }' "$1"
}

absent() { ! grep -q "$1" "$2"; }

# Debian's rping (rdma-core 44) lets its CM thread call rdma_get_cm_event
# again after main has destroyed the channel; that call fails (EBADF, with
# the kernel as here) and the thread exits the process with 255, now and
# then, after a complete run (fixed upstream: rdma-core PR #1622).  That
# exit, with that message, is rping's; anything else is a failure.
rping_exit_ok() { # rping_exit_ok NAME RC
	[ "$2" = 0 ] && return 0
	if [ "$2" = 255 ] &&
	   grep -q "^rdma_get_cm_event: Bad file descriptor" "$tmp/$1.err"; then
		echo "note: $1 hit rping's own exit race (rdma-core PR #1622)"
		return 0
	fi
	return 1
}

rping_pair() { # rping_pair SERVER_ADDR CLIENT_NS SERVER_NS COUNT ARGS...
	local addr=$1 cns=$2 sns=$3 cnt=$4 port=7174
	shift 4
	local sx=() cx=()
	[ -n "$sns" ] && sx=(ip netns exec "$sns")
	[ -n "$cns" ] && cx=(ip netns exec "$cns")
	[ -z "$sns" ] && port=$(free_port)
	start server "${sx[@]}" timeout 120 "$sv" run -- rping -s -a "$addr" -p "$port" -v -C "$cnt" "$@"
	wait_listen "$port" "$sns" || { show server; return 1; }
	"${cx[@]}" timeout 120 "$sv" run -- rping -c -a "$addr" -p "$port" -v -C "$cnt" "$@" >"$tmp/client" 2>"$tmp/client.err"
	local crc=$?
	finish server 30
	local src=$?
	show client 3
	show server 4
	check "rping client exit 0" rping_exit_ok client "$crc"
	check "rping server exit 0" rping_exit_ok server "$src"
	check "client printed $cnt pings" [ "$(count client '^ping data: rdma-ping-')" = "$cnt" ]
	check "server printed $cnt pings" [ "$(count server '^server ping data: rdma-ping-')" = "$cnt" ]
	check "the last ping is number $((cnt - 1))" grep -q "^ping data: rdma-ping-$((cnt - 1)): " "$tmp/client"
}

# netns_pair N: network namespaces $a and $b joined by a veth pair,
# addresses 10.N.0.1 and 10.N.0.2 (exit 77 where none can be made).
netns_pair() {
	. "$here/../net/netns.sh"
	sv_netns_usable || { echo "SKIP: no network namespaces here"; exit 77; }
	a="svcmA$$" b="svcmB$$"
	sv_netns_pair "$a" "$b" "10.$1.0.1/24" "10.$1.0.2/24" || { echo "netns setup failed"; exit 1; }
}

# udaddy's port is fixed (7174, also rping's default): run those cases in
# a network namespace of their own (as root) so nothing else holds it.
private_ports() {
	if [ -z "${SV_CM_PRIVATE_NET:-}" ] && [ "$(id -u)" = 0 ] &&
	   command -v unshare >/dev/null; then
		export SV_CM_PRIVATE_NET=1
		rm -rf "$tmp"
		exec unshare -n /bin/bash -c 'ip link set lo up && exec /bin/bash "$0" "$@"' \
			"$0" "$case_name"
	fi
	if ss -Hltn "sport = :7174" | grep -q .; then
		echo "SKIP: port 7174 is busy and no private network namespace"
		exit 77
	fi
}

case $case_name in
rping)
	need rping
	# -V: the client compares every ping it gets back byte for byte.
	rping_pair 127.0.0.1 "" "" 1000 -V
	;;
rping_size)
	need rping
	for size in 4096 65535; do
		rping_pair 127.0.0.1 "" "" 100 -V -S "$size"
		# "ping data: " + the size-1 characters of the ping + newline
		check "a $size-byte ping came back whole" \
			[ "$(grep '^ping data: rdma-ping-99: ' "$tmp/client" | wc -c)" = "$((size - 1 + 12))" ]
	done
	;;
rping_selfqp)
	need rping
	# -q: rping creates and moves its QPs itself (rdma_init_qp_attr,
	# rdma_establish).
	rping_pair 127.0.0.1 "" "" 200 -V -q
	;;
rping_netns)
	need rping
	netns_pair 233
	rping_pair 10.233.0.2 "$a" "$b" 500 -V
	rping_pair 10.233.0.2 "$a" "$b" 50 -V -S 65535
	;;
rping_netns_standard)
	# SOFTVERBS_ROCE=standard: rdma_cm connects with IB CM MADs on QP1
	# (UDP 4791), as with a RoCE peer.  The server's namespace drops
	# every TCP packet, so the default mode's CM could not connect.
	need rping
	need nft
	netns_pair 233
	ip netns exec "$b" nft -f - <<-EOF || { echo "nft failed"; exit 1; }
		table inet svcm {
			chain in { type filter hook input priority 0; meta l4proto tcp drop; }
		}
	EOF
	export SOFTVERBS_ROCE=standard
	rping_pair 10.233.0.2 "$a" "$b" 100 -V
	# The CM in processes that do not hold 4791: in each namespace an
	# idle pingpong server (no CM) holds it, and sends every MAD on to
	# the CM its service ID or comm ID names (engine/forward/gsifwd.c).  Two
	# rping pairs at once (REQs to two listeners, answers to two
	# clients' endpoints) and udaddy (SIDR_REQ and SIDR_REP).
	idle_holder() { # ns addr
		local gid
		gid=$(ip netns exec "$1" "$sv" run -- ibv_devinfo -v |
			sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$2, RoCE v2/\1/p" | head -n1)
		start "idle$3" ip netns exec "$1" timeout 120 "$sv" run -- ibv_rc_pingpong -g "$gid" -p 18599
		for _ in $(seq 200); do
			ip netns exec "$1" ss -Hlunp "sport = :4791" | grep -q "pid=" && return 0
			sleep 0.05
		done
		echo "no idle holder of 4791 in $1"
		return 1
	}
	idle_holder "$a" 10.233.0.1 a || exit 1
	idle_holder "$b" 10.233.0.2 b || exit 1
	holders=$(ip netns exec "$a" ss -Hlunp "sport = :4791"; ip netns exec "$b" ss -Hlunp "sport = :4791")
	echo "$holders" | cut -c1-150
	check "ibv_rc_pingpong holds 4791 in both namespaces" [ "$(echo "$holders" | grep -c '"ibv_rc_pingpong"')" = 2 ]
	for p in 7175 7176; do
		start "s$p" ip netns exec "$b" timeout 120 "$sv" run -- rping -s -a 10.233.0.2 -p $p -v -V -C 20
	done
	wait_listen 7175 "$b" && wait_listen 7176 "$b" || { show s7175; show s7176; exit 1; }
	for p in 7175 7176; do
		start "c$p" ip netns exec "$a" timeout 120 "$sv" run -- rping -c -a 10.233.0.2 -p $p -v -V -C 20
	done
	for p in 7175 7176; do
		finish "c$p" 100
		crc=$?
		finish "s$p" 30
		src=$?
		show "c$p" 2
		check "rping on port $p, neither side holding 4791: client exit 0" rping_exit_ok "c$p" "$crc"
		check "rping on port $p: server exit 0" rping_exit_ok "s$p" "$src"
		check "rping on port $p: 20 pings checked" [ "$(count "c$p" '^ping data: rdma-ping-')" = 20 ]
	done
	check "the server was told who holds 4791" grep -q "UDP 4791 is held by pid" "$tmp/s7175.err"
	start udserver ip netns exec "$b" timeout 60 "$sv" run -- udaddy
	wait_listen 7174 "$b" || { show udserver; exit 1; }
	ip netns exec "$a" timeout 60 "$sv" run -- udaddy -s 10.233.0.2 >"$tmp/udclient" 2>&1
	crc=$?
	finish udserver 20
	src=$?
	show udclient 4
	check "udaddy (SIDR), neither side holding 4791: client exit 0" [ "$crc" = 0 ]
	check "udaddy: server exit 0" [ "$src" = 0 ]
	check "udaddy: the client's datagrams went" grep -q "^data transfers complete" "$tmp/udclient"
	;;
rping_netns_standard_loss)
	# The IB CM under loss: in the server's namespace nftables drops every
	# other REQ, REP and RTU (MADs to QP1: the CM class, each attribute
	# counted on its own, offsets in bits from the UDP header), the first
	# of each among them, which the CM must send again (a REQ or REP when
	# no answer came in 2 s; an RTU when its REP comes again), and 10% of
	# the pings' RC packets, which the engine resends; and all TCP, so that
	# no other CM could connect.  DREQs and DREPs pass: rping's client
	# destroys its id right after rdma_disconnect, and a lost DREQ is then
	# resent by nobody (the kernel's CM too cancels it), leaving the server
	# waiting.  rping -V checks every ping's bytes.
	need rping
	need nft
	netns_pair 233
	cm="udp dport 4791 @th,104,24 1 @th,232,8 0x07 @th,352,16"
	ip netns exec "$b" nft -f - <<-EOF || { echo "nft failed"; exit 1; }
		table inet svcm {
			counter mads {}
			counter data {}
			chain lose {
				$cm 0x0010 numgen inc mod 2 0 counter name "mads" drop
				$cm 0x0013 numgen inc mod 2 0 counter name "mads" drop
				$cm 0x0014 numgen inc mod 2 0 counter name "mads" drop
				udp dport 4791 @th,104,24 != 1 numgen random mod 100 < 10 counter name "data" drop
			}
			chain in { type filter hook input priority 0;
				meta l4proto tcp drop; jump lose; }
			chain out { type filter hook output priority 0; jump lose; }
		}
	EOF
	export SOFTVERBS_ROCE=standard SOFTVERBS_LOG=3
	rping_pair 10.233.0.2 "$a" "$b" 20 -V
	resent=$(cat "$tmp/client.err" "$tmp/server.err" | grep -c 'MAD sent again')
	dropped=$(ip netns exec "$b" nft list counter inet svcm mads | grep -o 'packets [0-9]*' | cut -d' ' -f2)
	echo "CM MADs dropped: $dropped, sent again after 2 s: $resent"
	# The first of each kind at least (more when a resend meets its turn).
	check "REQs, REPs and RTUs were dropped" [ "$dropped" -ge 3 ]
	check "the REQ and the REP were sent again" [ "$resent" -ge 2 ]
	;;
rdma_server)
	need rdma_server
	port=$(free_port)
	start server timeout 60 "$sv" run -- rdma_server -p "$port"
	wait_listen "$port" || exit 1
	run 60 rdma_client -s 127.0.0.1 -p "$port" >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	check "rdma_client exit 0" [ "$crc" = 0 ]
	check "rdma_server exit 0" [ "$src" = 0 ]
	check "rdma_client reports success" grep -q "rdma_client: end 0" "$tmp/client"
	check "rdma_server reports success" grep -q "rdma_server: end 0" "$tmp/server"
	;;
rdma_xserver)
	need rdma_xserver
	# RC (the default).  XRC (-c x) is not run: the device has XRC now,
	# but our librdmacm does not create XRC QPs or SRQs yet
	# (rdma_create_qp_ex and rdma_create_srq_ex answer EOPNOTSUPP).
	port=$(free_port)
	start server timeout 60 "$sv" run -- rdma_xserver -p "$port"
	wait_listen "$port" || exit 1
	run 60 rdma_xclient -s 127.0.0.1 -p "$port" >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	check "rdma_xclient exit 0" [ "$crc" = 0 ]
	check "rdma_xserver exit 0" [ "$src" = 0 ]
	check "rdma_xclient reports success" grep -q "rdma_xclient: end 0" "$tmp/client"
	check "rdma_xserver reports success" grep -q "rdma_xserver: end 0" "$tmp/server"
	;;
ucmatose)
	need ucmatose
	for args in "" "-c 10 -C 20 -S 4000" "-c 4 -C 10 -m" "-P ib -c 2"; do
		port=$(free_port)
		# shellcheck disable=SC2086
		start server timeout 60 "$sv" run -- ucmatose -p "$port" $args
		wait_listen "$port" || exit 1
		# shellcheck disable=SC2086
		run 60 ucmatose -s 127.0.0.1 -p "$port" $args >"$tmp/client" 2>&1
		crc=$?
		finish server 20
		src=$?
		show client 6
		show server 4
		check "ucmatose $args: client exit 0" [ "$crc" = 0 ]
		check "ucmatose $args: server exit 0" [ "$src" = 0 ]
		check "ucmatose $args: data transfers complete" grep -q "data transfers complete" "$tmp/client"
		check "ucmatose $args: server completed" grep -q "return status 0" "$tmp/server"
	done
	;;
ucmatose_netns)
	need ucmatose
	netns_pair 234
	start server ip netns exec "$b" timeout 60 "$sv" run -- ucmatose -p 7471 -c 5 -C 20
	wait_listen 7471 "$b" || exit 1
	ip netns exec "$a" timeout 60 "$sv" run -- ucmatose -s 10.234.0.2 -p 7471 -c 5 -C 20 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client 6
	show server 4
	check "ucmatose across namespaces: client exit 0" [ "$crc" = 0 ]
	check "ucmatose across namespaces: server exit 0" [ "$src" = 0 ]
	;;
netns_tools)
	# The sync-endpoint tools, cmtime and udaddy's SIDR exchange between
	# two network namespaces (rping and ucmatose have their own cases).
	need rdma_server
	netns_pair 235
	inA() { ip netns exec "$a" timeout 60 "$sv" run -- "$@"; }
	start server ip netns exec "$b" timeout 60 "$sv" run -- rdma_server -p 7470
	wait_listen 7470 "$b" || exit 1
	inA rdma_client -s 10.235.0.2 -p 7470 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client 3
	check "rdma_client across namespaces" [ "$crc" = 0 ]
	check "rdma_server across namespaces" [ "$src" = 0 ]
	if cmtime_oob_clash; then
		echo "skipped: cmtime across namespaces: $cmtime_clash_why"
	elif cmtime_peers; then
		start server ip netns exec "$b" timeout 60 "$sv" run -- \
			cmtime -b 10.235.0.2 -C 10.235.0.2 -p 7471 -L -c 50
		wait_listen 7471 "$b" || exit 1
		inA cmtime -b 10.235.0.1 -C 10.235.0.2 -p 7471 -c 50 >"$tmp/client" 2>&1
		crc=$?
		finish server 20
		src=$?
		check "cmtime -L across namespaces: listener exit 0" [ "$src" = 0 ]
	else
		start server ip netns exec "$b" timeout 60 "$sv" run -- cmtime -p 7471
		wait_listen 7471 "$b" || exit 1
		inA cmtime -s 10.235.0.2 -p 7471 -c 50 >"$tmp/client" 2>&1
		crc=$?
		killgroup "$server_pid"
	fi
	if ! cmtime_oob_clash; then
		show client 9
		check "cmtime across namespaces" [ "$crc" = 0 ]
	fi
	start server ip netns exec "$b" timeout 60 "$sv" run -- udaddy -C 0
	wait_listen 7174 "$b" || exit 1
	inA udaddy -s 10.235.0.2 -C 0 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client 3
	check "udaddy -C 0 across namespaces: client" [ "$crc" = 0 ]
	check "udaddy -C 0 across namespaces: server" [ "$src" = 0 ]
	;;
cmtime)
	need cmtime
	cmtime_oob_clash && { echo "SKIP: $cmtime_clash_why"; exit 77; }
	port=$(free_port)
	if cmtime_peers; then
		start server timeout 120 "$sv" run -- \
			cmtime -b 127.0.0.1 -C 127.0.0.1 -p "$port" -L -c 200
		wait_listen "$port" || exit 1
		run 120 cmtime -b 127.0.0.1 -C 127.0.0.1 -p "$port" -c 200 >"$tmp/client" 2>&1
		crc=$?
		finish server 30
		src=$?
		show client 12
		show server 6
		check "cmtime client exit 0" [ "$crc" = 0 ]
		check "cmtime listener exit 0" [ "$src" = 0 ]
		# The table's rows: step, average and total per connection (us).
		check "cmtime connected 200 QPs" grep -q "^Connect (200) QPs test" "$tmp/client"
		check "cmtime timed connect" grep -Eq "^cm connect +[0-9]+ +[0-9]+" "$tmp/client"
		check "cmtime timed disconnect" grep -Eq "^disconnect +[0-9]+ +[0-9]+" "$tmp/client"
		check "the listener accepted 200" grep -q "^Accept (200) QPs test" "$tmp/server"
	else
		# The cmtime server serves until killed.
		start server timeout 120 "$sv" run -- cmtime -p "$port"
		wait_listen "$port" || exit 1
		run 120 cmtime -s 127.0.0.1 -p "$port" -c 200 >"$tmp/client" 2>&1
		crc=$?
		show client 12
		check "cmtime client exit 0" [ "$crc" = 0 ]
		check "cmtime connected" grep -Eq "^connect +:" "$tmp/client"
		check "cmtime disconnected" grep -Eq "^disconnect +:" "$tmp/client"
		check "the cmtime server is still serving" kill -0 "$server_pid"
	fi
	;;
qperf_cm | qperf_cm_netns)
	# qperf -cm1: one server child per test, which sends its CM port
	# before rdma_listen (qperf 0.4.11), four tests in one run; one host
	# or two namespaces.
	command -v qperf >/dev/null || { echo "SKIP: qperf not installed"; exit 77; }
	port=$(free_port)
	host=127.0.0.1 cli=() srv=()
	if [ "$case_name" = qperf_cm_netns ]; then
		netns_pair 239
		host=10.239.0.2 cli=(ip netns exec "$a") srv=(ip netns exec "$b")
	fi
	start server "${srv[@]}" timeout 120 "$sv" run -- qperf -lp "$port"
	wait_listen "$port" "${b:-}" || { show server; exit 1; }
	"${cli[@]}" timeout 120 "$sv" run -- qperf -lp "$port" -cm1 "$host" -t 1 \
		rc_bw rc_lat rc_rdma_read_bw rc_compare_swap_mr >"$tmp/client" 2>&1
	crc=$?
	show client 20
	check "qperf client exit 0" [ "$crc" = 0 ]
	for t in rc_bw rc_lat rc_rdma_read_bw rc_compare_swap_mr; do
		check "qperf $t ran" grep -q "^$t:" "$tmp/client"
	done
	check "two bandwidths" [ "$(grep -Ec '^ +bw += +[0-9.]+ [KMG]B/sec' "$tmp/client")" = 2 ]
	check "a latency" grep -Eq '^ +latency += +[0-9.]+ (ns|us|ms)' "$tmp/client"
	check "a message rate" grep -Eq '^ +msg_rate += +[0-9.]+ [KM]/sec' "$tmp/client"
	check "no CM error" absent "unexpected event" "$tmp/client"
	;;
udaddy_cm)
	need udaddy
	private_ports
	# The SIDR exchange alone (no datagrams): -C 0.  udaddy's port is
	# fixed (7174, RDMA_PS_UDP); -p is its port space.
	start server timeout 60 "$sv" run -- udaddy -C 0
	wait_listen 7174 || exit 1
	run 60 udaddy -s 127.0.0.1 -C 0 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	check "udaddy -C 0: client exit 0" [ "$crc" = 0 ]
	check "udaddy -C 0: server exit 0" [ "$src" = 0 ]
	;;
udaddy)
	need udaddy
	private_ports
	ud_ok || { echo "SKIP: the device does not deliver UD datagrams yet (udaddy's data phase)"; exit 77; }
	start server timeout 60 "$sv" run -- udaddy
	wait_listen 7174 || exit 1
	run 60 udaddy -s 127.0.0.1 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	check "udaddy: client exit 0" [ "$crc" = 0 ]
	check "udaddy: server exit 0" [ "$src" = 0 ]
	check "udaddy: data transfers complete" grep -q "data transfers complete" "$tmp/client"
	;;
mckey_join)
	need mckey
	# The sender's side: join (the CM's MULTICAST_JOIN), send, leave.
	run 60 mckey -m 239.9.9.9 -b 127.0.0.1 -s -C 5 >"$tmp/client" 2>&1
	crc=$?
	show client
	check "mckey sender exit 0" [ "$crc" = 0 ]
	check "mckey joined ::ffff:239.9.9.9" grep -q "joined dgid: ::ffff:239.9.9.9" "$tmp/client"
	;;
mckey)
	need mckey
	ud_ok || { echo "SKIP: the device does not deliver UD datagrams yet (mckey's receiver)"; exit 77; }
	start server timeout 60 "$sv" run -- mckey -m 239.9.9.8 -b 127.0.0.1 -C 10
	sleep 1 # joined before the sender sends
	run 60 mckey -m 239.9.9.8 -b 127.0.0.1 -s -C 10 >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	check "mckey sender exit 0" [ "$crc" = 0 ]
	check "mckey receiver exit 0 (all datagrams received)" [ "$src" = 0 ]
	;;
mckey_netns | mckey_netns_standard)
	# A multicast group across two network namespaces: the sender in A,
	# receivers in B (r1 waits for N datagrams, r2 for N+1) and one in A
	# beside the sender (the kernel's multicast loopback).  r1 and the
	# receiver in A must get all N (each consumed exactly its N receive
	# WQEs, SOFTVERBS_STATS' "rq head"; the sender's requester sent N,
	# "req ... idx"); r2 must still be waiting for its N+1th when the
	# others are done (nothing counted twice, no phantom completion); and
	# B's veth must have seen exactly N UDP datagrams to the group.
	# mckey_netns_standard: the same in SOFTVERBS_ROCE=standard, where
	# the datagrams go to UDP 4791 as a RoCE device sends them (else
	# 65535), and r1 and r2 are two processes of B of which only one holds
	# 4791 for unicast; each must still get its own copy.
	need mckey
	command -v nft >/dev/null || { echo "SKIP: nft not installed"; exit 77; }
	command -v stdbuf >/dev/null || { echo "SKIP: no stdbuf"; exit 77; }
	netns_pair 236
	ud_ok || { echo "SKIP: the device does not deliver UD datagrams"; exit 77; }
	group=239.9.9.7 n=25 dport=65535
	if [ "$case_name" = mckey_netns_standard ]; then
		export SOFTVERBS_ROCE=standard
		dport=4791
	fi
	ip netns exec "$b" nft -f - <<NFT || exit 1
table inet svmckey {
	chain pre {
		type filter hook prerouting priority 0; policy accept;
		iifname "sv0" ip daddr $group udp dport $dport counter
	}
}
NFT
	# Receivers: line-buffered, so "joined" shows before they exit.
	# SOFTVERBS_LOG=3: each QP's engine state at its destroy (req idx, rq head).
	mck=(env SOFTVERBS_STATS=1 SOFTVERBS_LOG=3 timeout 60 "$sv" run -- stdbuf -oL mckey -m "$group")
	joined() {
		for i in $(seq 1 200); do
			grep -q "^mckey: joined dgid" "$tmp/$1" && return 0
			sleep 0.05
		done
		show "$1"
		echo "FAILED: $1 did not join"
		exit 1
	}
	# r1 first: in standard mode it holds B's 4791, r2 is forwarded.
	start r1 ip netns exec "$b" "${mck[@]}" -b 10.236.0.2 -C "$n"
	joined r1
	start r2 ip netns exec "$b" "${mck[@]}" -b 10.236.0.2 -C $((n + 1))
	start ra ip netns exec "$a" "${mck[@]}" -b 10.236.0.1 -C "$n"
	joined r2
	joined ra
	# The sender waits 3 s after its own join, then sends N datagrams,
	# each in a send of its own: datagrams posted together would leave
	# in one UDP_SEGMENT send, which crosses the veth as one packet for
	# the counter (23 of 25 in an ASan run) while each receiver gets all.
	ip netns exec "$a" env SOFTVERBS_STATS=1 SOFTVERBS_LOG=3 SOFTVERBS_GSO=0 timeout 60 "$sv" run -- \
		mckey -m "$group" -b 10.236.0.1 -s -C "$n" >"$tmp/sender" 2>&1
	src=$?
	finish r1 20
	r1rc=$?
	finish ra 20
	rarc=$?
	sleep 1 # r2 had as long as r1 to see an extra datagram
	# Standard mode: r1, the holder, has left; r2 takes B's 4791 over
	# (within 200 ms) beside its own socket on the group's address.
	took=0
	if [ "$dport" = 4791 ]; then
		for i in $(seq 1 100); do
			ip netns exec "$b" ss -Hlunp "sport = :4791" >"$tmp/ss"
			grep -Eq '(\*|\[::\]):4791 .*"mckey"' "$tmp/ss" && took=1 && break
			sleep 0.05
		done
		cat "$tmp/ss"
	fi
	r2alive=0
	kill -0 "$r2_pid" 2>/dev/null && r2alive=1
	killgroup "$r2_pid"
	show sender 8
	show r1 8
	show ra 4
	show r2 4
	seen=$(ip netns exec "$b" nft list table inet svmckey |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p')
	sent=$(sed -n 's/^softverbs: destroying qp .* UD .*| req psn [0-9]* max [0-9]* idx \([0-9]*\) .*/\1/p' "$tmp/sender")
	got() { sed -n 's/^softverbs: destroying qp .* UD .* rq head \([0-9]*\) tail.*/\1/p' "$tmp/$1.err"; }
	echo "sender sent $sent, B's veth saw $seen, r1 consumed $(got r1), ra consumed $(got ra)"
	check "mckey sender exit 0" [ "$src" = 0 ]
	check "the sender's requester sent $n datagrams" [ "$sent" = "$n" ]
	check "B's veth saw exactly $n datagrams to $group port $dport" [ "$seen" = "$n" ]
	check "receiver r1 (B) exit 0" [ "$r1rc" = 0 ]
	check "receiver r1 (B) completed" grep -q "^data transfers complete" "$tmp/r1"
	check "receiver r1 (B) consumed $n receives" [ "$(got r1)" = "$n" ]
	check "receiver ra (A, loopback) exit 0" [ "$rarc" = 0 ]
	check "receiver ra (A) consumed $n receives" [ "$(got ra)" = "$n" ]
	check "receiver r2 (B, $((n + 1)) expected) is still waiting" [ "$r2alive" = 1 ]
	check "receiver r2 was polling, not complete" grep -q "^receiving data transfers" "$tmp/r2"
	check "receiver r2 did not complete" absent "^data transfers complete" "$tmp/r2"
	if [ "$dport" = 4791 ]; then
		check "r2 took B's UDP 4791 over from r1 beside its group socket" [ "$took" = 1 ]
	fi
	;;
rdma_xserver_netns)
	# rdma_xserver in B, rdma_xclient in A, RC (XRC: see rdma_xserver).
	# Both only print "end 0"; neither looks at its completion's status,
	# so the server's responder must also have accepted the one SEND
	# (SOFTVERBS_STATS' "resp ... msn 1", "rq head 1") and the client
	# must have received the positive ACK of message 1 (SOFTVERBS_TRACE:
	# AETH syndrome 000xxxxx is an ACK, IBA 9.7.5.1.1).
	need rdma_xserver
	netns_pair 237
	for round in 1 2 3; do
		start server ip netns exec "$b" env SOFTVERBS_STATS=1 SOFTVERBS_LOG=3 timeout 60 \
			"$sv" run -- rdma_xserver -p 7472
		wait_listen 7472 "$b" || { show server; exit 1; }
		ip netns exec "$a" env SOFTVERBS_TRACE=1 timeout 60 "$sv" run -- \
			rdma_xclient -s 10.237.0.2 -p 7472 >"$tmp/client" 2>&1
		crc=$?
		finish server 20
		src=$?
		show client 3
		show server 3
		check "round $round: rdma_xclient exit 0" [ "$crc" = 0 ]
		check "round $round: rdma_xserver exit 0" [ "$src" = 0 ]
		check "round $round: rdma_xclient reports success" grep -q "^rdma_xclient: end 0" "$tmp/client"
		check "round $round: rdma_xserver reports success" grep -q "^rdma_xserver: end 0" "$tmp/server"
		check "round $round: the server's responder took 1 message" \
			grep -Eq "^softverbs: destroying qp .* RC .*\| resp psn [0-9]+ msn 1 .* rq head 1 tail 1" "$tmp/server.err"
		check "round $round: the client got the ACK of message 1" \
			grep -Eq "^softverbs trace: .* rx RC_ACKNOWLEDGE .* syn 0x[01][0-9a-f] msn 1$" "$tmp/client"
	done
	;;
rstream)
	need rstream
	# The default run (latency then bandwidth, 64 B .. 1 MiB, two
	# connections), nonblocking as rstream's default, then blocking and
	# asynchronous (rpoll) runs with data verification.
	for args in "-T v" "-S 4096 -C 1000 -T v" "-S 100000 -C 200 -T b -T v" "-S 65536 -C 300 -T a -T v"; do
		port=$(free_port)
		# shellcheck disable=SC2086
		start server timeout 120 "$sv" run -- rstream -p "$port" $args
		wait_listen "$port" || { show server; exit 1; }
		# shellcheck disable=SC2086
		run 120 rstream -s 127.0.0.1 -p "$port" $args >"$tmp/client" 2>&1
		crc=$?
		finish server 30
		src=$?
		show client 10
		show server 3
		check "rstream $args: client exit 0" [ "$crc" = 0 ]
		check "rstream $args: server exit 0" [ "$src" = 0 ]
		if [ "$args" = "-T v" ]; then
			check "rstream: 8 results (64 B .. 1 MiB, latency and bandwidth)" \
				[ "$(grep -cE '^(64|4k|64k|1m)_(lat|bw) ' "$tmp/client")" = 8 ]
		else
			check "rstream $args: a result line" grep -q "^custom " "$tmp/client"
		fi
	done
	;;
riostream)
	need riostream
	# riowrite into the peer's riomap'ed buffer; -T v checks the bytes.
	for args in "-S 65536 -C 200 -T v" "-S 1000000 -C 20 -T b -T v"; do
		port=$(free_port)
		# shellcheck disable=SC2086
		start server timeout 120 "$sv" run -- riostream -p "$port" $args
		wait_listen "$port" || { show server; exit 1; }
		# shellcheck disable=SC2086
		run 120 riostream -s 127.0.0.1 -p "$port" $args >"$tmp/client" 2>&1
		crc=$?
		finish server 30
		src=$?
		show client 4
		show server 3
		check "riostream $args: client exit 0" [ "$crc" = 0 ]
		check "riostream $args: server exit 0" [ "$src" = 0 ]
		check "riostream $args: a result line" grep -q "^custom " "$tmp/client"
	done
	;;
rcopy)
	need rcopy
	port=$(free_port)
	head -c 5000000 /dev/urandom >"$tmp/src.bin"
	printf 'x' >"$tmp/one.bin"
	# The server copies every file it is sent, until killed.
	start server timeout 120 "$sv" run -- rcopy -p "$port"
	wait_listen "$port" || { show server; exit 1; }
	run 60 rcopy "$tmp/src.bin" "127.0.0.1:$tmp/dst.bin" -p "$port" >"$tmp/client" 2>&1
	crc=$?
	run 60 rcopy "$tmp/one.bin" "127.0.0.1:$tmp/one.out" -p "$port" >>"$tmp/client" 2>&1
	crc2=$?
	killgroup "$server_pid"
	show client
	show server
	check "rcopy client exit 0" [ "$crc" = 0 ]
	check "rcopy: the 5 MB copy is identical" cmp "$tmp/src.bin" "$tmp/dst.bin"
	check "rcopy of a 1-byte file: exit 0" [ "$crc2" = 0 ]
	check "rcopy: the 1-byte copy is identical" cmp "$tmp/one.bin" "$tmp/one.out"
	;;
udpong)
	need udpong
	command -v stdbuf >/dev/null || { echo "SKIP: no stdbuf"; exit 77; }
	ud_ok || { echo "SKIP: the device does not deliver UD datagrams"; exit 77; }
	port=$(free_port)
	# The server answers until killed; bind it where the client sends.
	start server timeout 120 "$sv" run -- stdbuf -oL udpong -p "$port" -b 127.0.0.1
	for _ in $(seq 1 100); do # its UDP port is bound (5 s)
		ss -Hlun "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	# Blocking (-T b) and rpoll (-T a) runs; the nonblocking default
	# only briefly: its server spins, and on a 2-core machine that starves
	# the progress threads and stretches each round trip towards
	# udpong's 1 ms resend timeout.  1024 and 1500 bytes exceed the UD
	# MTU and travel in the UDP socket.
	for args in "-S 64 -C 300 -T b -T e" "-S 1024 -C 300 -T b -T e" "-S 1500 -C 500 -T b" "-S 256 -C 300 -T a -T e" "-S 512 -C 50 -T e"; do
		# shellcheck disable=SC2086
		run 60 udpong -s 127.0.0.1 -p "$port" $args >"$tmp/client" 2>&1
		crc=$?
		show client 3
		check "udpong $args: client exit 0" [ "$crc" = 0 ]
		check "udpong $args: a result line" grep -q "^custom " "$tmp/client"
	done
	killgroup "$server_pid"
	show server 3
	check "udpong server saw the client log in" grep -q "client login from 127.0.0.1" "$tmp/server"
	;;
rspreload)
	# An ordinary TCP echo program under librspreload: its data must go
	# over rsockets (RDMA), not over a kernel TCP socket -- librspreload
	# falls back to TCP silently when an rsocket call fails, so the test
	# counts the bytes each process wrote into kernel TCP sockets.
	preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
	[ -e "$preload" ] || { echo "SKIP: no $preload (librdmacm1)"; exit 77; }
	command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
	echo_bin=$build/bin/rs_tcp_echo
	bytes=4000000
	port=$(free_port)
	trace=(strace -f -qq -e trace=%network,write,writev,close -e signal=none)
	# librspreload after whatever softverbs run preloads itself (a
	# sanitizer build's runtimes must stay first).
	with_preload=(sh -c 'export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$0"; exec "$@"' "$preload")
	start server timeout 60 "$sv" run -- "${with_preload[@]}" \
		"${trace[@]}" -o "$tmp/server.strace" "$echo_bin" server "$port"
	wait_listen "$port" || { show server; exit 1; }
	run 60 "${with_preload[@]}" "${trace[@]}" -o "$tmp/client.strace" \
		"$echo_bin" client 127.0.0.1 "$port" "$bytes" >"$tmp/client" 2>&1
	crc=$?
	finish server 20
	src=$?
	show client
	show server
	cb=$(tcp_bytes "$tmp/client.strace")
	sb=$(tcp_bytes "$tmp/server.strace")
	echo "bytes written into kernel TCP sockets: client $cb, server $sb (payload $bytes each way)"
	check "echo client exit 0 (all $bytes bytes came back intact)" [ "$crc" = 0 ]
	check "echo client printed its result" grep -q "^echo ok $bytes" "$tmp/client"
	check "echo server exit 0" [ "$src" = 0 ]
	check "the client's payload did not go over kernel TCP" [ "$cb" -lt 65536 ]
	check "the server's payload did not go over kernel TCP" [ "$sb" -lt 65536 ]
	check "strace saw the client's calls" [ -s "$tmp/client.strace" ]
	;;
rstream_netns)
	need rstream
	netns_pair 238
	for args in "-S 4096 -C 1000 -T v" "-S 1000000 -C 20 -T b -T v"; do
		# shellcheck disable=SC2086
		start server ip netns exec "$b" timeout 120 "$sv" run -- rstream -p 7473 $args
		wait_listen 7473 "$b" || { show server; exit 1; }
		# shellcheck disable=SC2086
		ip netns exec "$a" timeout 120 "$sv" run -- rstream -s 10.238.0.2 -p 7473 $args >"$tmp/client" 2>&1
		crc=$?
		finish server 30
		src=$?
		show client 3
		show server 3
		check "rstream $args across namespaces: client exit 0" [ "$crc" = 0 ]
		check "rstream $args across namespaces: server exit 0" [ "$src" = 0 ]
		check "rstream $args across namespaces: a result line" grep -q "^custom " "$tmp/client"
	done
	;;
examples)
	# Our own examples: the send/receive pair, then the read/write demo.
	start server "$build/bin/sendrecv-server"
	for i in $(seq 1 100); do
		port=$(sed -n 's/^listening on port \([0-9]*\)\.$/\1/p' "$tmp/server")
		[ -n "$port" ] && break
		sleep 0.05
	done
	timeout 30 "$build/bin/sendrecv-client" 127.0.0.1 "$port" >"$tmp/client" 2>&1
	crc=$?
	for i in $(seq 1 100); do
		grep -q "peer disconnected" "$tmp/server" && break
		sleep 0.05
	done
	show client
	show server
	check "sendrecv-client exit 0" [ "$crc" = 0 ]
	check "the client got the server's message" grep -q "^received message: message from passive/server side with pid" "$tmp/client"
	check "the server got the client's message" grep -q "^received message: message from active/client side with pid" "$tmp/server"
	check "demo-rw.sh (read and write)" "$here/../../scripts/demo-rw.sh" "$build"
	;;
*)
	echo "unknown case $case_name" >&2
	exit 2
	;;
esac
exit $fail
