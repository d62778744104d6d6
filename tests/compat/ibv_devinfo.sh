#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Debian's unmodified ibv_devinfo (plain, -v, -l, -d/-i), through
# `softverbs run`: exit 0, nothing on stderr (it reads sysfs through
# ibv_read_sysfs_file and must not complain), and the facts of softverbs0.
. "$(dirname "$0")/lib.sh"

# ibv_devinfo 44 prints a GID as an IPv6 address with its type; older
# versions printed eight groups of four hex digits.  Either way: loopback.
lo_gid='GID\[ *[0-9]+\]:[[:space:]]+(::ffff:127\.0\.0\.1|0000:0000:0000:0000:0000:ffff:7f00:0001), RoCE v2'

run_ok 30 "$SV" run -- ibv_devinfo
expect '^hca_id:[[:space:]]+softverbs0$'
expect 'state:[[:space:]]+PORT_ACTIVE \(4\)'
expect 'link_layer:[[:space:]]+Ethernet'
expect 'phys_port_cnt:[[:space:]]+1$'

run_ok 30 "$SV" run -- ibv_devinfo -v
expect '^hca_id:[[:space:]]+softverbs0$'
expect 'state:[[:space:]]+PORT_ACTIVE \(4\)'
expect 'link_layer:[[:space:]]+Ethernet'
expect 'active_mtu:[[:space:]]+(256|512|1024|2048|4096) \([1-5]\)'
expect 'max_mtu:[[:space:]]+4096 \(5\)'
expect "$lo_gid" "loopback GID as RoCE v2"
expect 'phys_state:[[:space:]]+LINK_UP \(5\)'
expect 'max_qp:[[:space:]]+[1-9][0-9]*$'
# every printed GID is RoCE v2
if grep -E 'GID\[' "$out" | grep -vq 'RoCE v2'; then
	fail "a GID not typed RoCE v2"
	grep -E 'GID\[' "$out"
fi

run_ok 30 "$SV" run -- ibv_devinfo -l
expect '^1 HCA found:'
expect '^[[:space:]]+softverbs0$'

run_ok 30 "$SV" run -- ibv_devinfo -d softverbs0 -i 1
expect 'port:[[:space:]]+1'
expect 'link_layer:[[:space:]]+Ethernet'

# A device that does not exist: a clean error, not a crash.
rc=0
timeout 30 "$SV" run -- ibv_devinfo -d nosuchdev >"$out" 2>"$err" || rc=$?
case $rc in
0 | 124 | 129 | 1[3-8][0-9] | 19[0-2]) fail "ibv_devinfo -d nosuchdev exited $rc (want an error exit, no timeout or signal)" ;;
esac
grep -q "nosuchdev" "$err" || fail "ibv_devinfo -d nosuchdev did not name the missing device"
finish
