#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The tree on newer Debian releases: a chroot per release (debootstrap),
# the tree built inside it by that release's gcc against its rdma-core
# headers, then some ctest labels run there.  As root.
#
#   scripts/distro.sh prepare [SUITE...]  make or complete the chroots
#   scripts/distro.sh env [SUITE...]      print `export SV_CHROOT_<SUITE>=DIR`
#                                         for each chroot that is ready
#   scripts/distro.sh test [SUITE...]     prepare, build, run the labels
#
# SUITEs: trixie (Debian 13) and sid by default.  A chroot lives at
# $SV_CHROOT_TRIXIE / $SV_CHROOT_SID (default /work/chroots/<suite>) and is
# reused when it is there: only the packages it lacks are installed, with
# no download at all when it has them.  It keeps /proc, /dev and /sys
# mounted (the tests that run a release's own binaries through our library
# use it too).  Made from nothing (debootstrap, installed with apt-get if
# missing, and the packages below) it takes minutes and about 1.7 GB.
#
# SV_DISTRO_LABELS: the ctest label regex for `test` (default
# unit|abi|distro|pyverbs_suite: "distro" marks the few tests of other
# labels that run the release's own programs through the tree built there,
# bounded in time: the release artifacts installed and used, rping,
# cmtime, each perftest tool, UCX, Open MPI, MPICH, libfabric; the last is
# rdma-core's whole pyverbs suite of that release, about a minute each).
# SV_DISTRO_MIRROR: the Debian mirror (default http://deb.debian.org/debian).
#
# `test` prints, per suite, the compiler, the rdma-core release and ctest's
# summary, then one closing line "distro: N passed, N failed" (suites), and
# exits non-zero when any suite failed to prepare, build or pass.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mirror=${SV_DISTRO_MIRROR:-http://deb.debian.org/debian}
labels=${SV_DISTRO_LABELS:-unit|abi|distro|pyverbs_suite}

# The build and test tools, and the release's own RDMA programs and
# middleware (ibverbs-utils, rdmacm-utils, perftest, pyverbs, UCX,
# libfabric, Open MPI, MPICH) that tests run through our library.
pkgs="gcc make cmake pkg-config libc6-dev libibverbs-dev librdmacm-dev
zlib1g-dev ibverbs-utils rdmacm-utils perftest python3-pyverbs ucx-utils
libfabric-bin openmpi-bin libopenmpi-dev mpich libmpich-dev iproute2 procps
python3 binutils util-linux ca-certificates man-db"

# chroot_dir SUITE: where its chroot is.
chroot_dir() {
	local var
	var=SV_CHROOT_$(echo "$1" | tr '[:lower:]' '[:upper:]')
	echo "${!var:-/work/chroots/$1}"
}

say() { echo "distro: $*"; }

# mount_fs DIR: /proc, /dev and /sys inside the chroot (once).  The
# chroot's root is made a mount point first (a bind mount onto itself):
# `softverbs run` makes / a slave mount in its namespace, which the kernel
# refuses (EINVAL) for a root that is not one.  A chroot already in use
# with other mounts under it is left as it is, with a note.
mount_fs() {
	local d=$1 others
	if ! mountpoint -q "$d"; then
		others=$(findmnt -rn -o TARGET | grep "^$d/" |
			grep -vE "^$d/(proc|dev|sys)(/|\$)")
		if [ -n "$others" ]; then
			say "$d is not a mount point, and other mounts are under it:" \
				"softverbs run makes no namespace there" >&2
		else
			mount --rbind "$d" "$d" || return 1
		fi
	fi
	mountpoint -q "$d/proc" || mount -t proc proc "$d/proc" || return 1
	mountpoint -q "$d/dev" || mount --rbind /dev "$d/dev" || return 1
	mountpoint -q "$d/sys" || mount --rbind /sys "$d/sys" || return 1
}

# prepare SUITE: the chroot exists, is mounted and has every package.
prepare() {
	local s=$1 d missing
	d=$(chroot_dir "$s")
	if [ "$(id -u)" -ne 0 ]; then
		say "$s: needs root (debootstrap, chroot, mount)" >&2
		return 1
	fi
	if [ ! -x "$d/usr/bin/apt-get" ]; then
		if ! command -v debootstrap >/dev/null 2>&1; then
			say "installing debootstrap"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				debootstrap >/dev/null ||
				{ apt-get update -qq &&
					DEBIAN_FRONTEND=noninteractive apt-get install \
						-y -qq debootstrap >/dev/null; } || return 1
		fi
		say "$s: debootstrap into $d"
		mkdir -p "$d"
		debootstrap --variant=minbase "$s" "$d" "$mirror" \
			>"$d.debootstrap.log" 2>&1 ||
			{ say "$s: debootstrap failed, see $d.debootstrap.log" >&2; return 1; }
		rm -f "$d.debootstrap.log"
	fi
	mount_fs "$d" || { say "$s: cannot mount /proc, /dev, /sys in $d" >&2; return 1; }
	missing=""
	for p in $pkgs; do
		# shellcheck disable=SC2016
		[ "$(chroot "$d" dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = \
			"install ok installed" ] || missing="$missing $p"
	done
	missing=${missing# }
	if [ -n "$missing" ]; then
		say "$s: installing $missing"
		# A mirror's sid (a snapshot) may serve a Release file whose
		# Valid-Until has passed: accept it rather than stop.
		local apt=(chroot "$d" env DEBIAN_FRONTEND=noninteractive apt-get
			-o Acquire::Check-Valid-Until=false -y -qq)
		"${apt[@]}" update >/dev/null || return 1
		# shellcheck disable=SC2086
		"${apt[@]}" install --no-install-recommends $missing >/dev/null ||
			return 1
	fi
	return 0
}

# ready SUITE: its chroot has the packages (prepared before).
ready() {
	local d
	d=$(chroot_dir "$1")
	[ -x "$d/usr/bin/gcc" ] && [ -e "$d/usr/include/infiniband/verbs.h" ] &&
		[ -e "$d/usr/bin/ibv_devinfo" ] && mountpoint -q "$d/proc"
}

# pyverbs_summary LOG: what tests/stack/pyverbs_suite.sh printed in a
# ctest log (the release, the counts, the skips, the known test bugs).
pyverbs_summary() {
	[ -f "$1" ] || return 0
	grep -E '^(rdma-core [0-9][^ ]*, Python|rdma-core pyverbs suite:|  skipped +[0-9]+:|  known |    \(a test bug)' "$1" || true
}

# run_suite SUITE: build the tree in the chroot and run the labels there.
run_suite() {
	local s=$1 d mnt build log rc summary cc rc_ver
	d=$(chroot_dir "$s")
	prepare "$s" || { say "$s: FAILED to prepare the chroot"; return 1; }
	# The tree is bind-mounted (at a name of its own, the same each run:
	# other trees may share the chroot, and a build tree keeps its path)
	# and built in build-<suite> inside it.
	mnt=/src/softverbs-$(echo "$root" | md5sum | cut -c1-8)
	mkdir -p "$d$mnt"
	# A mount left by a run that was killed may hold a tree since removed.
	if mountpoint -q "$d$mnt"; then umount -l "$d$mnt"; fi
	mount --bind "$root" "$d$mnt" ||
		{ say "$s: cannot bind-mount the tree"; return 1; }
	build=build-$s
	# A build tree configured at another path cannot be reused.
	grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$mnt" "$root/$build/CMakeCache.txt" \
		2>/dev/null || rm -rf "${root:?}/$build"
	log=$(mktemp)
	cc=$(chroot "$d" gcc -dumpfullversion 2>/dev/null)
	rc_ver=$(chroot "$d" pkg-config --modversion libibverbs 2>/dev/null)
	say "$s: gcc $cc, libibverbs $rc_ver, labels '$labels'"
	# WERROR=ON: the release's compiler must find no warning either.
	chroot "$d" sh -c "cd $mnt && make -s BUILD=$build WERROR=ON" >"$log" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		grep -E 'error|warning' "$log" | head -n 20
		tail -n 5 "$log"
		say "$s: FAILED to build (gcc $cc)"
	else
		chroot "$d" sh -c "cd $mnt/$build && ctest --output-on-failure \
			--timeout 300 -L '$labels'" >"$log" 2>&1
		rc=$?
		# The output of the tests that did not pass, and ctest's list.
		[ $rc -eq 0 ] || grep -vE '^ +Start +[0-9]+:|Test +#[0-9]+: .* Passed' \
			"$log" | tail -n 80
		summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
		say "$s: ${summary:-no ctest summary} (exit $rc)"
		# rdma-core's pyverbs suite of the release: its counts and
		# each skip's reason (ctest keeps the output of every test).
		pyverbs_summary "$root/$build/Testing/Temporary/LastTest.log" |
			sed "s/^/distro: $s: /"
	fi
	rm -f "$log"
	umount "$d$mnt" && rmdir "$d$mnt"
	return $rc
}

cmd=${1:-test}
shift || true
suites=${*:-trixie sid}
case $cmd in
prepare)
	status=0
	for s in $suites; do
		start=$SECONDS
		if prepare "$s"; then
			say "$s: ready at $(chroot_dir "$s") ($((SECONDS - start))s)"
		else
			say "$s: FAILED to prepare ($((SECONDS - start))s)"
			status=1
		fi
	done
	exit $status
	;;
env)
	for s in $suites; do
		ready "$s" || continue
		echo "export SV_CHROOT_$(echo "$s" | tr '[:lower:]' '[:upper:]')=$(chroot_dir "$s")"
	done
	;;
test)
	passed=0 failed=0
	for s in $suites; do
		start=$SECONDS
		if run_suite "$s"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
		say "$s: $((SECONDS - start))s"
	done
	echo "distro: $passed passed, $failed failed"
	[ $failed -eq 0 ]
	;;
*)
	echo "usage: $0 prepare|env|test [SUITE...]" >&2
	exit 2
	;;
esac
