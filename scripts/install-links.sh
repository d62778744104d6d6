#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# After `make install`: put the command on PATH and its man pages where
# man looks, as links under LINKDIR (bin/, share/man/man1, man7), or say
# the one line that does it.  Usage: install-links.sh PREFIX [LINKDIR]
set -eu
prefix=$1
linkdir=${2:-}
if [ -n "$linkdir" ] && mkdir -p "$linkdir/bin" "$linkdir/share/man/man1" \
	"$linkdir/share/man/man7" 2>/dev/null &&
	ln -sf "$prefix/bin/softverbs" "$linkdir/bin/softverbs" 2>/dev/null &&
	ln -sf "$prefix/share/man/man1/softverbs.1" "$linkdir/share/man/man1/softverbs.1" &&
	ln -sf "$prefix/share/man/man7/softverbs.7" "$linkdir/share/man/man7/softverbs.7"; then
	echo "softverbs: installed in $prefix; $linkdir/bin/softverbs and its man pages link to it"
	case ":$PATH:" in
	*":$linkdir/bin:"*) ;;
	*) echo "softverbs: $linkdir/bin is not on your PATH: export PATH=$linkdir/bin:\$PATH" ;;
	esac
else
	echo "softverbs: installed in $prefix; to use it (man finds the pages through PATH):"
	echo "    export PATH=$prefix/bin:\$PATH"
fi
