#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `make install` into a temporary prefix: libraries in PREFIX/lib, the
# command in PREFIX/bin, no build-tree paths baked in, and the installed
# command works from anywhere.
SV_BUILD=$2
. "$(dirname "$0")/lib.sh"

prefix=$(mktemp -d /tmp/softverbs-install.XXXXXX)
trap 'rm -rf "$prefix" "$out" "$err"' EXIT

run_ok 120 cmake --install "$SV_BUILD" --prefix "$prefix"
for f in lib/libibverbs.so.1 bin/softverbs; do
	[ -e "$prefix/$f" ] || fail "$prefix/$f not installed"
done
# Every library the build produces (libibverbs, librdmacm, vendor stand-ins)
# must be installed next to the others.
for lib in "$SV_BUILD"/lib/lib*.so.1; do
	[ -e "$prefix/lib/$(basename "$lib")" ] || fail "$(basename "$lib") built but not installed"
done
if readelf -d "$prefix/bin/softverbs" "$prefix"/lib/*.so.1 | grep -E 'R(UN)?PATH' | grep -q "$SV_BUILD"; then
	fail "an installed file still points into the build tree"
	readelf -d "$prefix/bin/softverbs" | grep -E 'R(UN)?PATH'
fi

# The man pages: installed where man(1) finds them from PATH, rendered by
# man -l without a warning, naming every command of `softverbs help` and
# every environment variable of its table (the page is generated from it).
for page in man1/softverbs.1 man7/softverbs.7; do
	[ -e "$prefix/share/man/$page" ] || fail "$page not installed"
	run_ok 30 env MANWIDTH=80 man --warnings -l "$prefix/share/man/$page"
	expect '^SOFTVERBS\([17]\)'
done
run_ok 30 env PATH="$prefix/bin:$PATH" man -w softverbs
expect "^$(readlink -f "$prefix")/share/man/man1/softverbs\.1"
run_ok 30 env MANWIDTH=200 man -l "$prefix/share/man/man1/softverbs.1"
cp "$out" "$prefix/man1.txt"
run_ok 30 "$prefix/bin/softverbs" help
vars=$(sed -n 's/^  \([A-Z_]*\)=.*/\1/p' "$out")
cmds=$(sed -n 's/^  \([a-z][a-z]*\)[ ,].*/\1/p' "$out" | sort -u)
[ "$(echo "$vars" | wc -w)" -ge 11 ] || fail "too few variables in help: $vars"
for v in $vars; do
	grep -Eq "^ +$v=" "$prefix/man1.txt" || fail "softverbs(1) lacks the variable $v"
done
for c in $cmds; do
	grep -Eq "^ +$c( |,|\$)" "$prefix/man1.txt" || fail "softverbs(1) lacks the command $c"
done

# The rdma that run puts first on PATH (tools/rdmatool.c), installed.
run_ok 30 "$prefix/bin/softverbs" run -- rdma link show softverbs0/1
expect '^link softverbs0/1 state ACTIVE physical_state LINK_UP netdev '
[ "$(readlink "$prefix/libexec/softverbs/rdma")" = ../../bin/softverbs ] ||
	fail "no libexec/softverbs/rdma -> ../../bin/softverbs in the prefix"
run_ok 30 "$prefix/bin/softverbs" devices
expect '^  port 1: PORT_ACTIVE'
run_ok 30 "$prefix/bin/softverbs" run -- sh -c 'echo "$LD_LIBRARY_PATH"'
expect "^$(readlink -f "$prefix")/lib\$"
run_ok 30 "$prefix/bin/softverbs" run -- ibv_devices
expect '^ +softverbs0[[:space:]]'

# The links `make install` makes (scripts/install-links.sh): the command
# on PATH through LINKDIR/bin, man finding its page from there; without a
# LINKDIR, the one line that puts it on PATH.
links=$(dirname "$0")/../../scripts/install-links.sh
run_ok 30 "$links" "$prefix" "$prefix/links"
expect "^softverbs: installed in $prefix; $prefix/links/bin/softverbs and its man pages link to it"
run_ok 30 env PATH="$prefix/links/bin:/usr/bin:/bin" sh -c 'command -v softverbs && softverbs run -- ibv_devices && man -w softverbs'
expect "^$prefix/links/bin/softverbs\$"
expect '^ +softverbs0[[:space:]]'
expect "^$prefix(/links)?/share/man/man1/softverbs\\.1" "man finds the page through the link"
run_ok 30 "$links" "$prefix" ""
expect "^    export PATH=$prefix/bin:\\\$PATH\$"
finish
