# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Debian's ibv_rc_pingpong between two namespaces through softverbs run
# (source this file after netns.sh; set SV_RUN to the array's name first).
#
#   sv_pp_gid IPV4 NS            print NS's RoCE v2 GID index of ::ffff:IPV4
#   sv_pp_stat COUNTER FILE      print a SOFTVERBS_STATS=1 counter's value
#                                in FILE (0 when it is not printed)
#   sv_pp_check CASE FILE SIZE ITERS
#                                FILE.server and FILE.client: each moved
#                                SIZE * ITERS * 2 bytes ("N bytes in") and
#                                says "ITERS iters in"; says FAIL otherwise
#                                and returns 1
#   sv_pp_no_drops CASE FILE     neither side dropped a packet as a bad
#                                ICRC, from a wrong peer or malformed, nor
#                                failed a send; says FAIL otherwise and
#                                returns 1

sv_pp_gid() {
	ip netns exec "$2" "${SV_RUN[@]}" ibv_devinfo -v |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$1, RoCE v2/\1/p" | head -n1
}

sv_pp_stat() {
	local v
	v=$(sed -n "s/^ *$1 \+\([0-9]\+\) .*/\1/p" "$2" | head -n1)
	echo "${v:-0}"
}

sv_pp_check() {
	local name=$1 file=$2 want=$(($3 * $4 * 2)) iters=$4 side line ok=0
	for side in server client; do
		line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds' "$file.$side")
		[ "${line%% *}" = "$want" ] || { echo "FAIL: $name: $side moved '${line%% *}' bytes, expected $want"; ok=1; }
		grep -qE "^$iters iters in [0-9.]+ seconds" "$file.$side" ||
			{ echo "FAIL: $name: $side has no '$iters iters in' line"; ok=1; }
	done
	return $ok
}

sv_pp_no_drops() {
	local side ok=0
	for side in server client; do
		if grep -E "^ +(drop_(icrc|wrong_peer|malformed)|send_err) +[1-9]" "$2.$side"; then
			echo "FAIL: $1: $side dropped packets"; ok=1
		fi
	done
	return $ok
}
