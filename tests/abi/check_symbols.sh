#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Compare the exported, versioned symbol set of one of our libraries with
# those of rdma-core releases (reference lists in tests/abi/symbols/, made
# with `objdump -T` from Debian's libraries: 44 = Debian 12, 56 = Debian 13,
# 65 = Debian sid).
#
#   check_symbols.sh OURS REFERENCE...
#
# A reference list holds one "symbol version default|compat" per line,
# defined symbols only; the version nodes themselves appear as ABS symbols
# and are part of the set.  Ours must be exactly the union of the lists,
# except in rdma-core's provider-private nodes (IBVERBS_PRIVATE_*, renamed
# with every change of the provider interface): of those ours exports each
# node that a list names, and in it only ibv_query_gid_type, the one private
# symbol that distribution binaries other than providers import (ibv_devinfo,
# pyverbs; tests/abi/check_imports.sh proves that on the binaries
# themselves), as a compat version in all but the newest node.
# Any difference fails the test and is printed.
# Exit status: 0 same, 1 different, 77 (ctest SKIP) when OURS is not built.
set -euo pipefail

ours=$1
shift
refs=("$@")

if [ ! -e "$ours" ]; then
	echo "SKIP: $ours is not built"
	exit 77
fi
for f in "${refs[@]}"; do
	[ -s "$f" ] || { echo "FAIL: reference list $f missing or empty"; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# objdump -T columns: VALUE FLAGS... SECTION SIZE [VERSION] NAME, where a
# compat version is printed in parentheses.  Prints "name version kind".
objdump -T "$ours" | awk '
	/^[0-9a-f]+ / && !/\*UND\*/ {
		name = $NF; ver = $(NF - 1); kind = "default"
		if (ver ~ /^\(.*\)$/) { kind = "compat"; ver = substr(ver, 2, length(ver) - 2) }
		print name, ver, kind
	}' | LC_ALL=C sort -u >"$tmp/ours"

# The union of the public parts, and the private nodes named.
cat "${refs[@]}" | awk '$2 !~ /_PRIVATE_/' | LC_ALL=C sort -u >"$tmp/expected"
nodes=$(cat "${refs[@]}" | awk '$2 ~ /_PRIVATE_/ { print $2 }' | LC_ALL=C sort -uV)
newest=$(echo "$nodes" | tail -n 1)
for n in $nodes; do
	kind=compat
	[ "$n" = "$newest" ] && kind=default
	echo "$n $n default"
	echo "ibv_query_gid_type $n $kind"
done >>"$tmp/expected"
LC_ALL=C sort -u -o "$tmp/expected" "$tmp/expected"

missing=$(LC_ALL=C comm -13 "$tmp/ours" "$tmp/expected")
extra=$(LC_ALL=C comm -23 "$tmp/ours" "$tmp/expected")
echo "$(basename "$ours"): $(wc -l <"$tmp/ours") symbols, expected $(wc -l <"$tmp/expected")" \
	"(union of $(for f in "${refs[@]}"; do basename "$f"; done | tr '\n' ' '))"
[ -n "$nodes" ] && echo "private nodes: $(echo $nodes)"
status=0
if [ -n "$missing" ]; then
	echo "MISSING from ours (symbol version kind):"
	echo "$missing" | sed 's/^/    /'
	status=1
fi
if [ -n "$extra" ]; then
	echo "EXTRA in ours, in no reference list (symbol version kind):"
	echo "$extra" | sed 's/^/    /'
	status=1
fi
[ $status -eq 0 ] && echo "PASS: identical symbol sets"
exit $status
