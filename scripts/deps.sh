#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Make sure the Debian packages a target needs are present.
# As root they are installed with apt-get; otherwise we say exactly what to
# install and fail.  Usage: scripts/deps.sh build|test|demo|bench
set -eu
target=${1:-build}

# package:file-that-proves-it-is-installed
build_pkgs="gcc:/usr/bin/gcc
libc6-dev:/usr/include/stdio.h
make:/usr/bin/make
libibverbs-dev:/usr/include/infiniband/verbs.h
librdmacm-dev:/usr/include/rdma/rdma_cma.h
zlib1g-dev:/usr/include/zlib.h
cmake:/usr/bin/cmake
pkg-config:/usr/bin/pkg-config"
# test: also clang and clang-format, for make clang and make format-check
# (.ci/run runs both), man for compat.install, the middleware of the stack
# label, and qemu for the
# interop label (tests/interop: Linux rxe in a VM; its kernel and busybox
# are fetched with apt-get download, never installed).
test_pkgs="ibverbs-utils:/usr/bin/ibv_devinfo
rdmacm-utils:/usr/bin/rping
perftest:/usr/bin/ib_write_bw
python3-pyverbs:/usr/lib/python3/dist-packages/pyverbs/__init__.py
iproute2:/usr/sbin/ip
iputils-ping:/usr/bin/ping
nftables:/usr/sbin/nft
tshark:/usr/bin/tshark
ethtool:/usr/sbin/ethtool
binutils:/usr/bin/objdump
man-db:/usr/bin/man
ucx-utils:/usr/bin/ucx_perftest
libfabric-bin:/usr/bin/fi_pingpong
clang:/usr/bin/clang
clang-format:/usr/bin/clang-format
openmpi-bin:/usr/bin/mpirun.openmpi
libopenmpi-dev:/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h
mpich:/usr/bin/mpiexec.hydra
libmpich-dev:/usr/include/x86_64-linux-gnu/mpich/mpi.h
qemu-system-x86:/usr/bin/qemu-system-x86_64
cpio:/usr/bin/cpio"
bench_pkgs="iperf3:/usr/bin/iperf3
sockperf:/usr/bin/sockperf
qperf:/usr/bin/qperf
gnuplot-nox:/usr/bin/gnuplot
python3:/usr/bin/python3"

# demo: only what scripts/demo.sh runs (Debian's ibv_devices, ibv_devinfo).
demo_pkgs="ibverbs-utils:/usr/bin/ibv_devinfo"

case $target in
build) want=$build_pkgs ;;
demo) want="$build_pkgs
$demo_pkgs" ;;
test) want="$build_pkgs
$test_pkgs" ;;
bench) want="$build_pkgs
$test_pkgs
$bench_pkgs" ;;
*) echo "usage: $0 build|test|demo|bench" >&2; exit 2 ;;
esac

missing=""
for entry in $want; do
	pkg=${entry%%:*}
	file=${entry#*:}
	[ -e "$file" ] || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "softverbs: installing missing packages:$missing"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; answer for it.
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		debconf-set-selections 2>/dev/null || true
	# A failed update (an unreachable mirror, a snapshot's expired
	# Release file) leaves the lists there were: try those.
	apt-get update -qq || echo "softverbs: apt-get update failed; using the package lists there are" >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
	exit 0
fi
echo "softverbs: missing packages:$missing" >&2
echo "install them with:  sudo apt-get install$missing" >&2
exit 1
