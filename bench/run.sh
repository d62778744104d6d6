#!/bin/bash
# `make bench`: the benchmark suite.  Usage: bench/run.sh BUILD_DIR
# Builds our small measuring programs (memcpy_bw, pvm_bw, idle_cpu,
# setup_cost) into BUILD_DIR/bench/, then runs bench/bench.py, which runs perftest through
# softverbs and every anchor, and writes bench/results/.
# BENCH_QUICK=1 runs a small subset to check the pipeline (bench/results/quick/);
# the other knobs are described at the top of bench/bench.py.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
if [ ! -x "$build/bin/softverbs" ]; then
	echo "bench: $build/bin/softverbs not found: build first (make)" >&2
	exit 1
fi
if [ "$(nproc)" -lt 2 ]; then
	echo "bench: needs two cores to pin each pair of processes" >&2
	exit 1
fi

mkdir -p "$build/bench"
for prog in memcpy_bw pvm_bw idle_cpu setup_cost; do
	# idle_cpu and setup_cost are verbs programs: rdma-core's headers,
	# linked against our library (they run through `softverbs run` anyway).
	libs=""
	case $prog in idle_cpu | setup_cost) libs="-L$build/lib -libverbs" ;; esac
	if [ ! -x "$build/bench/$prog" ] || [ "$here/$prog.c" -nt "$build/bench/$prog" ]; then
		# shellcheck disable=SC2086
		${CC:-cc} -O2 -g -Wall -Wextra -Werror -o "$build/bench/$prog" "$here/$prog.c" $libs
	fi
done

exec python3 "$here/bench.py" "$build" "$build/bench"
