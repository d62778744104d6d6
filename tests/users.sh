# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Ordinary test users (sourced by shell tests).  Two accounts made with
# useradd, never nobody: nobody's uid is the kernel's overflow id, the very
# id an unmapped user namespace shows, so a namespace bug hides behind it.
#   sv_users_ready [PATH...]
#                    true when both exist (made here when root and missing)
#                    and user 1 can reach every PATH (default: this tree,
#                    whose build the tests run); otherwise false with the
#                    reason in SV_USERS_WHY
#   sv_as N          sets SV_AS to the command prefix that runs a command
#                    as test user N (1 or 2), from root: "${SV_AS[@]}" CMD
SV_USER1=${SV_TEST_USER1:-svtest1}
SV_USER2=${SV_TEST_USER2:-svtest2}

sv_users_tree=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sv_users_ready() {
	local u p
	SV_USERS_WHY=
	for u in "$SV_USER1" "$SV_USER2"; do
		id -u "$u" >/dev/null 2>&1 && continue
		SV_USERS_WHY="no test user $u (made with useradd when run as root)"
		[ "$(id -u)" = 0 ] || return 1
		# Tests run in parallel: one useradd at a time.
		SV_USERS_WHY="could not make test user $u with useradd"
		flock /tmp/softverbs-useradd.lock sh -c \
			'id -u "$1" >/dev/null 2>&1 || useradd -m -s /bin/sh "$1"' - "$u" ||
			return 1
	done
	SV_USERS_WHY="no setpriv (util-linux) to act as the test users"
	command -v setpriv >/dev/null || return 1
	# A tree cloned into root's home (mode 700, as Debian makes /root) is
	# out of the users' reach: what they would run is not there for them.
	[ $# -gt 0 ] || set -- "$sv_users_tree"
	for p in "$@"; do
		setpriv --reuid="$SV_USER1" --regid="$SV_USER1" --init-groups \
			test -r "$p" 2>/dev/null && continue
		SV_USERS_WHY="test user $SV_USER1 cannot reach $p (a directory above it is closed to other users, as /root is): clone the tree where ordinary users can read it to test as them"
		return 1
	done
	SV_USERS_WHY=
}

sv_as() {
	local u=$SV_USER1
	[ "$1" = 2 ] && u=$SV_USER2
	SV_AS=(setpriv --reuid="$u" --regid="$u" --init-groups
		env HOME="$(getent passwd "$u" | cut -d: -f6)" USER="$u" LOGNAME="$u")
}
