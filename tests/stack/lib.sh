# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Shared helpers of the stack tests (sourced): unmodified middleware (UCX,
# Open MPI, MPICH, libfabric, pyverbs) through `softverbs run`, on this
# host or between two network namespaces joined by a veth pair.
#
#   SV_BUILD       the build tree (ctest sets it)
#   sv_place WHERE host | netns: sets SRV_NS/CLI_NS (command prefixes that
#                  enter a namespace, empty on the host), SRV_IP/CLI_IP,
#                  SRV_NSNAME/CLI_NSNAME; exits 77 where namespaces cannot
#                  be made (not root)
#   sv_need PKG:FILE...   fail naming the Debian package when FILE is absent
#   sv_has_uct_ib         whether UCX has its verbs transports
#   sv_need_uct_ib WHAT   skip when it has not
#   sv_need_uverbs [AS...]  skip when run cannot make AS the device file
#   sv_wait_port PORT PID NS...  until something listens on TCP PORT in NS
#   fail MSG / finish     count failures; print PASS or exit 1
#
# Every program is started under `timeout`; the namespaces and background
# processes are cleaned up on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SV_BUILD=${SV_BUILD:-$(cd "$here/../../build" && pwd)}
SV=$SV_BUILD/bin/softverbs
SV_NET=${SV_NET:-$here/../net}
[ -x "$SV" ] || { echo "FAIL: $SV is not built"; exit 1; }
cd /

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "PASS"
	exit 0
}

sv_need() {
	local need
	for need in "$@"; do
		if [ ! -e "${need#*:}" ]; then
			echo "FAIL: Debian package ${need%%:*} is not installed (scripts/deps.sh test installs it)"
			exit 1
		fi
	done
}

# sv_need_uct_ib WHAT: skip (77) when this system's UCX has no verbs
# transports (Debian sid's UCX 1.23~rc1 is built without libuct_ib), so
# that WHAT, which needs them, cannot reach softverbs0.
sv_has_uct_ib() {
	local lib
	for lib in /usr/lib/*/ucx/libuct_ib.so.0; do
		[ -e "$lib" ] && return 0
	done
	return 1
}
sv_need_uct_ib() {
	sv_has_uct_ib && return 0
	echo "SKIP: $1: this system's UCX ($(dpkg-query -W -f '${Version}' libucx0 2>/dev/null)) is built without its verbs transports (no ucx/libuct_ib.so.0)"
	exit 77
}

# sv_need_uverbs [AS...]: skip (77) where `softverbs run` cannot give
# AS (a prefix acting as a user; nothing: this process) the
# /dev/infiniband/uverbs_sv0 that UCX opens: an ordinary user needs a user
# namespace for it, which the kernel refuses inside a chroot.
sv_need_uverbs() {
	[ -e /dev/infiniband/uverbs_sv0 ] && return 0
	[ $# = 0 ] && [ "$(id -u)" = 0 ] && return 0
	"$@" unshare -U true 2>/dev/null && return 0
	echo "SKIP: the user gets no user namespace here (the kernel refuses one inside a chroot), so run makes no /dev/infiniband/uverbs_sv0 for UCX: $("$@" unshare -U true 2>&1 | head -n 1)"
	exit 77
}

TMP=$(mktemp -d /tmp/sv-stack.XXXXXX)
chmod 755 "$TMP"
SV_BG_PIDS=()
SV_PLACE=host
sv_cleanup() {
	local p
	for p in "${SV_BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	if [ "$SV_PLACE" = netns ]; then
		sv_netns_cleanup
	fi
	rm -rf "$TMP"
}
trap sv_cleanup EXIT

SRV_NS=() CLI_NS=() SRV_IP=127.0.0.1 CLI_IP=127.0.0.1
SRV_NSNAME= CLI_NSNAME=
sv_place() {
	SV_PLACE=$1
	case $1 in
	host) ;;
	netns)
		# shellcheck source=../net/netns.sh
		source "$SV_NET/netns.sh"
		sv_netns_usable || { echo "SKIP: no network namespaces here"; exit 77; }
		SRV_NSNAME="svst-$$-a" CLI_NSNAME="svst-$$-b"
		sv_netns_pair "$SRV_NSNAME" "$CLI_NSNAME" 10.233.0.1/24 10.233.0.2/24 ||
			{ echo "FAIL: veth setup failed"; exit 1; }
		SRV_NS=(ip netns exec "$SRV_NSNAME") CLI_NS=(ip netns exec "$CLI_NSNAME")
		SRV_IP=10.233.0.1 CLI_IP=10.233.0.2
		;;
	*) echo "unknown place $1"; exit 2 ;;
	esac
}

# shellcheck source=../net/port.sh
source "$SV_NET/port.sh"

sv_wait_port() { # port pid ns-command...
	local port=$1 pid=$2 _
	shift 2
	for _ in $(seq 300); do
		"$@" ss -Hltn "sport = :$port" | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# sv_gid_index IP NS-COMMAND...: the GID index of IP as an unmodified
# ibv_devinfo sees it through softverbs in that namespace.
sv_gid_index() {
	local ip=$1
	shift
	"$@" "$SV" run -- ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$ip, RoCE v2/\1/p" | head -n1
}

# The explicit form a user may still write between namespaces (the "flags"
# tests): UCX_IB_GID_INDEX for UCX and FI_VERBS_GID_IDX for libfabric's
# verbs provider (its UD endpoints), SRV_GID/CLI_GID, the index of each
# side's veth address, as ibv_*_pingpong get -g there
# (tests/integration/xpingpong.sh).  Without them UCX takes the first
# RoCE v2 IPv4 GID and libfabric GID 0, both the veth address: the table
# puts loopback's GIDs last.
SRV_GID= CLI_GID=
sv_place_gids() {
	[ "$SV_PLACE" = netns ] || return 0
	SRV_GID=$(sv_gid_index "$SRV_IP" "${SRV_NS[@]}")
	CLI_GID=$(sv_gid_index "$CLI_IP" "${CLI_NS[@]}")
	[ -n "$SRV_GID" ] && [ -n "$CLI_GID" ] ||
		{ echo "FAIL: no GID for $SRV_IP / $CLI_IP"; exit 1; }
	SRV_NS+=(env "UCX_IB_GID_INDEX=$SRV_GID" "FI_VERBS_GID_IDX=$SRV_GID")
	CLI_NS+=(env "UCX_IB_GID_INDEX=$CLI_GID" "FI_VERBS_GID_IDX=$CLI_GID")
	echo "GID index $SRV_GID ($SRV_IP), $CLI_GID ($CLI_IP)"
}

# sv_stats_carried FILE PATH MIN [TYPE]: the SOFTVERBS_STATS=1 output in
# FILE shows softverbs QPs carrying the traffic: TYPE (RC) QPs on PATH
# (shm or udp; a UD QP is always on udp) that were posted at least MIN
# send WRs completed in all (the "sent N WRs" of each QP's line, printed when it
# is destroyed or its process exits; the per-context counters come only
# with ibv_close_device, which libfabric skips).  Fails otherwise.
sv_stats_carried() {
	local file=$1 path=$2 min=$3 type=${4:-RC} out qps n
	[ "$type" = UD ] && path=udp
	out=$(awk -v t="$type" -v p="$path" '
		$0 ~ "qp 0x[0-9a-f]+ " t " [A-Z]+: path=" p "[ ,]" &&
		$0 !~ /[(]not connected[)]/ &&
		match($0, /sent [0-9]+ WRs/) {
			q++
			split(substr($0, RSTART, RLENGTH), f, " ")
			n += f[2]
		} END { print q + 0, n + 0 }' "$file")
	read -r qps n <<<"$out"
	echo "softverbs: $qps $type QP(s) on path=$path, $n send WRs in all"
	[ "$qps" -ge 1 ] || fail "no $type QP on path=$path in the SOFTVERBS_STATS=1 output"
	[ "$n" -ge "$min" ] || fail "$n send WRs: softverbs QPs did not carry the traffic (expected >= $min)"
}

# show NAME FILE: a program's output, indented, for the log.
show() {
	echo "--- $1 ---"
	sed 's/^/    /' "$2"
}
