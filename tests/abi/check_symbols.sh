#!/bin/bash
# Compare the exported, versioned symbol set of one of our libraries with
# the system's (rdma-core 44, Debian 12).
#
#   check_symbols.sh OURS SYSTEM [PRIVATE_NODE PACKAGE...]
#
# The set compared is {(symbol, version node, default|compat)} from
# `objdump -T` (defined symbols only; the version nodes themselves appear as
# ABS symbols and are part of the set).  It must be identical for every
# version node except PRIVATE_NODE (rdma-core's provider-internal
# interface), where ours must export exactly the symbols of that node that
# the unmodified binaries and Python modules of the given Debian PACKAGEs
# import (computed here from the installed packages with objdump), plus the
# node itself.  Any difference fails the test and is printed.
# Exit status: 0 same, 1 different, 77 (ctest SKIP) when OURS is not built.
set -euo pipefail

ours=$1
sys=$2
private=${3:-}
shift $(($# < 3 ? $# : 3))
packages=("$@")

if [ ! -e "$ours" ]; then
	echo "SKIP: $ours is not built"
	exit 77
fi
for f in "$sys"; do
	[ -e "$f" ] || { echo "FAIL: $f not found (install the Debian package)"; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# objdump -T columns: VALUE FLAGS... SECTION SIZE [VERSION] NAME, where a
# compat version is printed in parentheses.  Prints "name version kind".
dynsyms() {
	objdump -T "$1" | awk '
		/^[0-9a-f]+ / && !/\*UND\*/ {
			name = $NF; ver = $(NF - 1); kind = "default"
			if (ver ~ /^\(.*\)$/) { kind = "compat"; ver = substr(ver, 2, length(ver) - 2) }
			print name, ver, kind
		}' | LC_ALL=C sort -u
}

dynsyms "$ours" >"$tmp/ours"
dynsyms "$sys" >"$tmp/sys"
[ -s "$tmp/sys" ] || { echo "FAIL: no symbols read from $sys"; exit 1; }

if [ -n "$private" ]; then
	# What Debian's own binaries import from the private node.
	: >"$tmp/imports"
	for pkg in "${packages[@]}"; do
		files=$(dpkg -L "$pkg" 2>/dev/null) || {
			echo "FAIL: Debian package $pkg is not installed (scripts/deps.sh test)"
			exit 1
		}
		for f in $files; do
			[ -f "$f" ] && [ ! -L "$f" ] || continue
			case $f in
			*/bin/* | *.so | *.so.*) ;;
			*) continue ;;
			esac
			# An import's version is printed in parentheses.
			objdump -T "$f" 2>/dev/null | awk -v node="($private)" '
				/\*UND\*/ && $(NF - 1) == node { print $NF, substr(node, 2, length(node) - 2), "default" }' \
				>>"$tmp/imports" || true
		done
	done
	{
		echo "$private $private default"
		cat "$tmp/imports"
	} | LC_ALL=C sort -u >"$tmp/private_expected"
	grep -v " $private " "$tmp/sys" >"$tmp/sys_public" || true
	LC_ALL=C sort -u "$tmp/sys_public" "$tmp/private_expected" >"$tmp/expected"
	echo "private node $private: expecting exactly what Debian's binaries import:"
	sed 's/^/    /' "$tmp/private_expected"
else
	cp "$tmp/sys" "$tmp/expected"
fi

missing=$(LC_ALL=C comm -13 "$tmp/ours" "$tmp/expected")
extra=$(LC_ALL=C comm -23 "$tmp/ours" "$tmp/expected")
echo "$(basename "$ours"): $(wc -l <"$tmp/ours") symbols, expected $(wc -l <"$tmp/expected")"
status=0
if [ -n "$missing" ]; then
	echo "MISSING from ours (symbol version kind):"
	echo "$missing" | sed 's/^/    /'
	status=1
fi
if [ -n "$extra" ]; then
	echo "EXTRA in ours, not in the system's library (symbol version kind):"
	echo "$extra" | sed 's/^/    /'
	status=1
fi
[ $status -eq 0 ] && echo "PASS: identical symbol sets"
exit $status
