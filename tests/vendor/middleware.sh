#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified Debian middleware that links the vendor libraries loads through
# `softverbs run` with our libmlx5.so.1 / libefa.so.1:
#  - UCX: ucx_info -v and -d exit 0, and its InfiniBand transport modules
#    (libuct_ib, libuct_ib_mlx5 where UCX has it, which import mlx5dv_*
#    functions, and libuct_rdmacm, which needs libuct_ib) are loaded, not
#    skipped;
#  - libfabric: fi_info -l exits 0 (libfabric.so.1 imports efadv_*);
#  - pyverbs: the mlx5dv and efadv extension modules import.
# Everything runs with LD_BIND_NOW=1, so that every symbol of every library
# and dlopen()ed module is bound at load time: a lazily bound import that we
# did not export would otherwise only fail when first called (UCX, whose
# module loader uses RTLD_LAZY, then skips the module silently).  Any
# "undefined symbol" or "symbol lookup error" in the output fails the test.
# The packages are test dependencies (scripts/deps.sh test); a missing one
# fails the test with the package's name.
# Usage: middleware.sh LIBDIR SOFTVERBS_CMD
set -uo pipefail

LIBDIR=$(realpath "$1")
SV=$(realpath "$2")
cd /
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

loader_errors='symbol lookup error|undefined symbol|version .* not found|cannot open shared object|error while loading shared libraries'

for need in ucx-utils:/usr/bin/ucx_info libfabric-bin:/usr/bin/fi_info \
	python3-pyverbs:/usr/lib/python3/dist-packages/pyverbs/providers/mlx5; do
	if [ ! -e "${need#*:}" ]; then
		echo "FAIL: Debian package ${need%%:*} is not installed (scripts/deps.sh test installs it)"
		exit 1
	fi
done
[ -x "$SV" ] || { echo "FAIL: $SV is not built"; exit 1; }

# run NAME CMD...: run CMD through softverbs with every symbol bound at
# start-up; output in $out; exit 0 and no loader error required.
run() {
	local name=$1 rc=0
	shift
	LD_BIND_NOW=1 timeout --kill-after=5 60 "$SV" run -- "$@" >"$out" 2>&1 || rc=$?
	if grep -Eq "$loader_errors" "$out"; then
		fail "$name: loader error:"
		grep -E "$loader_errors" "$out" | head -3 | cut -c1-300 | sed 's/^/    /'
		return 1
	fi
	if [ $rc -ne 0 ]; then
		fail "$name exited $rc"
		tail -5 "$out" | sed 's/^/    /'
		return 1
	fi
	echo "$name: exit 0, no loader error"
}

# resolves LIB SONAME: the loader, through softverbs, gives LIB our SONAME.
resolves() {
	local got
	got=$("$SV" run -- ldd "$1" 2>/dev/null | awk -v so="$2" '$1 == so { print $3 }')
	if [ -z "$got" ] || [ "$(realpath "$got")" != "$(realpath "$LIBDIR/$2")" ]; then
		fail "$(basename "$1"): $2 resolves to '${got:-nothing}', expected $LIBDIR/$2"
	fi
}

# UCX.  Its module loader reports (at debug level) "loaded PATH" or
# "dlopen(PATH) failed: REASON" for each transport module.  UCX 1.13
# (Debian 12) links libmlx5 into libuct_ib; from 1.16 (Debian 13) a module
# of its own, libuct_ib_mlx5, does.  Debian sid's UCX (1.23~rc1) is built
# without its IB transports: nothing of it links our libraries.
uct_ib=$(dpkg-query -L libucx0 2>/dev/null | grep '/ucx/libuct_ib\.so\.0$' | head -1)
uct_mlx5=$(dpkg-query -L libucx0 2>/dev/null | grep '/ucx/libuct_ib_mlx5\.so\.0$' | head -1)
if run "ucx_info -v" ucx_info -v; then
	grep -Eq '^# (Library )?[Vv]ersion' "$out" || fail "ucx_info -v printed no version"
fi
if [ -z "$uct_ib" ]; then
	echo "UCX's IB transports: skipped, $(dpkg-query -W -f '${Package} ${Version}' libucx0 2>/dev/null) ships no ucx/libuct_ib.so.0 (built without verbs)"
else
	mods="ib rdmacm"
	if [ -n "$uct_mlx5" ]; then
		resolves "$uct_mlx5" libmlx5.so.1
		mods="$mods ib_mlx5"
	else
		resolves "$uct_ib" libmlx5.so.1
	fi
	if UCX_MODULE_LOG_LEVEL=debug UCX_LOG_LEVEL=debug run "ucx_info -d" ucx_info -d; then
		for mod in $mods; do
			grep -Eq "loaded .*/libuct_$mod\.so" "$out" ||
				fail "ucx_info -d did not load libuct_$mod: $(grep -Eo "dlopen.*libuct_$mod\..*" "$out" | head -1)"
		done
	fi
fi

# libfabric (linked with -z now: a missing efadv_* stops every program).
fabric=$(dpkg-query -L libfabric1 2>/dev/null | grep '/libfabric\.so\.1$' | head -1)
[ -n "$fabric" ] || fail "libfabric1 ships no libfabric.so.1 (test broken?)"
[ -n "$fabric" ] && resolves "$fabric" libefa.so.1
if run "fi_info -l" fi_info -l; then
	grep -q 'version:' "$out" || fail "fi_info -l listed no provider"
fi

# pyverbs' provider extensions link libmlx5 / libefa; Debian's python3 (the
# one on PATH may be another, without python3-pyverbs).
run "pyverbs mlx5dv/efadv import" /usr/bin/python3 -B -c \
	'import pyverbs.providers.efa.efadv; import pyverbs.providers.mlx5.mlx5dv'

if [ $fails -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo PASS
