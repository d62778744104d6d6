#!/bin/bash
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

run_ok 30 "$prefix/bin/softverbs" devices
expect '^  port 1: PORT_ACTIVE'
run_ok 30 "$prefix/bin/softverbs" run -- sh -c 'echo "$LD_LIBRARY_PATH"'
expect "^$(readlink -f "$prefix")/lib\$"
run_ok 30 "$prefix/bin/softverbs" run -- ibv_devices
expect '^ +softverbs0[[:space:]]'
finish
