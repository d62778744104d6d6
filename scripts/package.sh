#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Release artifacts from a build tree (what `make install` installs):
#   package.sh dist BUILD OUTDIR   a relocatable tarball: unpack it anywhere
#                                  and run DIR/bin/softverbs, no build
#   package.sh deb BUILD OUTDIR    a Debian package: the libraries in a
#                                  private directory (/usr/lib/softverbs/lib,
#                                  never on the loader's path, so it sits
#                                  beside the distribution's libibverbs1 and
#                                  replaces nothing), /usr/bin/softverbs and
#                                  the man pages
# Each prints the artifact's path as its last line.
set -eu
what=$1 build=$2 out=$3
ver=$("$build/bin/softverbs" --version | sed -n '1s/^softverbs \([^ ]*\).*/\1/p')
[ -n "$ver" ] || { echo "package: no version from $build/bin/softverbs" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d /tmp/softverbs-package.XXXXXX)
trap 'rm -rf "$stage"' EXIT
top=$(cd "$(dirname "$0")/.." && pwd)

# The oldest glibc the binaries accept: the highest GLIBC_ version they name.
glibc_min() {
	for f in "$@"; do objdump -T "$f"; done | grep -o 'GLIBC_[0-9.]*' |
		sed 's/GLIBC_//' | sort -uV | tail -n 1
}

case $what in
dist)
	name=softverbs-$ver-$(uname -m)
	cmake --install "$build" --prefix "$stage/$name" >/dev/null
	for f in README.md LICENSE; do
		[ -e "$top/$f" ] && cp "$top/$f" "$stage/$name/"
	done
	tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
	echo "$out/$name.tar.gz"
	;;
deb)
	arch=$(dpkg --print-architecture)
	root=$stage/root
	DESTDIR=$root cmake --install "$build" --prefix /usr/lib/softverbs >/dev/null
	mkdir -p "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/man/man7" \
		"$root/usr/share/doc/softverbs" "$root/DEBIAN"
	ln -s ../lib/softverbs/bin/softverbs "$root/usr/bin/softverbs"
	# man pages where man looks, compressed as Debian's policy has them.
	for p in man1/softverbs.1 man7/softverbs.7; do
		gzip -9n <"$root/usr/lib/softverbs/share/man/$p" >"$root/usr/share/man/$p.gz"
	done
	rm -rf "$root/usr/lib/softverbs/share"
	[ -e "$top/LICENSE" ] && cp "$top/LICENSE" "$root/usr/share/doc/softverbs/copyright"
	glibc=$(glibc_min "$root"/usr/lib/softverbs/lib/*.so.1 "$root/usr/lib/softverbs/bin/softverbs")
	size=$(du -sk "$root/usr" | cut -f1)
	cat >"$root/DEBIAN/control" <<CTRL
Package: softverbs
Version: $ver
Architecture: $arch
Maintainer: softverbs developers <softverbs@localhost>
Installed-Size: $size
Depends: libc6 (>= $glibc), zlib1g
Suggests: ibverbs-utils, rdmacm-utils, perftest
Section: net
Priority: optional
Description: RDMA verbs in user space, without RDMA hardware
 softverbs provides drop-in libibverbs.so.1 and librdmacm.so.1 with a
 software RoCE v2 device, softverbs0, for machines with no RDMA NIC and
 no soft-RDMA kernel module (laptops, containers, CI runners).  Programs
 opt in per process with "softverbs run -- PROGRAM"; the libraries live
 in /usr/lib/softverbs/lib, beside the distribution's libibverbs1, which
 stays what every other program uses.
CTRL
	deb=$out/softverbs_${ver}_$arch.deb
	dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
	echo "$deb"
	;;
*)
	echo "usage: $0 dist|deb BUILD OUTDIR" >&2
	exit 2
	;;
esac
