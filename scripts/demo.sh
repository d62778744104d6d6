#!/bin/bash
# `make demo`: show softverbs0 to unmodified RDMA tools.  Usage: scripts/demo.sh BUILD_DIR
# (For now it lists and queries the device; the RDMA read/write exchange
# between two processes comes with the data path.)
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

echo
echo "demo: done (softverbs0 is visible to unmodified programs)"
