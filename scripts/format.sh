#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# clang-format over every .c/.h under src/, tests/ and fuzz/ (the files git
# tracks), with the repository's .clang-format.
#   scripts/format.sh fix    rewrite the files in place (make format)
#   scripts/format.sh check  change nothing; list the files that differ and
#                            fail when any does (make format-check, CI)
# check ends with one summary line, "format: clean (N files)" or
# "format: N files need clang-format (...)", which .ci/run reports.
# Different clang-format versions format differently: the tree follows
# Debian 12's clang-format 14, the one scripts/deps.sh installs.
set -eu
cd "$(dirname "$0")/.."
mode=${1:-check}

if ! command -v clang-format >/dev/null 2>&1; then
	echo "format: clang-format not found: apt-get install clang-format" \
		"(or run scripts/deps.sh test)" >&2
	exit 2
fi

# Tracked files only, so that build trees and scratch files are never
# touched; outside a git checkout (a tarball), what is there.
files=$(git ls-files -- 'src/*.[ch]' 'tests/*.[ch]' 'fuzz/*.[ch]' 2>/dev/null) ||
	files=$(find src tests fuzz -name '*.[ch]' | sort)

case $mode in
fix)
	# shellcheck disable=SC2086
	clang-format -i $files
	exit 0
	;;
check) ;;
*)
	echo "usage: $0 check|fix" >&2
	exit 2
	;;
esac

nfiles=0
bad=0
diffs=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in $files; do
	nfiles=$((nfiles + 1))
	if clang-format --dry-run --Werror "$f" >"$out" 2>&1; then
		continue
	fi
	# Exit 1 also means clang-format itself failed (a bad .clang-format,
	# an unreadable file): then there are no violations to count, and
	# its own message is what to show.
	n=$(grep -c 'Wclang-format-violations' "$out" || true)
	if [ "$n" -eq 0 ]; then
		cat "$out" >&2
		echo "format: clang-format failed on $f" >&2
		exit 2
	fi
	echo "  $f: $n differences"
	bad=$((bad + 1))
	diffs=$((diffs + n))
done

if [ $bad -eq 0 ]; then
	echo "format: clean ($nfiles files)"
	exit 0
fi
echo "(clang-format --dry-run FILE shows where; make format rewrites them)"
echo "format: $bad files need clang-format ($diffs differences in $nfiles files checked)"
exit 1
