#!/bin/bash
# CPU time per MiB that tests/integration/rc_messenger spends moving its
# messages over softverbs' UDP path (SOFTVERBS_FASTPATH=0) and over kernel
# TCP on loopback: both processes' task-clock (perf stat) for the stock
# case (12 messages per QP) and for a variant with 60, the difference
# divided by the difference in MiB moved, so set-up (registration faulting
# 96 MiB of buffers) cancels.  CPU time, not throughput: the figure holds
# on a shared machine.  Usage: cpu.sh [TREE] [RUNS]
set -euo pipefail
tree=$(cd "${1:-.}" && git rev-parse --show-toplevel)
runs=${2:-3}
work=$(mktemp -d)
trap 'git -C "$tree" worktree remove --force "$work/src" >/dev/null 2>&1; rm -rf "$work"' EXIT
git -C "$tree" worktree add -q --detach "$work/src" HEAD
build() { # NAME PER_QP
	sed -i "s/^#define PER_QP [0-9]*/#define PER_QP $2/" \
		"$work/src/tests/integration/rc_messenger.c"
	cmake -S "$work/src" -B "$work/$1" >/dev/null
	cmake --build "$work/$1" --target rc_messenger -j 2 >/dev/null
}
build b12 12
build b60 60
cpu_ms() { # BIN MODE: median task-clock (ms) of $runs runs
	local i v=()
	for i in $(seq "$runs"); do
		if [ "$2" = udp ]; then
			SOFTVERBS_FASTPATH=0 perf stat -x, -e task-clock -o "$work/ps" \
				-- taskset -c 0,1 "$1" stream >/dev/null 2>&1
		else
			perf stat -x, -e task-clock -o "$work/ps" \
				-- taskset -c 0,1 "$1" tcp >/dev/null 2>&1
		fi
		v+=("$(grep task-clock "$work/ps" | cut -d, -f1)")
	done
	printf '%s\n' "${v[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p"
}
mib() { # BIN MODE: MiB moved each way
	local out
	if [ "$2" = udp ]; then
		out=$(SOFTVERBS_FASTPATH=0 "$1" stream 2>&1)
	else
		out=$("$1" tcp 2>&1)
	fi
	grep -o 'moved [0-9]* MiB' <<<"$out" | head -n 1 | grep -o '[0-9]*'
}
for mode in udp tcp; do
	a=$(cpu_ms "$work/b12/bin/rc_messenger" $mode)
	b=$(cpu_ms "$work/b60/bin/rc_messenger" $mode)
	ma=$(mib "$work/b12/bin/rc_messenger" $mode)
	mb=$(mib "$work/b60/bin/rc_messenger" $mode)
	# Both directions move mb - ma MiB each.
	echo "$mode: task-clock ${a} ms (${ma} MiB each way), ${b} ms (${mb} MiB):" \
		"$(echo "($b - $a) / (2 * ($mb - $ma))" | bc -l | cut -c1-5) ms per MiB moved"
done
