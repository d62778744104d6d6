# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# GID indexes by address (source this file).  softverbs0's table puts the
# host's own addresses first and loopback's last (docs/guide.md), so a
# test names the GID it means by its address, not by a fixed index.
#
#   sv_gid_of IPV4 [COMMAND...]   print the RoCE v2 GID index of ::ffff:IPV4
#                                 as an unmodified ibv_devinfo -v, run by
#                                 COMMAND (e.g. "softverbs run --", with an
#                                 "ip netns exec A" before it), sees it;
#                                 nothing when there is none
#   sv_gid0_addr [COMMAND...]     print GID 0's address as ibv_devinfo -v
#                                 sees it

sv_gid_of() {
	local ip=$1
	shift
	"$@" ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$ip, RoCE v2/\1/p" | head -n1
}

sv_gid0_addr() {
	"$@" ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *0\]:[[:space:]]*\([^,]*\), RoCE v2/\1/p" | head -n1
}
