#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The GitHub Actions step of action.yml (any CI with the same variables):
# install softverbs into SV_PREFIX from SV_TARBALL (make dist's) or by
# building this checkout, then make every later step run over softverbs0:
# its lib/ on LD_LIBRARY_PATH (GITHUB_ENV) and its bin/ on PATH
# (GITHUB_PATH); with SV_SETUP=true, `softverbs setup` (root, or through
# sudo) makes /dev/infiniband and /sys/class/infiniband for them too.
# SV_BUILD: the build tree to install from (default: build/ of the checkout).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${SV_PREFIX:-${RUNNER_TEMP:-/tmp}/softverbs}
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo -n)

if [ -n "${SV_TARBALL:-}" ]; then
	mkdir -p "$prefix"
	tar -xzf "$SV_TARBALL" -C "$prefix" --strip-components=1
else
	"${as_root[@]}" "$top/scripts/deps.sh" build
	make -C "$top" install BUILD="${SV_BUILD:-build}" PREFIX="$prefix" LINKDIR=
fi
[ -x "$prefix/bin/softverbs" ] || { echo "softverbs: no $prefix/bin/softverbs" >&2; exit 1; }
prefix=$(cd "$prefix" && pwd)

if [ -n "${GITHUB_ENV:-}" ]; then
	echo "LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" >>"$GITHUB_ENV"
fi
if [ -n "${GITHUB_PATH:-}" ]; then
	echo "$prefix/bin" >>"$GITHUB_PATH"
fi
if [ "${SV_SETUP:-true}" = true ]; then
	"${as_root[@]}" "$prefix/bin/softverbs" setup
fi
"$prefix/bin/softverbs" devices
echo "softverbs: later steps run over softverbs0 (libraries from $prefix/lib)"
