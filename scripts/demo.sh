#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `make demo`: show softverbs0 to unmodified RDMA tools.  Usage: scripts/demo.sh BUILD_DIR
# Lists and queries the device, then runs the seed paper's RDMA read/write
# exchange between two processes (scripts/demo-rw.sh).
set -euo pipefail

build=${1:-build}
sv=$(cd "$build" && pwd)/bin/softverbs
if [ ! -x "$sv" ]; then
	echo "demo: $sv not found: build first (make)" >&2
	exit 1
fi

step() { printf '\n=== %s\n$ %s\n' "$1" "${*:2}"; }

step "the softverbs device, its port and GID table" softverbs devices
"$sv" devices

step "Debian's unmodified ibv_devices, through softverbs run" softverbs run -- ibv_devices
timeout 30 "$sv" run -- ibv_devices

step "Debian's unmodified ibv_devinfo, port 1" softverbs run -- ibv_devinfo -d softverbs0 -i 1
timeout 30 "$sv" run -- ibv_devinfo -d softverbs0 -i 1

# The seed paper's RDMA read/write exchange (examples/, scripts/demo-rw.sh).
step "RDMA read and write between two processes (the seed paper's programs)" \
	scripts/demo-rw.sh "$build"
"$(dirname "$0")/demo-rw.sh" "$build"

echo
echo "demo: done (softverbs0 is visible to unmodified programs, and moves data by RDMA)"
