#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# make fuzz: build the libFuzzer harnesses of fuzz/ (clang, ASan+UBSan, in
# build-fuzz), run each for FUZZ_SECONDS (default 60) from its committed
# seed corpus (fuzz/corpus/<name>; new inputs go to build-fuzz/fuzz-out),
# print per harness the executions and libFuzzer's coverage (cov: edges,
# ft: features), then the total.  Exit status 1 on any finding (a crash,
# a sanitizer report, a leak, a timeout or an out-of-memory: the input is
# kept in build-fuzz/fuzz-out/<name>/ and the report printed).
#
#   FUZZ_SECONDS=600 make fuzz          longer
#   FUZZ_HARNESSES="recv cm" make fuzz  some of them
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
secs=${FUZZ_SECONDS:-60}
jobs=${JOBS:-$(nproc)}
harnesses=${FUZZ_HARNESSES:-recv shm pubtab cm}

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DSV_FUZZ=ON \
		-DSV_WERROR="${SV_WERROR:-ON}" ||
		exit 1
fi
cmake --build "$build" -j "$jobs" --target fuzz_all || exit 1

out=$build/fuzz-out
total=0
status=0
for h in $harnesses; do
	dir=$out/$h
	log=$out/$h.log
	mkdir -p "$dir/corpus"
	rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
	# -timeout: one input taking 10 s is a finding (a hang); the outer
	# timeout only guards against libFuzzer itself not stopping.
	timeout --kill-after=30 $((secs + 120)) "$build/bin/fuzz_$h" \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$dir/" \
		"$dir/corpus" "$root/fuzz/corpus/$h" >"$log" 2>&1
	rc=$?
	execs=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log" | tail -n 1)
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | awk '{ print $2 }')
	ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -n 1 | awk '{ print $2 }')
	found=$(ls "$dir" | grep -E '^(crash|leak|timeout|oom)-' || true)
	printf 'fuzz: %-7s %10s executions in %ss, cov %s edges, ft %s%s\n' \
		"$h" "${execs:-?}" "$secs" "${cov:-?}" "${ft:-?}" \
		"$([ $rc -ne 0 ] && echo ", exit $rc")"
	total=$((total + ${execs:-0}))
	if [ $rc -ne 0 ] || [ -n "$found" ]; then
		status=1
		echo "fuzz: $h: FINDING (exit $rc): $log"
		grep -E 'ERROR:|SUMMARY:|runtime error|Test unit written|==[0-9]+==' "$log" | head -n 20
		for f in $found; do echo "fuzz: $h: input kept: $dir/$f"; done
	fi
done
echo "fuzz: total $total executions over: $harnesses ($([ $status -eq 0 ] && echo 'no finding' || echo 'FINDINGS'))"
exit $status
