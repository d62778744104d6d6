# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Shared helpers of the compat tests (sourced).  Each test gets the path of
# the softverbs command as $1 and runs everything from / so that nothing
# depends on the current directory.
set -euo pipefail

SV=$1
shift
cd /

# An ordinary user whom the kernel gives no user namespace (inside a
# chroot it refuses one) gets no /dev/infiniband from run, which says so on
# stderr; the programs here do not need those files, so they are asked
# for none (SOFTVERBS_SYSFS=0) and the note is printed once here instead.
# presence.sh, which tests those files, sets SV_TESTS_VIEW and skips.
if [ -z "${SV_TESTS_VIEW:-}" ] && [ "$(id -u)" != 0 ] &&
	[ ! -e /dev/infiniband/uverbs_sv0 ] && ! unshare -U true 2>/dev/null; then
	echo "note: no user namespace for this user here (the kernel refuses one inside a chroot): runs without /dev/infiniband (SOFTVERBS_SYSFS=0)"
	export SOFTVERBS_SYSFS=0
fi
fails=0
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# run_ok SECONDS CMD...: run with a timeout, stdout to $out, stderr to $err;
# the command must exit 0 and print nothing on stderr.
run_ok() {
	local secs=$1 rc=0
	shift
	timeout --kill-after=5 "$secs" "$@" >"$out" 2>"$err" || rc=$?
	if [ $rc -ne 0 ]; then
		fail "'$*' exited $rc"
		sed 's/^/    stdout: /' "$out"
		sed 's/^/    stderr: /' "$err"
	elif [ -s "$err" ]; then
		fail "'$*' wrote to stderr:"
		sed 's/^/    stderr: /' "$err"
	fi
	return 0
}

# expect REGEX [WHAT]: the last run's stdout has a line matching REGEX (ERE).
expect() {
	if ! grep -Eq -- "$1" "$out"; then
		fail "no line matching /$1/ in output${2:+ ($2)}"
		sed 's/^/    | /' "$out" | head -80
	fi
}

finish() {
	if [ $fails -ne 0 ]; then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "PASS"
}
