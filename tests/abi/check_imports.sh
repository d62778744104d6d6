#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every versioned symbol that a distribution's own programs and libraries
# import from rdma-core's libraries must be exported by ours, at that
# version: the loader's check, made on every file at once.
#
#   check_imports.sh ROOT LIBDIR
#
# ROOT: a system's root ("/" for this one, or a Debian chroot); LIBDIR: our
# build's lib/.  The files examined are ROOT's executables and shared
# objects (/usr/bin, /usr/sbin, /usr/lib, /usr/libexec) that name one of
# libibverbs, librdmacm, libmlx5, libefa, libhns ... as NEEDED, except the
# ones ours replace (rdma-core's own libraries, whose providers import its
# private interface).  An import of a vendor library we have no stand-in
# for (libmlx4, libmana, libionic ...) fails too: it names the library.
# Exit status: 0 all resolved, 1 some not, 77 (ctest SKIP) when ROOT is
# absent or has no rdma-core.
set -euo pipefail

root=${1%/}
libdir=$2

if [ ! -d "$root/usr/lib" ]; then
	echo "SKIP: no system at ${root:-/} (a chroot is made by CI; set SV_CHROOT_TRIXIE / SV_CHROOT_SID)"
	exit 77
fi
if ! ls "$root"/usr/lib/*/libibverbs.so.1 >/dev/null 2>&1; then
	echo "SKIP: ${root:-/} has no libibverbs.so.1 (rdma-core not installed there)"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Ours: "version name" of every defined symbol of every library in LIBDIR.
for lib in "$libdir"/lib*.so.1; do
	objdump -T "$lib" | awk '/^[0-9a-f]+ / && !/\*UND\*/ {
		v = $(NF - 1); gsub(/[()]/, "", v); print v, $NF }'
done | LC_ALL=C sort -u >"$tmp/ours"

vendor='ibverbs|rdmacm|mlx4|mlx5|efa|hns|mana|ionic|bnxt_re|erdma|irdma'
files=0
# (find fails on a directory a minimal system lacks: not an error)
{ find "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/libexec" \
	-type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) 2>/dev/null || true; } |
	grep -v -E '/libibverbs/|/lib('"$vendor"')(-rdmav[0-9]+)?\.so' |
	{ xargs -r -d "\\n" grep -l -E "lib($vendor)\\.so\\.1" 2>/dev/null || true; } |
	while read -r f; do
		objdump -p "$f" 2>/dev/null | grep -q -E "NEEDED +lib($vendor)\.so" || continue
		echo "$f"
	done >"$tmp/files"
files=$(wc -l <"$tmp/files")
: >"$tmp/imports"
while read -r f; do
	# An import's version is printed in parentheses before its name.
	objdump -T "$f" 2>/dev/null | awk -v f="${f#$root}" '
		/\*UND\*/ && $(NF - 1) ~ /^\((IBVERBS|RDMACM|MLX[45]|EFA|HNS|MANA|IONIC|BNXT_RE)_/ {
			v = $(NF - 1); gsub(/[()]/, "", v); print v, $NF, f }'
done <"$tmp/files" >"$tmp/imports"
# Imports of a library we have no stand-in for fail by name.
awk '{ print $1 }' "$tmp/imports" | sed 's/_[0-9.]*$//; s/_PRIVATE$//' | sort -u |
	while read -r p; do
		case $p in
		IBVERBS) l=libibverbs ;; RDMACM) l=librdmacm ;; MLX5) l=libmlx5 ;;
		MLX4) l=libmlx4 ;; EFA) l=libefa ;; HNS) l=libhns ;;
		MANA) l=libmana ;; IONIC) l=libionic ;; *) l=lib${p,,} ;;
		esac
		[ -e "$libdir/$l.so.1" ] || echo "no $l.so.1 in $libdir, imported by:" \
			"$(awk -v p="$p" 'index($1, p "_") == 1 { print $3 }' "$tmp/imports" | sort -u | head -3 | tr '\n' ' ')"
	done >"$tmp/nolib"

missing=$(awk '{ print $1, $2 }' "$tmp/imports" | LC_ALL=C sort -u |
	LC_ALL=C comm -23 - "$tmp/ours")
echo "${root:-/}: $files files linked with rdma-core, $(awk '{print $1, $2}' "$tmp/imports" | sort -u | wc -l) distinct imports"
cat "$tmp/nolib"
if [ -n "$missing" ]; then
	echo "NOT EXPORTED by $libdir (version symbol: importers):"
	echo "$missing" | while read -r v s; do
		echo "    $v $s: $(awk -v v="$v" -v s="$s" '$1 == v && $2 == s { print $3 }' "$tmp/imports" | sort -u | head -3 | tr '\n' ' ')"
	done
	exit 1
fi
[ -s "$tmp/nolib" ] && exit 1
echo "PASS: every import resolved"
