#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The licence line of every source file (LICENSE: GPL-2.0-only OR
# BSD-2-Clause), first in the file or right after its #! line:
#   spdx.sh check [DIR]   list the files without it; exit 1 if any
#   spdx.sh add [DIR]     add it where it is missing
# Files: C sources and headers, shell, Python, CMake and linker maps under
# src/, tools/, tests/, fuzz/, examples/, bench/ and scripts/ of DIR
# (default: this checkout), and its top CMakeLists.txt and Makefile.
set -eu
mode=$1
top=${2:-$(cd "$(dirname "$0")/.." && pwd)}
id="SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause"

files() {
	find "$top/src" "$top/tools" "$top/tests" "$top/fuzz" "$top/examples" \
		"$top/bench" "$top/scripts" -type f \( -name '*.c' -o -name '*.h' \
		-o -name '*.sh' -o -name '*.py' -o -name 'CMakeLists.txt' \
		-o -name '*.cmake' -o -name '*.map' \) -not -path '*/corpus/*' \
		-not -path '*/results*/*' 2>/dev/null
	echo "$top/CMakeLists.txt"
	echo "$top/Makefile"
}

line_for() {
	case $1 in
	*.c | *.h | *.map) echo "/* $id */" ;;
	*) echo "# $id" ;;
	esac
}

missing=0
for f in $(files); do
	# Within the first two lines: the first, or after a #! line.
	head -n 2 "$f" | grep -qF "$id" && continue
	case $mode in
	check)
		echo "spdx: ${f#"$top"/} has no '$id' line"
		missing=$((missing + 1))
		;;
	add)
		l=$(line_for "$f")
		if head -n 1 "$f" | grep -q '^#!'; then
			sed -i "1a $l" "$f"
		else
			sed -i "1i $l" "$f"
		fi
		;;
	esac
done
if [ "$mode" = check ]; then
	echo "spdx: $missing file(s) without the licence line"
	[ $missing = 0 ]
fi
