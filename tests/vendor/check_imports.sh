#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# ABI of the libmlx5/libefa/libhns stand-ins against Debian's perftest binaries:
#  - every MLX5_*/EFA_* symbol@version that any perftest binary imports is
#    exported (defined, as a function) by our library (that the library
#    exports rdma-core's whole set, no more, is abi.lib{mlx5,efa,hns}_symbols');
#  - every version node a binary requires is defined;
#  - the version definitions (names and the node each inherits) of
#    rdma-core's real library, when it is installed, are ours too (ours are
#    rdma-core 65's, a superset);
#  - the SONAMEs are libmlx5.so.1 / libefa.so.1 / libhns.so.1.
# Usage: check_imports.sh LIBDIR [SYSLIBDIR]   (exit 77: perftest not installed)
set -euo pipefail

LIBDIR=$1
SYSLIB=${2:-/usr/lib/x86_64-linux-gnu}
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

mapfile -t bins < <(dpkg-query -L perftest 2>/dev/null | grep -E '^/usr/bin/ib_' | sort)
if [ ${#bins[@]} -eq 0 ]; then
	echo "SKIP: perftest is not installed"
	exit 77
fi

# NAME@VERSION of the functions LIB defines (version nodes themselves are
# *ABS* entries and are not functions).
exports() {
	objdump -T "$1" | awk '$2 == "g" && $3 == "DF" && $4 != "*UND*" \
		{ print $NF "@" $(NF-1) }' | sort -u
}
# NAME@VERSION that BIN imports under versions matching PREFIX.
imports() {
	objdump -T "$1" | awk -v p="$2" '$0 ~ /\*UND\*/ && $(NF-1) ~ "^\\(" p \
		{ v = $(NF-1); gsub(/[()]/, "", v); print $NF "@" v }' | sort -u
}
# "NODE PARENT" lines of the version definitions of LIB (the first, the
# library's own name, is left out).
verdefs() {
	objdump -p "$1" | awk '
		/^Version definitions:/ { on = 1; next }
		/^Version References:/ { on = 0 }
		on && /^[0-9]+ / { if (n) print n, p; n = $4; p = "-"; next }
		on && /^\t/ { p = $1 }
		END { if (n) print n, p }' | tail -n +2
}
# Version nodes BIN requires from library SONAME.
required() {
	objdump -p "$1" | awk -v so="$2" '
		/^  required from / { on = ($3 == so ":"); next }
		on && NF == 4 { print $4 }' | sort -u
}

for pair in "libmlx5.so.1 MLX5_" "libefa.so.1 EFA_" "libhns.so.1 HNS_"; do
	set -- $pair
	lib=$1 prefix=$2
	ours=$LIBDIR/$lib
	if [ ! -e "$ours" ]; then
		fail "$ours does not exist"
		continue
	fi
	soname=$(objdump -p "$ours" | awk '$1 == "SONAME" { print $2 }')
	[ "$soname" = "$lib" ] || fail "$ours: SONAME '$soname', expected $lib"

	have=$(exports "$ours")
	defs=$(verdefs "$ours" | awk '{ print $1 }')
	want=""
	for b in "${bins[@]}"; do
		imp=$(imports "$b" "$prefix")
		want=$(printf '%s\n%s\n' "$want" "$imp")
		for s in $imp; do
			grep -qxF "$s" <<<"$have" ||
				fail "$(basename "$b") imports $s, not exported by our $lib"
		done
		for v in $(required "$b" "$lib"); do
			grep -qxF "$v" <<<"$defs" ||
				fail "$(basename "$b") requires version $v, not defined by our $lib"
		done
	done
	want=$(sed '/^$/d' <<<"$want" | sort -u)
	# perftest links libhns only since it was packaged against rdma-core 52+.
	if [ -z "$want" ] && [ "$prefix" = HNS_ ]; then
		echo "$lib: this perftest imports no ${prefix}* symbol"
		continue
	fi
	[ -n "$want" ] || fail "no perftest binary imports any ${prefix}* symbol (test broken?)"
	echo "$lib: $(wc -l <<<"$want") imported symbol(s) checked against ${#bins[@]} binaries"

	real=$SYSLIB/$lib
	if [ -e "$real" ]; then
		# Ours are rdma-core 65's, a superset of any older release's.
		lost=$(LC_ALL=C comm -23 <(verdefs "$real" | LC_ALL=C sort) \
			<(verdefs "$ours" | LC_ALL=C sort))
		if [ -n "$lost" ]; then
			fail "$lib: version definitions of rdma-core's ($real) missing or different in ours:"
			echo "$lost" | sed 's/^/    /'
		else
			echo "$lib: the $(verdefs "$real" | wc -l) version definitions of rdma-core's are ours ($(verdefs "$ours" | wc -l) nodes)"
		fi
	else
		echo "$lib: rdma-core's $real not installed; version chain not compared"
	fi
done

if [ $fails -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo PASS
