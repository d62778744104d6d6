# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Ordinary test users (sourced by shell tests).  Two accounts made with
# useradd, never nobody: nobody's uid is the kernel's overflow id, the very
# id an unmapped user namespace shows, so a namespace bug hides behind it.
#   sv_users_ready   true when both exist (made here when root and missing)
#   sv_as N          sets SV_AS to the command prefix that runs a command
#                    as test user N (1 or 2), from root: "${SV_AS[@]}" CMD
SV_USER1=${SV_TEST_USER1:-svtest1}
SV_USER2=${SV_TEST_USER2:-svtest2}

sv_users_ready() {
	local u
	for u in "$SV_USER1" "$SV_USER2"; do
		id -u "$u" >/dev/null 2>&1 && continue
		[ "$(id -u)" = 0 ] || return 1
		# Tests run in parallel: one useradd at a time.
		flock /tmp/softverbs-useradd.lock sh -c \
			'id -u "$1" >/dev/null 2>&1 || useradd -m -s /bin/sh "$1"' - "$u" ||
			return 1
	done
	command -v setpriv >/dev/null
}

sv_as() {
	local u=$SV_USER1
	[ "$1" = 2 ] && u=$SV_USER2
	SV_AS=(setpriv --reuid="$u" --regid="$u" --init-groups
		env HOME="$(getent passwd "$u" | cut -d: -f6)" USER="$u" LOGNAME="$u")
}
