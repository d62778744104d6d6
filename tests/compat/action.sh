#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The GitHub Actions composite action (action.yml, scripts/ci-action.sh)
# run as a job would run it, with GITHUB_ENV and GITHUB_PATH files:
#   action.sh SV BUILD tarball   from make dist's tarball, no build; a later
#                                "step" (a new shell reading the two files)
#                                runs Debian's ibv_devices on softverbs0 and
#                                finds softverbs on PATH; setup is off
#   action.sh SV BUILD checkout  built from the checkout (the build tree of
#                                this test); setup on, as root inside a
#                                private mount namespace with a /dev of its
#                                own, so the later step also finds
#                                /dev/infiniband (root only, else 77)
SV_BUILD=$2
mode=$3
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
[ -z "${SV_SANITIZED:-}" ] || { echo "SKIP: a sanitizer build (its programs need the runtime preloaded, which only softverbs run does)"; exit 77; }
work=$(mktemp -d /tmp/softverbs-action.XXXXXX)
trap 'rm -rf "$work" "$out" "$err"' EXIT

# The action runs the script with its three inputs.
grep -q 'run: .*"\$GITHUB_ACTION_PATH/scripts/ci-action.sh"' "$top/action.yml" ||
	fail "action.yml does not run scripts/ci-action.sh"
for v in SV_TARBALL SV_PREFIX SV_SETUP; do
	grep -q "^        $v: \${{ inputs\." "$top/action.yml" || fail "action.yml does not pass $v"
done

# step: a later step, as the runner makes it: a fresh shell with the
# variables of GITHUB_ENV and the directories of GITHUB_PATH.
cat >"$work/step.sh" <<'STEP'
set -e
while IFS= read -r line; do export "$line"; done <"$GITHUB_ENV"
while IFS= read -r dir; do PATH=$dir:$PATH; done <"$GITHUB_PATH"
echo "softverbs at $(command -v softverbs)"
ibv_devices
test -c "/dev/infiniband/$1" && echo "dev node $1"
exit 0
STEP
devname=$("$SV" devices | awk '$1 == "dev_name" { sub(":", "", $2); print $2; exit }')

case $mode in
tarball)
	run_ok 120 "$top/scripts/package.sh" dist "$SV_BUILD" "$work/out"
	tarball=$(tail -n 1 "$out")
	: >"$work/env" && : >"$work/path"
	run_ok 60 env SV_TARBALL="$tarball" SV_PREFIX="$work/prefix" SV_SETUP=false \
		GITHUB_ENV="$work/env" GITHUB_PATH="$work/path" "$top/scripts/ci-action.sh"
	expect '^softverbs: later steps run over softverbs0'
	run_ok 30 env -i PATH=/usr/bin:/bin GITHUB_ENV="$work/env" GITHUB_PATH="$work/path" \
		bash "$work/step.sh" "$devname"
	expect "^softverbs at $work/prefix/bin/softverbs\$" "softverbs on PATH"
	expect '^ +softverbs0[[:space:]]' "Debian's ibv_devices finds softverbs0 with no softverbs run"
	;;
checkout)
	[ "$(id -u)" = 0 ] || { echo "SKIP: setup needs root"; exit 77; }
	# As compat.presence.setup: a private mount namespace whose /dev is a
	# tmpfs of its own, so that nothing reaches the machine's /dev.
	cat >"$work/job.sh" <<JOB
set -e
touch "$work/null" && mount --bind /dev/null "$work/null"
mount -t tmpfs test-dev /dev && touch /dev/null && mount --bind "$work/null" /dev/null
SV_PREFIX="$work/prefix" SV_SETUP=true SV_BUILD="$SV_BUILD" \
	GITHUB_ENV="$work/env" GITHUB_PATH="$work/path" "$top/scripts/ci-action.sh"
env -i PATH=/usr/bin:/bin GITHUB_ENV="$work/env" GITHUB_PATH="$work/path" \
	bash "$work/step.sh" "$devname"
JOB
	: >"$work/env" && : >"$work/path"
	run_ok 300 unshare -m --propagation private bash "$work/job.sh"
	expect '^softverbs: later steps run over softverbs0'
	expect "^softverbs at $work/prefix/bin/softverbs\$" "softverbs on PATH"
	expect '^ +softverbs0[[:space:]]' "ibv_devices finds softverbs0"
	expect "^dev node $devname\$" "setup made /dev/infiniband for the later step"
	[ -e /dev/infiniband ] && fail "/dev/infiniband leaked out of the test's namespace"
	;;
*)
	echo "unknown mode $mode"
	exit 2
	;;
esac
finish
