#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The release artifacts of scripts/package.sh, used as a user would:
#   package.sh SV BUILD dist  the tarball unpacked in a fresh directory, its
#                             softverbs run from there (nothing of the build
#                             tree), also as an ordinary user
#   package.sh SV BUILD deb   the package: its fields (no Conflicts, Replaces
#                             or Provides of libibverbs1), its files, then
#                             (root, when no softverbs package is installed
#                             already) installed with dpkg, used, removed:
#                             /usr/bin/softverbs runs Debian's ibv_devices
#                             on softverbs0 while ibv_devices alone keeps the
#                             distribution's libibverbs
# Either way the installed copy then runs the distribution's ibv_devinfo -v
# (softverbs0, a valid active_speed) and an ibv_rc_pingpong pair (-c: the
# bytes checked), as root and as an ordinary user.  The distro pass of CI
# (scripts/distro.sh) runs both modes in the Debian 13 and sid chroots too.
SV_BUILD=$2
mode=$3
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../users.sh"
work=$(mktemp -d /tmp/softverbs-package.XXXXXX)
chmod 755 "$work"
installed=
trap 'rm -rf "$work" "$out" "$err"; [ -n "$installed" ] && dpkg -r softverbs >/dev/null 2>&1' EXIT

skip() {
	echo "SKIP: $*"
	exit 77
}

. "$here/../net/port.sh"

# use_copy WHO SV [AS...]: the installed or unpacked softverbs command SV,
# run (as AS, e.g. an ordinary user) with the distribution's ibv_devinfo -v
# and an ibv_rc_pingpong pair checking its bytes.  Where the kernel gives
# the user no user namespace (a chroot: unshare(CLONE_NEWUSER) is refused
# to a chrooted process), run says so on stderr and goes on without the
# kernel-style files; these programs do not need them, so SOFTVERBS_SYSFS=0
# asks for none and the note is printed here instead.
use_copy() {
	local who=$1 sv=$2 port srv rc=0 env=()
	shift 2
	if [ $# -gt 0 ] && ! "$@" unshare -U true 2>/dev/null; then
		echo "note: $who: no user namespace here (in a chroot the kernel refuses one): SOFTVERBS_SYSFS=0"
		env=(env SOFTVERBS_SYSFS=0)
	fi
	run_ok 30 "$@" ${env[@]+"${env[@]}"} "$sv" run -- ibv_devinfo -v
	expect '^hca_id:[[:space:]]+softverbs0$' "$who: ibv_devinfo -v names softverbs0"
	expect '^[[:space:]]+active_speed:[[:space:]]+[0-9.]+ Gbps' "$who: a valid active_speed"
	port=$(sv_free_port) || { fail "no free TCP port"; return; }
	"$@" ${env[@]+"${env[@]}"} timeout -k 5 60 "$sv" run -- \
		ibv_rc_pingpong -g 0 -c -n 100 -p "$port" >"$work/server" 2>&1 &
	srv=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$port" | grep -q . && break
		kill -0 $srv 2>/dev/null || break
		sleep 0.05
	done
	run_ok 60 "$@" ${env[@]+"${env[@]}"} "$sv" run -- \
		ibv_rc_pingpong -g 0 -c -n 100 -p "$port" localhost
	expect '^100 iters in' "$who: ibv_rc_pingpong's client"
	wait $srv || rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^100 iters in' "$work/server"; then
		fail "$who: ibv_rc_pingpong's server exited $rc"
		sed 's/^/    server: /' "$work/server"
	fi
}

run_ok 120 "$here/../../scripts/package.sh" "$mode" "$SV_BUILD" "$work/out"
art=$(tail -n 1 "$out")
[ -s "$art" ] || { fail "no artifact: $(cat "$out")"; finish; }

case $mode in
dist)
	tar -C "$work" -xzf "$art" || fail "cannot unpack $art"
	dir=$(echo "$work"/softverbs-*/)
	dir=${dir%/}
	[ -x "$dir/bin/softverbs" ] || fail "no bin/softverbs in the tarball"
	[ -e "$dir/lib/libibverbs.so.1" ] || fail "no lib/libibverbs.so.1 in the tarball"
	[ -e "$dir/share/man/man1/softverbs.1" ] || fail "no softverbs(1) in the tarball"
	run_ok 30 "$dir/bin/softverbs" run -- sh -c 'echo "$LD_LIBRARY_PATH"; ibv_devices'
	expect "^$dir/lib\$" "the unpacked lib/ first on LD_LIBRARY_PATH"
	expect '^ +softverbs0[[:space:]]' "Debian's ibv_devices finds softverbs0"
	use_copy "the unpacked tarball" "$dir/bin/softverbs"
	if [ "$(id -u)" = 0 ]; then
		if sv_users_ready "$dir/bin/softverbs"; then
			sv_as 1
			use_copy "the unpacked tarball as $SV_USER1" "$dir/bin/softverbs" "${SV_AS[@]}"
		else
			echo "not as an ordinary user: $SV_USERS_WHY"
		fi
	fi
	;;
deb)
	command -v dpkg-deb >/dev/null || skip "no dpkg-deb"
	run_ok 30 dpkg-deb -f "$art" Package Depends Conflicts Replaces Provides Breaks
	expect '^Package: softverbs$'
	expect '^Depends: libc6 \(>= 2\.[0-9]+\), zlib1g$'
	grep -Eq '^(Conflicts|Replaces|Provides|Breaks):' "$out" &&
		fail "the package conflicts with, replaces or provides something: $(cat "$out")"
	run_ok 30 dpkg-deb -c "$art"
	expect ' \./usr/lib/softverbs/lib/libibverbs\.so\.1 -> ' "the library in a private directory"
	expect ' \./usr/bin/softverbs -> \.\./lib/softverbs/bin/softverbs$' "softverbs on PATH"
	expect ' \./usr/share/man/man1/softverbs\.1\.gz$'
	grep -Eq ' \./(usr/)?lib/[^/]*/?libibverbs' "$out" &&
		grep -Ev 'usr/lib/softverbs/' "$out" | grep -q libibverbs &&
		fail "a libibverbs outside /usr/lib/softverbs"
	[ "$(id -u)" = 0 ] || { finish; exit; }
	dpkg -s softverbs >/dev/null 2>&1 && { echo "a softverbs package is installed here: not touched"; finish; exit; }
	run_ok 120 dpkg -i "$art"
	installed=1
	run_ok 30 softverbs run -- ibv_devices
	expect '^ +softverbs0[[:space:]]' "/usr/bin/softverbs runs ibv_devices on softverbs0"
	sysverbs=$(ldd "$(command -v ibv_devices)" | awk '$1 == "libibverbs.so.1" { print $3 }')
	case $sysverbs in
	*/softverbs/*) fail "ibv_devices alone loads $sysverbs" ;;
	esac
	run_ok 30 man -w softverbs
	expect '^/usr/share/man/man1/softverbs\.1\.gz$'
	use_copy "the package" softverbs
	if sv_users_ready /usr/bin/softverbs; then
		sv_as 1
		uenv=()
		"${SV_AS[@]}" unshare -U true 2>/dev/null || uenv=(env SOFTVERBS_SYSFS=0)
		run_ok 30 "${SV_AS[@]}" ${uenv[@]+"${uenv[@]}"} softverbs run -- id -u
		expect "^$(id -u "$SV_USER1")\$" "an ordinary user's run keeps the uid"
		use_copy "the package as $SV_USER1" softverbs "${SV_AS[@]}"
	else
		echo "not as an ordinary user: $SV_USERS_WHY"
	fi
	run_ok 60 dpkg -r softverbs
	installed=
	[ -e /usr/bin/softverbs ] && fail "dpkg -r left /usr/bin/softverbs"
	;;
*)
	echo "unknown mode $mode"
	exit 2
	;;
esac
finish
