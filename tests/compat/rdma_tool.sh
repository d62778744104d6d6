#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `rdma link` and `rdma dev` under `softverbs run` (tools/rdmatool.c): the
# run puts libexec/softverbs first on PATH, whose rdma answers for
# softverbs0 in iproute2's text and JSON formats (rdma-core's pyverbs
# tests read `rdma link show -j` for the port's netdev); the port's netdev
# is its first GID's, the node GUID `softverbs devices`'; an unknown device
# is refused as the tool does; other objects go to the real rdma on PATH.
# As root and as an ordinary user (tests/users.sh).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/../users.sh"
tooldir=$(cd "$(dirname "$(readlink -f "$SV")")/../libexec/softverbs" && pwd)

run_ok 30 "$SV" devices
guid=$(sed -n 's/^softverbs0: node_guid \([0-9a-f:]*\),.*/\1/p' "$out")
ndev=$(awk '/GID\[/ { print $NF; exit }' "$out")
[ -n "$guid" ] && [ -n "$ndev" ] || fail "no node_guid or first GID's netdev in 'softverbs devices'"

check() { # check PREFIX...: the answers, run through PREFIX
	run_ok 30 "$@" "$SV" run -- sh -c 'command -v rdma'
	expect "^$tooldir/rdma\$" "rdma found first on PATH"
	run_ok 30 "$@" "$SV" run -- rdma link show -j
	if ! python3 - "$out" "$ndev" <<'PY'; then
import json, sys
links = json.load(open(sys.argv[1]))
want = {"ifindex": 0, "ifname": "softverbs0", "port": 1, "state": "ACTIVE",
        "physical_state": "LINK_UP", "netdev": sys.argv[2]}
sys.exit(0 if links == [want] else f"rdma link show -j: {links}, not [{want}]")
PY
		fail "rdma link show -j as $*"
	fi
	run_ok 30 "$@" "$SV" run -- rdma link
	expect "^link softverbs0/1 state ACTIVE physical_state LINK_UP netdev $ndev \$"
	run_ok 30 "$@" "$SV" run -- rdma -d link show softverbs0/1
	expect "^link softverbs0/1 state ACTIVE physical_state LINK_UP netdev $ndev netdev_index $(cat "/sys/class/net/$ndev/ifindex") \$"
	run_ok 30 "$@" "$SV" run -- rdma dev show -j softverbs0
	expect "^\[\{\"ifindex\":0,\"ifname\":\"softverbs0\",\"node_type\":\"ca\",\"fw\":\"[^\"]+\",\"node_guid\":\"$guid\",\"sys_image_guid\":\"[0-9a-f:]+\"\}\]\$"
	run_ok 30 "$@" "$SV" run -- rdma dev
	expect "^0: softverbs0: node_type ca fw [^ ]+ node_guid $guid sys_image_guid "
	local rc=0
	timeout 30 "$@" "$SV" run -- rdma link show nosuch/1 >"$out" 2>"$err" || rc=$?
	[ $rc = 1 ] && grep -qx 'Wrong device name' "$err" ||
		fail "rdma link show nosuch/1: exit $rc, stderr '$(cat "$err")'"
	# Statistics and resources: the real tool's (a kernel device's).
	rc=0
	timeout 30 "$@" "$SV" run -- rdma res show >"$out" 2>"$err" || rc=$?
	if [ -x /usr/bin/rdma ] || [ -x /usr/sbin/rdma ] || [ -x /sbin/rdma ]; then
		if grep -q 'softverbs answers' "$err"; then
			fail "rdma res show was not passed to iproute2's rdma"
		fi
	else
		[ $rc = 1 ] && grep -q "softverbs answers \`rdma link\` and \`rdma dev\` only" "$err" ||
			fail "rdma res show without iproute2: exit $rc, '$(cat "$err")'"
	fi
}

check
if [ "$(id -u)" = 0 ]; then
	if sv_users_ready; then
		sv_as 1
		check "${SV_AS[@]}"
	else
		fail "no test user (useradd, setpriv)"
	fi
fi
# Outside run, PATH is the caller's.
run_ok 30 sh -c 'command -v rdma || echo none'
if grep -q "^$tooldir/" "$out"; then
	fail "the tool directory is on PATH outside run"
fi
finish
