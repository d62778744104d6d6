#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A distribution's own, unmodified programs through this tree's build: run
# inside a Debian chroot (trixie: rdma-core 56, sid: rdma-core 65) with
# `softverbs run`, the libraries being the ones built here (on the host).
#
#   chroot_run.sh ROOT SRCDIR BUILDDIR
#
# SRCDIR (holding BUILDDIR) is bind-mounted at its own path inside ROOT, so
# that the build's paths resolve there.  Everything runs in a mount
# namespace of its own (unshare; as a user, in a user namespace too), so
# the shared chroot and the host's mounts are left untouched.
#
# Checks: ibv_devinfo -v (softverbs0, a valid active_speed: the whole
# ibv_port_attr of the caller's headers zeroed), an ibv_rc_pingpong pair
# checking the bytes, every perftest tool loads and each ib_* tool
# completes 200 iterations, an rping pair (100 pings checked), cmtime
# (rdma-core 59+), fi_info -p verbs lists softverbs0 and fi_pingpong
# (msg, rdm) completes, ucx_info -d lists rc_verbs and ud_verbs on
# softverbs0:1 and ucx_perftest tag_lat completes, pyverbs' mlx5 and efa
# modules import and refuse softverbs0.  A program the chroot lacks is
# skipped and said so.
# Exit status: 0 pass, 1 fail, 77 (ctest SKIP) without a chroot (or, as a
# user, without user namespaces).
set -uo pipefail

root=${1%/}
src=$2
build=$3

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$root/usr/bin/ibv_devinfo" ] ||
	skip "no chroot with ibverbs-utils at $root (CI makes them; SV_CHROOT_TRIXIE / SV_CHROOT_SID name them)"
command -v unshare >/dev/null || skip "no unshare(1)"
[ -z "${SV_ABI_SANITIZED:-}" ] ||
	skip "a sanitizer build: its runtime is the host's compiler's, not the chroot's"
# As root, a mount namespace; as a user, a user namespace mapping the user
# to root in it, where chroot and the mounts are allowed.
userns=()
if [ "$(id -u)" != 0 ]; then
	userns=(-r)
	unshare -r -m true 2>/dev/null ||
		skip "as a user chroot needs a user namespace, which this kernel refuses"
	# The mount point cannot be made by a user in root's chroot.
	[ -d "$root$src" ] ||
		skip "as a user: no $root$src to mount the tree on (a run as root makes it)"
fi
case $build/ in
"$src"/*) ;;
*) skip "the build $build is not under $src, which is what is mounted in the chroot" ;;
esac
sv=$build/bin/softverbs
[ -x "$sv" ] || { echo "FAIL: $sv not built"; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
has() { [ -x "$root/usr/bin/$1" ]; }

# in_chroot CMD...: CMD through softverbs in ROOT.
in_chroot() {
	unshare ${userns:+"${userns[@]}"} -m --propagation private sh -c '
		root=$1 src=$2; shift 2
		mkdir -p "$root$src" && mount --bind "$src" "$root$src" &&
			exec chroot "$root" "$@"' \
		sh "$root" "$src" "$sv" run -- "$@"
}

# A TCP port free on this host (the chroot shares the network).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
	echo 18515
}

# wait_listen PORT PID: until PORT listens (or PID exits: 1).
wait_listen() {
	for _ in $(seq 400); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# pair NAME SERVER-CMD -- CLIENT-CMD: both must exit 0; the client's
# output is left in $tmp/NAME.client.
pair() {
	local name=$1 port=$2
	shift 2
	local srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout -k 5 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot \"\$@\"" \
		_ "${srv[@]}" >"$tmp/$name.server" 2>&1 &
	local s=$!
	pids+=("$s")
	if ! wait_listen "$port" "$s"; then
		fail "$name: the server did not listen on $port"
		sed 's/^/    /' "$tmp/$name.server"
		return 1
	fi
	local crc=0 src_rc=0
	timeout -k 5 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot \"\$@\"" \
		_ "${cli[@]}" >"$tmp/$name.client" 2>&1 || crc=$?
	wait "$s" || src_rc=$?
	# rping's own exit race (rdma-core PR #1622): a side may stop with
	# 255 after its work, its CM event channel destroyed under a thread.
	local side
	for side in crc src_rc; do
		[ "${!side}" = 255 ] && [ "$name" = rping ] &&
			grep -q "^rdma_get_cm_event: Bad file descriptor" \
				"$tmp/$name.$([ $side = crc ] && echo client || echo server)" &&
			printf -v "$side" 0
	done
	if [ $crc != 0 ] || [ $src_rc != 0 ]; then
		fail "$name: server exited $src_rc, client $crc"
		sed 's/^/    server: /' "$tmp/$name.server"
		sed 's/^/    client: /' "$tmp/$name.client"
		return 1
	fi
	echo "ok: $name"
}

echo "chroot $root: $(dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Package} ${Version}' libibverbs1 2>/dev/null)"

# ibv_devinfo -v: the port's attributes as the chroot's headers lay them out.
out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot ibv_devinfo -v" 2>&1)
rc=$?
speed=$(grep -m1 'active_speed:' <<<"$out")
if [ $rc != 0 ] || ! grep -q 'hca_id:.*softverbs0' <<<"$out"; then
	fail "ibv_devinfo -v exited $rc or named no softverbs0"; echo "$out" | sed 's/^/    /'
elif [ -z "$speed" ] || echo "$speed" | grep -q 'invalid'; then
	fail "ibv_devinfo -v: bad active_speed: '$speed'"
else
	echo "ok: ibv_devinfo -v, $(echo $speed)"
fi

p=$(free_port)
pair ibv_rc_pingpong "$p" ibv_rc_pingpong -g 0 -c -n 200 -p "$p" -- \
	ibv_rc_pingpong -g 0 -c -n 200 -p "$p" localhost &&
	grep -q '200 iters' "$tmp/ibv_rc_pingpong.client" || fail "ibv_rc_pingpong: no '200 iters' line"

tools=$(cd "$root/usr/bin" && ls ib_*_bw ib_*_lat raw_ethernet_* 2>/dev/null)
if [ -z "$tools" ]; then
	echo "skipped: perftest (not installed in the chroot)"
else
	bad=0
	for t in $tools; do
		out=$(timeout 30 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot $t --help" 2>&1)
		if grep -q 'error while loading\|not found (required by' <<<"$out"; then
			fail "$t does not load:"; echo "$out" | grep 'error while loading\|not found' | sed 's/^/    /'
			bad=1
		elif ! grep -q 'Usage:' <<<"$out"; then
			fail "$t --help printed no usage"; echo "$out" | tail -3 | sed 's/^/    /'
			bad=1
		fi
	done
	[ $bad = 0 ] && echo "ok: $(echo $tools | wc -w) perftest tools load: $(echo $tools)"
	# Each RDMA tool a short run (raw_ethernet_* need raw packet QPs,
	# which softverbs does not offer: README).
	for t in $(echo "$tools" | grep '^ib_'); do
		p=$(free_port)
		pair "$t" "$p" "$t" -d softverbs0 -x 0 -n 200 -p "$p" -- \
			"$t" -d softverbs0 -x 0 -n 200 -p "$p" localhost &&
			{ grep -Eq '^ +[0-9]+ +200 ' "$tmp/$t.client" || fail "$t: no result line for 200 iterations"; }
	done
fi

# rping: 100 pings, each compared byte for byte by the client (-V).
if has rping; then
	p=$(free_port)
	pair rping "$p" rping -s -a 127.0.0.1 -p "$p" -v -V -C 100 -- \
		rping -c -a 127.0.0.1 -p "$p" -v -V -C 100 &&
		{ [ "$(grep -c '^ping data: rdma-ping-' "$tmp/rping.client")" = 100 ] ||
			fail "rping: the client printed $(grep -c '^ping data: rdma-ping-' "$tmp/rping.client") pings, not 100"; }
else
	echo "skipped: rping (rdmacm-utils not installed in the chroot)"
fi

# cmtime: rdma-core 59's two peers (-b -C -L); 52 to 58's server listens
# on TCP at its RDMA CM port, which softverbs' CM holds (README).
if has cmtime; then
	usage=$(chroot "$root" cmtime -h 2>&1)
	if [[ $usage == *controller_address* ]]; then
		p=$(free_port)
		pair cmtime "$p" cmtime -b 127.0.0.1 -C 127.0.0.1 -p "$p" -L -c 100 -- \
			cmtime -b 127.0.0.1 -C 127.0.0.1 -p "$p" -c 100 &&
			{ grep -Eq '^cm connect +[0-9]+ +[0-9]+' "$tmp/cmtime.client" ||
				fail "cmtime: no 'cm connect' row"; }
	else
		echo "skipped: cmtime (rdma-core 52 to 58's listens on TCP at its RDMA CM port: README)"
	fi
fi

# libfabric's verbs provider: fi_pingpong over an RDM endpoint (verbs with
# ofi_rxm) and a MSG one (verbs RC).
if has fi_pingpong; then
	for ep in msg rdm; do
		p=$(free_port)
		prov=verbs
		[ $ep = rdm ] && prov="verbs;ofi_rxm"
		pair "fi_pingpong.$ep" "$p" fi_pingpong -p "$prov" -e "$ep" -c -B "$p" -I 100 -- \
			fi_pingpong -p "$prov" -e "$ep" -c -P "$p" -I 100 127.0.0.1 &&
			{ grep -Eq '^ *[0-9]+[km]? +100 ' "$tmp/fi_pingpong.$ep.client" ||
				fail "fi_pingpong -e $ep: no result row for 100 iterations"; }
	done
fi

if has fi_info; then
	out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot fi_info -p verbs" 2>&1)
	grep -q 'domain: softverbs0' <<<"$out" && echo "ok: fi_info -p verbs lists softverbs0" ||
		{ fail "fi_info -p verbs lists no softverbs0"; echo "$out" | tail -5 | sed 's/^/    /'; }
else
	echo "skipped: fi_info (libfabric-bin not installed in the chroot)"
fi

if ! has ucx_info; then
	echo "skipped: ucx_info (ucx-utils not installed in the chroot)"
elif ! ls "$root"/usr/lib/*/ucx/libuct_ib.so.0 >/dev/null 2>&1; then
	# Debian sid's UCX 1.23~rc1 is built without its IB transports:
	# run then sets no UCX or Open MPI variable (pml=ucx would stop
	# mpirun) and says how Open MPI reaches softverbs0 instead.
	echo "skipped: ucx_info (the chroot's UCX has no verbs transport, libuct_ib)"
	if has mpirun; then
		out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot mpirun --version" 2>&1)
		grep -q "UCX has no verbs transports (no libuct_ib): UCX_TLS, UCX_NET_DEVICES, OMPI_MCA_pml and OMPI_MCA_osc left as they are" <<<"$out" ||
			{ fail "run named no missing libuct_ib for mpirun"; echo "$out" | tail -3 | sed 's/^/    /'; }
		out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot env" 2>&1)
		grep -q '^OMPI_MCA_pml=' <<<"$out" && fail "run set OMPI_MCA_pml where UCX has no verbs"
	fi
else
	out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot ucx_info -d" 2>&1)
	for tl in rc_verbs ud_verbs; do
		echo "$out" | awk -v tl="$tl" '/Transport:/ { t = $NF } /Device:/ && t == tl { print $NF }' |
			grep -qx 'softverbs0:1' && echo "ok: ucx_info -d: $tl on softverbs0:1" ||
			fail "ucx_info -d lists no $tl on softverbs0:1"
	done
	# ucx_perftest over rc_verbs (run sets UCX_TLS); -P 0 where it is
	# built with MPI, which otherwise takes a run without a terminal for
	# an MPI launch.
	nompi=
	usage=$(chroot "$root" ucx_perftest -h 2>&1)
	[[ $usage == *'-P <0|1>'* ]] && nompi="-P 0"
	p=$(free_port)
	# shellcheck disable=SC2086
	pair ucx_perftest "$p" ucx_perftest -p "$p" $nompi -- \
		ucx_perftest 127.0.0.1 -p "$p" $nompi -t tag_lat -n 1000 &&
		{ grep -Eq '^Final: +1000 ' "$tmp/ucx_perftest.client" ||
			fail "ucx_perftest: no 'Final: 1000' line"; }
fi

if [ -d "$root/usr/lib/python3/dist-packages/pyverbs/providers/mlx5" ]; then
	out=$(timeout 60 bash -c "$(declare -f in_chroot); userns=(${userns[*]}); root='$root' src='$src' sv='$sv' in_chroot python3 -c '
import pyverbs.providers.mlx5.mlx5dv as m, pyverbs.providers.efa.efadv as e
try:
    m.Mlx5Context(m.Mlx5DVContextAttr(), name=\"softverbs0\")
    print(\"mlx5: opened?\")
except Exception as x:
    print(\"mlx5:\", x)
try:
    e.EfaContext(name=\"softverbs0\").query_efa_device()
    print(\"efa: queried?\")
except Exception as x:
    print(\"efa:\", x)
'" 2>&1)
	if grep -q '^mlx5: This is not an MLX5 device' <<<"$out" &&
		grep -q '^efa: .*Errno: 95' <<<"$out"; then
		echo "ok: pyverbs mlx5dv and efadv import and refuse softverbs0"
	else
		fail "pyverbs provider modules:"; echo "$out" | tail -5 | sed 's/^/    /'
	fi
else
	echo "skipped: pyverbs provider modules (python3-pyverbs not installed in the chroot)"
fi

[ $status = 0 ] && echo "PASS"
exit $status
