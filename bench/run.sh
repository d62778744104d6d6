#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `make bench`: the benchmark suite.  Usage: bench/run.sh BUILD_DIR
# Builds our small measuring programs (memcpy_bw, pvm_bw, idle_cpu,
# setup_cost, udp_floor, udp_rate, objects, and with Open MPI's mpicc
# mpi_pingpong) into BUILD_DIR/bench/,
# then runs bench/bench.py, which runs perftest through softverbs and every
# anchor and writes bench/results/, and bench/netns.py, softverbs' UDP path
# between two network namespaces against iperf3 and sockperf on the same
# veth, and what 10,000 connections cost (bench/results/netns.md).
# Last, bench/events.py: applications that sleep on completion channels
# (perftest -e, qperf's default mode) against sockperf's blocking
# ping-pong and the same tools polling, on one host and between two
# namespaces (bench/results/events.md); BENCH_EVENTS=0 skips it,
# BENCH_EVENTS=only runs it alone (as does BENCH_ONLY=events).
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
for prog in memcpy_bw pvm_bw idle_cpu setup_cost udp_floor udp_rate objects; do
	# idle_cpu and setup_cost are verbs programs: rdma-core's headers,
	# linked against our library (they run through `softverbs run` anyway).
	libs=""
	case $prog in idle_cpu | setup_cost | objects) libs="-L$build/lib -libverbs" ;; esac
	if [ ! -x "$build/bench/$prog" ] || [ "$here/$prog.c" -nt "$build/bench/$prog" ]; then
		# shellcheck disable=SC2086
		${CC:-cc} -O2 -g -Wall -Wextra -Werror -o "$build/bench/$prog" "$here/$prog.c" $libs
	fi
done

# The MPI ping-pong is built with Open MPI's own mpicc (libopenmpi-dev, a
# test dependency): the package may come after this tree was configured.
if command -v mpicc.openmpi >/dev/null &&
	{ [ ! -x "$build/bench/mpi_pingpong" ] ||
		[ "$here/mpi_pingpong.c" -nt "$build/bench/mpi_pingpong" ]; }; then
	mpicc.openmpi -O2 -g -Wall -Wextra -Werror -o "$build/bench/mpi_pingpong" \
		"$here/mpi_pingpong.c"
fi

# The one-host suite, then the between-namespaces section (bench/netns.py:
# two network namespaces joined by veth, issue #20; it needs root and says
# so otherwise).  BENCH_NETNS=0 skips that section, BENCH_NETNS=only runs
# it alone; with BENCH_ONLY it runs only when one of the words is "netns".
netns=${BENCH_NETNS:-1}
events=${BENCH_EVENTS:-1}
if [ -n "${BENCH_ONLY:-}" ]; then
	case ",$BENCH_ONLY," in *,events,*) events=only ;; *) events=0 ;; esac
fi
if [ "$events" = only ]; then
	exec python3 "$here/events.py" "$build"
fi
if [ -n "${BENCH_ONLY:-}" ] && [ "$netns" != only ]; then
	case ",$BENCH_ONLY," in *,netns,*) netns=only ;; *) netns=0 ;; esac
fi
if [ "$netns" != only ]; then
	python3 "$here/bench.py" "$build" "$build/bench"
fi
if [ "$netns" != 0 ]; then
	python3 "$here/netns.py" "$build"
fi
if [ "$events" != 0 ] && [ "$netns" != only ]; then
	python3 "$here/events.py" "$build"
fi

# What a million PDs and a million MRs cost to make and destroy, against
# a system call in the same run (bench/objects.c, issue #39):
# bench/results/objects.md.  BENCH_ONLY runs it only when it names
# "objects"; BENCH_QUICK makes 100,000 of each.
if [ -z "${BENCH_ONLY:-}" ] || [[ ",$BENCH_ONLY," == *,objects,* ]]; then
	n=1000000
	[ -n "${BENCH_QUICK:-}" ] && n=100000
	line=$("$build/bin/softverbs" run -- "$build/bench/objects" "$n")
	out=$here/results/objects.md
	[ -n "${BENCH_QUICK:-}" ] && out=$here/results/quick/objects.md
	mkdir -p "$(dirname "$out")"
	{
		echo "# Making and destroying verbs objects ($(date -u +%Y-%m-%d))"
		echo
		echo "One process, one context (bench/objects.c): N PDs allocated then"
		echo "deallocated, N MRs of 4 KiB registered then deregistered; the anchor is"
		echo "one getppid() system call, measured in the same run."
		echo
		echo '```'
		echo "$line"
		echo '```'
	} >"$out"
	echo "objects: $line"
fi
