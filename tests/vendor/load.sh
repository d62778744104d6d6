#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every perftest binary (ib_*, raw_ethernet_*) loads through our
# libraries: `softverbs run -- BIN --help` (or LD_LIBRARY_PATH=LIBDIR BIN
# --help when the command is not built) resolves libmlx5.so.1, libefa.so.1
# and libibverbs.so.1 to LIBDIR,
# binds every symbol at start-up (LD_BIND_NOW) without a "symbol lookup
# error" or "version ... not found", prints perftest's usage and exits with
# the status perftest's --help has with the system's own libraries.
# Usage: load.sh LIBDIR [SOFTVERBS_CMD]   (exit 77: perftest not installed)
set -uo pipefail

LIBDIR=$(realpath "$1")
SV=${2:-}
cd /
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
out=$(mktemp)
err=$(mktemp)
ctl=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$ctl"' EXIT

mapfile -t bins < <(dpkg-query -L perftest 2>/dev/null | grep -E '^/usr/bin/(ib_|raw_ethernet_)' | sort)
if [ ${#bins[@]} -eq 0 ]; then
	echo "SKIP: perftest is not installed"
	exit 77
fi

# with_ours CMD...: run CMD with our library directory first.
with_ours() {
	if [ -n "$SV" ] && [ -x "$SV" ]; then
		"$SV" run -- "$@"
	else
		LD_LIBRARY_PATH=$LIBDIR "$@"
	fi
}
if [ -n "$SV" ] && [ -x "$SV" ]; then
	echo "running through $SV run"
else
	echo "running with LD_LIBRARY_PATH=$LIBDIR (no softverbs command)"
fi

loader_errors='symbol lookup error|version .* not found|undefined symbol|cannot open shared object|error while loading shared libraries'

for b in "${bins[@]}"; do
	name=$(basename "$b")

	# Which files the loader picks.
	with_ours timeout 20 ldd "$b" >"$out" 2>"$err"
	for so in libmlx5.so.1 libefa.so.1 libibverbs.so.1; do
		got=$(awk -v so="$so" '$1 == so { print $3 }' "$out")
		if [ -z "$got" ] || [ "$(realpath "$got")" != "$(realpath "$LIBDIR/$so")" ]; then
			fail "$name: $so resolves to '${got:-nothing}', expected $LIBDIR/$so"
		fi
	done
	grep -q 'not found' "$out" && fail "$name: ldd: $(grep 'not found' "$out")"

	# perftest's own status for --help, with the system's libraries.
	env -u LD_LIBRARY_PATH -u LD_PRELOAD timeout 20 "$b" --help >/dev/null 2>&1
	want=$?
	if [ $want -ge 124 ]; then
		fail "$name --help with the system's libraries exited $want (reference run broken)"
		continue
	fi

	rc=0
	LD_BIND_NOW=1 with_ours timeout --kill-after=5 20 "$b" --help >"$out" 2>"$err" || rc=$?
	if grep -Eq "$loader_errors" "$err"; then
		fail "$name: loader error: $(grep -E "$loader_errors" "$err" | head -3)"
	elif [ $rc -ne $want ]; then
		fail "$name --help exited $rc, perftest's help status is $want"
		sed 's/^/    stderr: /' "$err" | head -10
	elif ! grep -q '^Usage:' "$out"; then
		fail "$name --help printed no usage"
		head -5 "$out" | sed 's/^/    stdout: /'
	else
		echo "$name: loads, --help exits $rc as with the system's libraries"
	fi
done

# Control, for information: without the stand-ins (our libibverbs alone),
# the system's libmlx5/libefa are picked and refuse to bind.
cp -a "$LIBDIR"/libibverbs.so* "$ctl"/
rc=0
LD_BIND_NOW=1 LD_LIBRARY_PATH=$ctl timeout 20 "${bins[0]}" --help >/dev/null 2>"$err" || rc=$?
echo "control without stand-ins: $(basename "${bins[0]}") exits $rc ($(grep -Eo "$loader_errors.*" "$err" | head -1))"

if [ $fails -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo PASS
