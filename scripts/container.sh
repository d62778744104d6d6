#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The steps of the Containerfile, one per stage, and its entrypoint:
#   container.sh build SRC OUT   (first stage) the build tools, then
#                                make deb into OUT
#   container.sh install DIR     (second stage) the package in DIR and
#                                ibverbs-utils, apt's lists removed
#   container.sh entrypoint CMD  softverbs setup where the container may
#                                mount, then CMD with softverbs' libraries;
#                                else CMD through softverbs run
set -eu
step=$1
shift
export DEBIAN_FRONTEND=noninteractive
case $step in
build)
	src=$1 out=$2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends make gcc libc6-dev cmake \
		pkg-config libibverbs-dev librdmacm-dev zlib1g-dev binutils >/dev/null
	make -C "$src" deb BUILD=/tmp/softverbs-build DIST="$out"
	;;
install)
	dir=$1
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "$dir"/softverbs_*.deb \
		ibverbs-utils >/dev/null
	rm -rf /var/lib/apt/lists/* "$dir"
	softverbs --version
	;;
entrypoint)
	[ $# -gt 0 ] || set -- softverbs devices
	if [ "$(id -u)" = 0 ] && softverbs setup >/dev/null 2>&1; then
		LD_LIBRARY_PATH=/usr/lib/softverbs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
		exec "$@"
	fi
	exec softverbs run -- "$@"
	;;
*)
	echo "usage: $0 build SRC OUT | install DIR | entrypoint CMD..." >&2
	exit 2
	;;
esac
