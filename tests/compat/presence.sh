#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The kernel-shaped presence of softverbs0 (issue #15): through
# `softverbs run` a program finds /dev/infiniband/<dev_name> and rdma_cm,
# /sys/class/infiniband/softverbs0 and /sys/class/infiniband_verbs, with
# the facts our library reports; outside, nothing of it exists.
#   presence.sh SV view      as the caller (root here): files, contents
#                            against `softverbs devices`, /dev and
#                            /sys/class otherwise unchanged, the paths
#                            absent outside while a run is alive,
#                            --no-sysfs and SOFTVERBS_SYSFS=0
#   presence.sh SV user      the same as an ordinary user (a useradd user,
#                            tests/users.sh, when root): uid, gid unchanged
#                            (`id -u` prints the caller's), no capabilities
#                            inside; two runs share one user namespace; a
#                            nested run adds nothing; UCX lists rc_verbs
#   presence.sh SV shm       two runs of one ordinary user's ibv_rc_pingpong
#                            take the shared-memory path (as
#                            integration.fastpath.shm checks: path=shm), and
#                            `softverbs stats PID` shows the server's QP
#   presence.sh SV fallback  namespaces refused for real (root only): in a
#                            user namespace with max_user_namespaces 0 and
#                            no capabilities left, run prints one line
#                            and runs the command anyway
#   presence.sh SV setup     setup, setup again, run under it, --undo,
#                            --undo again, inside `unshare -m` (root only)
#                            so the machine itself is never touched
#   presence.sh SV ucx       UCX's ucx_info -d through run (ucx-utils)
#   presence.sh SV chroot    run inside a chroot whose / is a plain
#                            directory, not a mount point (root only): the
#                            view as outside, nothing of it in the
#                            chroot's /dev or /sys/class afterwards
SV_TESTS_VIEW=1
. "$(dirname "$0")/lib.sh"
mode=${1:-view}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../users.sh"
dump=$here/presence_dump.sh
tmp=$(mktemp -d /tmp/sv-presence.XXXXXX)
chmod 755 "$tmp"
mkdir -m 1777 "$tmp/pub" # where a test user's process may write
bg=
trap 'rm -f "$out" "$err"; [ -n "$bg" ] && kill $bg 2>/dev/null; rm -rf "$tmp"' EXIT

skip() {
	echo "SKIP: $*"
	exit 77
}

# Whether UCX has its verbs transports (Debian sid's is built without).
ucx_has_verbs() { compgen -G '/usr/lib/*/ucx/libuct_ib.so*' >/dev/null; }

# need_userns WHO [AS...]: skip unless AS (a prefix acting as a user, or
# nothing: this process) may make a user namespace, which the modes of an
# ordinary user rest on.  The kernel refuses one to any process in a
# chroot (and everywhere where they are disabled).
need_userns() {
	local who=$1
	shift
	"$@" unshare -U true 2>/dev/null ||
		skip "the kernel makes $who no user namespace here (it refuses one inside a chroot, or they are disabled): $("$@" unshare -U true 2>&1 | head -n 1)"
}

# The library's own answers, from `softverbs devices` outside any run.
timeout 30 "$SV" devices >"$tmp/devices" || { echo "FAIL: softverbs devices"; exit 1; }
read -r devname ibdev < <(awk '$1 == "dev_name" { sub(":", "", $2); n = split($4, p, "/"); print $2, p[n] }' "$tmp/devices")
guid=$(awk -F'node_guid ' 'NR == 1 { split($2, a, ","); print a[1] }' "$tmp/devices")
[ -n "$devname" ] && [ -n "$ibdev" ] && [ -n "$guid" ] ||
	{ echo "FAIL: no dev_name, name or node_guid in:"; cat "$tmp/devices"; exit 1; }

# The test must start from a machine without the files (not set up).
if [ -e /dev/infiniband ] || [ -e /sys/class/infiniband ]; then
	skip "/dev/infiniband or /sys/class/infiniband exist on this machine"
fi

has() { # has REGEX [WHAT]: a line of $out matches
	grep -Eq -- "$1" "$out" || { fail "no /$1/ inside${2:+ ($2)}"; sed 's/^/    | /' "$out" | head -60; }
}

# check_view: $out holds presence_dump.sh's lines from inside a run.
hasline() { # hasline LINE [WHAT]: a line of $out is exactly LINE
	grep -Fxq -- "$1" "$out" || { fail "no line '$1' inside${2:+ ($2)}"; sed 's/^/    | /' "$out" | head -60; }
}

check_view() {
	local want_uid=$1 want_gid=$2
	has "^chr /dev/infiniband/$devname\$" "a character device named by dev_name"
	has "^rw /dev/infiniband/$devname\$" "readable and writable (UCX's access test)"
	has '^chr rdma_cm$'
	has "^attr node_guid $guid\$" "node_guid as softverbs devices says"
	has "^attr sys_image_guid [0-9a-f]{4}(:[0-9a-f]{4}){3}\$"
	has '^attr node_type 1: CA$'
	has '^attr hca_type softverbs$' "ibstat's CA type"
	has "^attr fw_ver $(sed -n '1s/.*, fw \([^,]*\),.*/\1/p' "$tmp/devices")\$"
	grep -q '^  port 1: PORT_ACTIVE' "$tmp/devices" && has '^attr ports/1/state 4: ACTIVE$'
	has '^attr ports/1/phys_state 5: LinkUp$'
	has '^attr ports/1/link_layer Ethernet$'
	has '^attr ports/1/lid 0x0$'
	has "^ibdev $ibdev\$"
	# The node in /dev and infiniband_verbs/<dev>/dev agree.
	has '^devnum ([0-9]+:[0-9]+) \1$'
	has '^netlink lo ([0-9]+) \1$' "device/net/lo is /sys/class/net/lo"
	has "^id $want_uid $want_gid\$" "uid and gid unchanged"
	# Every GID of `softverbs devices`, in sysfs form, with type and netdev.
	local n=0 idx addr ifn full
	while read -r idx addr ifn; do
		# Eight groups of four hex digits, as the kernel's gids/N (Python
		# 3.13's .exploded writes an IPv4-mapped address's tail dotted).
		full=$(python3 -c 'import ipaddress, sys; h = "%032x" % int(ipaddress.IPv6Address(sys.argv[1])); print(":".join(h[i:i + 4] for i in range(0, 32, 4)))' "$addr")
		has "^gid $idx $full RoCE v2 $ifn\$" "GID $idx $addr"
		n=$((n + 1))
	done < <(sed -n 's/^    GID\[ *\([0-9]*\)\]  \([^ ]*\) *RoCE v2 *\([^ ]*\)$/\1 \2 \3/p' "$tmp/devices")
	[ $n -gt 0 ] || fail "no GID in softverbs devices"
	# The rest of /dev and /sys/class as outside.
	ls /sys/class | sed 's/^/class /' >"$tmp/class.out"
	printf 'class infiniband\nclass infiniband_verbs\n' >>"$tmp/class.out"
	grep '^class ' "$out" | sort >"$tmp/class.in"
	sort "$tmp/class.out" | diff - "$tmp/class.in" >/dev/null ||
		fail "/sys/class inside is not the outside's plus infiniband, infiniband_verbs: $(sort "$tmp/class.out" | diff - "$tmp/class.in" | tr '\n' ' ')"
	{ ls -a /dev | sed 's/^/dev /'; echo "dev infiniband"; } | sort >"$tmp/dev.out"
	grep '^dev ' "$out" | sort >"$tmp/dev.in"
	diff "$tmp/dev.out" "$tmp/dev.in" >/dev/null ||
		fail "/dev inside is not the outside's plus infiniband: $(diff "$tmp/dev.out" "$tmp/dev.in" | tr '\n' ' ')"
	has '^net lo$' "/sys/class/net lists lo"
	[ "$(grep -c '^net ' "$out")" = "$(ls /sys/class/net | wc -l)" ] || fail "/sys/class/net inside differs"
	has "^shm $(stat -c %d:%i /dev/shm)\$" "/dev/shm is the same filesystem"
}

val_of() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }

case $mode in
view)
	[ "$(id -u)" = 0 ] || need_userns "this user"
	run_ok 30 "$SV" run -- "$dump" "$devname" "$ibdev"
	check_view "$(id -u)" "$(id -g)"
	# Outside, while a run is alive: nothing.
	timeout 30 "$SV" run -- sh -c 'test -c /dev/infiniband/'"$devname"' && echo up >'"$tmp/up"' && sleep 20' &
	bg=$!
	for _ in $(seq 100); do [ -s "$tmp/up" ] && break; sleep 0.05; done
	[ -s "$tmp/up" ] || fail "the background run never saw its device"
	[ -e /dev/infiniband ] && fail "/dev/infiniband exists outside the run"
	[ -e /sys/class/infiniband ] && fail "/sys/class/infiniband exists outside the run"
	[ -e /sys/class/infiniband_verbs ] && fail "/sys/class/infiniband_verbs exists outside the run"
	grep -q " - tmpfs softverbs " /proc/self/mountinfo && fail "our tmpfs is in the outside's mountinfo"
	kill $bg 2>/dev/null || true
	wait $bg 2>/dev/null || true
	bg=
	# Turned off: no namespace, the library path still set.
	for off in "--no-sysfs" "SOFTVERBS_SYSFS=0"; do
		if [ "$off" = --no-sysfs ]; then
			run_ok 30 "$SV" run --no-sysfs -- sh -c 'readlink /proc/self/ns/mnt; test -e /dev/infiniband && echo dev; echo "$LD_LIBRARY_PATH"'
		else
			run_ok 30 env SOFTVERBS_SYSFS=0 "$SV" run -- sh -c 'readlink /proc/self/ns/mnt; test -e /dev/infiniband && echo dev; echo "$LD_LIBRARY_PATH"'
		fi
		hasline "$(readlink /proc/self/ns/mnt)" "$off: the caller's mount namespace"
		grep -q '^dev$' "$out" && fail "$off: /dev/infiniband exists"
		has '/lib$' "$off: LD_LIBRARY_PATH"
	done
	;;
user)
	as=()
	if [ "$(id -u)" = 0 ]; then
		sv_users_ready || skip "$SV_USERS_WHY"
		sv_as 1
		as=("${SV_AS[@]}")
	fi
	need_userns "an ordinary user" ${as[@]+"${as[@]}"}
	uid=$("${as[@]}" id -u) gid=$("${as[@]}" id -g)
	[ "$uid" != 0 ] || fail "not an ordinary user"
	run_ok 30 "${as[@]}" "$SV" run -- id -u
	hasline "$uid" "id -u inside prints the caller's uid"
	run_ok 30 "${as[@]}" "$SV" run -- "$dump" "$devname" "$ibdev"
	check_view "$uid" "$gid"
	has '^capeff 0000000000000000$' "no capabilities after exec"
	grep -Fxq "userns $(readlink /proc/self/ns/user)" "$out" && fail "no user namespace of its own"
	first=$(val_of userns)
	# A second run while the first lives: the same user namespace (the
	# fast path needs it), its own mount namespace.
	"${as[@]}" timeout 30 "$SV" run -- sh -c 'readlink /proc/self/ns/user; sleep 20' >"$tmp/ns1" &
	bg=$!
	for _ in $(seq 100); do [ -s "$tmp/ns1" ] && break; sleep 0.05; done
	run_ok 30 "${as[@]}" "$SV" run -- "$dump" "$devname" "$ibdev"
	hasline "userns $(cat "$tmp/ns1")" "the second run joins the first's user namespace"
	m1=$(val_of mntns)
	# Nested: the view is there already; nothing new, no message.
	run_ok 30 "${as[@]}" "$SV" run -- "$SV" run -- "$dump" "$devname" "$ibdev"
	check_view "$uid" "$gid"
	kill $bg 2>/dev/null || true
	wait $bg 2>/dev/null || true
	bg=
	echo "user namespaces: first run $first, with a live peer $(cat "$tmp/ns1")"
	if command -v ucx_info >/dev/null && ucx_has_verbs; then
		# ucx_* commands get run's one line naming UCX's variables.
		timeout -k 5 60 "${as[@]}" "$SV" run -- ucx_info -d >"$out" 2>"$err" ||
			fail "ucx_info -d as the user exited $?"
		grep -vq '^softverbs: set UCX_TLS=' "$err" &&
			fail "ucx_info -d as the user: $(grep -v '^softverbs: set UCX_TLS=' "$err" | head -3)"
		has "Memory domain: $ibdev\$" "UCX's memory domain for our device, as the user"
		has "Transport: rc_verbs\$" "UCX's rc_verbs, as the user"
	fi
	;;
shm)
	pp=$(command -v ibv_rc_pingpong) || skip "ibv_rc_pingpong not installed (ibverbs-utils)"
	as=()
	if [ "$(id -u)" = 0 ]; then
		sv_users_ready || skip "$SV_USERS_WHY"
		sv_as 1
		as=("${SV_AS[@]}")
	fi
	need_userns "an ordinary user" ${as[@]+"${as[@]}"}
	. "$here/../net/port.sh"
	port=$(sv_free_port) || exit 1
	iters=200
	"${as[@]}" timeout -k 5 60 env SOFTVERBS_STATS=1 "$SV" run -- \
		sh -c 'readlink /proc/self/ns/user; echo $$ >"$0"; exec "$@"' "$tmp/pub/server.pid" "$pp" -g 0 -p "$port" -c -s 20000 -n $iters >"$tmp/server" 2>&1 &
	bg=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$port" | grep -q . && break
		kill -0 $bg 2>/dev/null || break
		sleep 0.05
	done
	# The server made its QP before it listens: another run of the same
	# user finds it in `softverbs stats PID`.
	spid=$(cat "$tmp/pub/server.pid" 2>/dev/null || true)
	run_ok 30 "${as[@]}" "$SV" run -- "$SV" stats "$spid"
	has "^pid $spid \\(ibv_rc_pingpong\\) running" "softverbs stats PID from another run of the user"
	has '^  qp 0x[0-9a-f]+ RC ' "the server's QP in softverbs stats"
	crc=0 src=0
	timeout -k 5 55 "${as[@]}" env SOFTVERBS_STATS=1 "$SV" run -- \
		sh -c 'readlink /proc/self/ns/user; exec "$@"' - "$pp" -g 0 -p "$port" -c -s 20000 -n $iters localhost >"$tmp/client" 2>&1 || crc=$?
	wait $bg || src=$?
	bg=
	for side in server client; do
		echo "--- $side ---"
		cat "$tmp/$side"
		p=$(grep -o 'path=[a-z]*\( ([^)]*)\)\?' "$tmp/$side" | head -n1)
		[ "$p" = "path=shm" ] || fail "$side QP: '$p', expected path=shm"
		# A message is a packet or more through the ring, or a
		# channel message (a 20000-byte SEND: a descriptor the
		# receiver pulls, docs/fastpath.md).
		tx=$(awk '$1 == "shm_tx_pkts" { print $2 }' "$tmp/$side")
		ctx=$(awk '$1 == "chan_sends" { print $2 }' "$tmp/$side")
		[ $((${tx:-0} + ${ctx:-0})) -ge $iters ] ||
			fail "$side: shm_tx_pkts ${tx:-0} + chan_sends ${ctx:-0} < $iters"
	done
	[ $src = 0 ] && [ $crc = 0 ] || fail "server exit $src, client exit $crc"
	[ "$(grep '^user:' "$tmp/server")" = "$(grep '^user:' "$tmp/client")" ] || fail "the two runs are in different user namespaces"
	;;
fallback)
	[ "$(id -u)" = 0 ] || skip "needs root to forbid namespaces in a user namespace of its own"
	need_userns root
	# A real refusal, not a simulated one: inside `unshare -U -r`, no
	# more user namespaces may be made there (max_user_namespaces is
	# per user namespace), and setpriv drops every capability for good
	# while the uid stays 0, so `run` tries unshare(CLONE_NEWNS) as root
	# (EPERM) and then a user namespace (ENOSPC).
	rc=0
	timeout 30 unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_user_namespaces &&
		exec setpriv --securebits +noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked \
			--inh-caps=-all --bounding-set=-all "$@"' - \
		"$SV" run -- sh -c 'echo ran; test -e /dev/infiniband && echo dev; echo "$LD_LIBRARY_PATH"; exit 5' >"$out" 2>"$err" || rc=$?
	[ $rc = 5 ] || fail "exit status $rc, expected the command's 5"
	has '^ran$' "the command ran anyway"
	has '/lib$' "with our LD_LIBRARY_PATH"
	grep -q '^dev$' "$out" && fail "/dev/infiniband exists after a refusal"
	[ "$(wc -l <"$err")" = 1 ] || fail "stderr is not one line: $(cat "$err")"
	grep -Eq '^softverbs: no /dev/infiniband or /sys/class/infiniband for the command \(unshare\(CLONE_NEWNS\): Operation not permitted; unshare\(CLONE_NEWUSER\): .*\); running it without them$' "$err" ||
		fail "unexpected stderr: $(cat "$err")"
	cat "$err"
	;;
setup)
	[ "$(id -u)" = 0 ] || skip "setup needs root"
	# In a mount namespace of the test's own, private: setup's mounts are
	# made there, never in the machine's.  /dev too gets a tmpfs of the
	# test's own (holding just null): setup creates /dev/infiniband in
	# /dev itself, which in a devtmpfs every namespace would see.
	cat >"$tmp/setup.sh" <<'EOF'
SV=$1 devname=$2 ibdev=$3 dump=$4 tmp=$5
say() { echo "$*"; }
touch "$tmp/null" && mount --bind /dev/null "$tmp/null" &&
	mount -t tmpfs test-dev /dev && touch /dev/null &&
	mount --bind "$tmp/null" /dev/null || { say "no private /dev"; exit 1; }
"$SV" setup >/dev/null || say "setup failed"
"$SV" setup >/dev/null || say "setup again failed"
say "mounts $(grep -c ' - tmpfs softverbs ' /proc/self/mountinfo)"
test -c "/dev/infiniband/$devname" && say "chr"
say "guid $(cat "/sys/class/infiniband/$ibdev/node_guid")"
test -e /sys/class/net/lo && say "net lo"
# run under setup: the files are there, no namespace of its own
say "run $(readlink /proc/self/ns/mnt) $("$SV" run -- sh -c 'readlink /proc/self/ns/mnt; test -c /dev/infiniband/'"$devname"' && echo chr' | tr '\n' ' ')"
"$SV" setup --undo >/dev/null || say "undo failed"
test -e /dev/infiniband || say "dev gone"
test -e /sys/class/infiniband || say "sys gone"
test -e /sys/class/net/lo && say "net lo after"
say "undo again: $("$SV" setup --undo)"
say "mounts after $(grep -c ' - tmpfs softverbs ' /proc/self/mountinfo)"
EOF
	run_ok 60 unshare -m --propagation private bash "$tmp/setup.sh" "$SV" "$devname" "$ibdev" "$dump" "$tmp"
	cat "$out"
	has '^mounts 2$' "setup twice: one tmpfs on /dev/infiniband, one on /sys/class"
	has '^chr$'
	has "^guid $guid\$"
	has '^net lo$'
	has '^run (mnt:\[[0-9]+\]) \1 chr $' "run under setup uses it, no namespace of its own"
	has '^dev gone$'
	has '^sys gone$'
	has '^net lo after$'
	has '^undo again: softverbs: nothing to undo'
	has '^mounts after 0$'
	grep -q 'failed' "$out" && fail "a setup step failed"
	[ -e /dev/infiniband ] && fail "/dev/infiniband leaked out of the test's namespace"
	[ -e /sys/class/infiniband ] && fail "/sys/class/infiniband leaked out"
	;;
chroot)
	[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
	# The machine's own directories bound into a plain directory, as a
	# chroot made by hand has them; in a mount namespace of the test's.
	cat >"$tmp/chroot.sh" <<'EOF'
root=$1
shift
set -e
mount --make-rprivate /
mkdir "$root"
for d in /*; do
	n=${d#/}
	case $n in proc | dev | sys | run) mkdir "$root/$n"; continue ;; esac
	if [ -L "$d" ]; then cp -P "$d" "$root/$n"
	elif [ -d "$d" ]; then mkdir "$root/$n" && mount --rbind "$d" "$root/$n"
	fi
done
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount --make-rshared "$root/dev"
mount --make-rshared "$root/sys"
rc=0
chroot "$root" "$@" || rc=$?
echo "after: $(ls "$root/dev" | grep -c '^infiniband$') $(ls "$root/sys/class" | grep -c '^infiniband$')"
exit $rc
EOF
	run_ok 60 unshare -m bash "$tmp/chroot.sh" "$tmp/root" "$SV" run -- "$dump" "$devname" "$ibdev"
	check_view "$(id -u)" "$(id -g)"
	hasline "after: 0 0" "nothing of the view reached the chroot's /dev and /sys/class"
	;;
ucx)
	command -v ucx_info >/dev/null || skip "ucx_info not installed (ucx-utils)"
	ucx_has_verbs || skip "this system's UCX has no verbs transports (no ucx/libuct_ib.so.0, as Debian sid's)"
	[ "$(id -u)" = 0 ] || need_userns "this user"
	rc=0
	timeout -k 5 60 "$SV" run -- ucx_info -d >"$out" 2>"$err" || rc=$?
	grep -q 'symbol lookup error' "$err" &&
		fail "UCX's transports do not load: $(grep 'symbol lookup error' "$err" | head -n1)"
	[ $rc = 0 ] || fail "ucx_info -d exited $rc: $(head -5 "$err")"
	has "Memory domain: $ibdev\$" "UCX's IB memory domain for our device"
	has "Transport: rc_verbs\$" "UCX's rc_verbs transport"
	has "Transport: ud_verbs\$" "UCX's ud_verbs transport"
	;;
*)
	echo "unknown mode $mode"
	exit 2
	;;
esac
finish
