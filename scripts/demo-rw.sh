#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The RDMA read/write exchange of the seed paper ("RDMA Read and Write with
# IB Verbs"): rdma-server and rdma-client (examples/) over loopback, in
# write mode then read mode, each side printing the peer's buffer that
# RDMA put in its memory.  Usage: scripts/demo-rw.sh [BUILD_DIR]
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
bin=$build/bin
for p in rdma-server rdma-client; do
	if [ ! -x "$bin/$p" ]; then
		echo "demo-rw: $bin/$p not found: build first (make)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

run_mode() {
	local mode=$1 port= i

	printf '\n=== RDMA %s: rdma-server %s, then rdma-client %s 127.0.0.1 PORT\n' \
		"$mode" "$mode" "$mode"
	: >"$tmp/server.$mode"
	"$bin/rdma-server" "$mode" >"$tmp/server.$mode" 2>&1 &
	server_pid=$!
	for i in $(seq 1 100); do
		port=$(sed -n 's/^listening on port \([0-9]*\)\.$/\1/p' \
			"$tmp/server.$mode")
		[ -n "$port" ] && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		echo "demo-rw: the server did not start:" >&2
		cat "$tmp/server.$mode" >&2
		return 1
	fi
	echo "--- client: \$ rdma-client $mode 127.0.0.1 $port"
	if ! timeout 30 "$bin/rdma-client" "$mode" 127.0.0.1 "$port"; then
		echo "demo-rw: the client failed" >&2
		cat "$tmp/server.$mode" >&2
		return 1
	fi
	# The server serves until stopped: let it finish this connection.
	for i in $(seq 1 100); do
		grep -q '^peer disconnected\.$' "$tmp/server.$mode" && break
		sleep 0.05
	done
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=
	echo "--- server: \$ rdma-server $mode"
	cat "$tmp/server.$mode"
	grep -q '^remote buffer: message from active/client side' \
		"$tmp/server.$mode" || {
		echo "demo-rw: the server did not see the client's buffer" >&2
		return 1
	}
}

run_mode write
run_mode read
echo
echo "demo-rw: done (each side printed the buffer its peer's RDMA operation exchanged)"
