#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# /init of the rig's guest (tests/interop/rig.py builds the initramfs around
# it): busybox, the kernel modules in dependency order (/modules/order),
# rdma-core's userspace from the host's Debian packages.  Brings up eth0
# with the address given on the kernel command line (rig.addr=), attaches
# rxe0 to it, mounts the host's 9p share on /share, then runs /share/cmd
# (output in /share/out, exit status in /share/status) or, without a
# command file, a shell on the console.  Powers off either way.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /share /dev/pts
mount -t tmpfs tmpfs /tmp

ADDR=
for word in $(cat /proc/cmdline); do
	case $word in
	rig.addr=*) ADDR=${word#rig.addr=} ;;
	esac
done

# rdma_rxe cannot set up its CRC32 transform ("failed to init crc32
# algorithm") unless a crc32 crypto module is loaded first: the order file
# starts with crc32_generic for that reason.
while read -r mod; do
	insmod "/modules/$mod.ko" || echo "rig: insmod $mod failed"
done </modules/order

ip link set lo up
ip addr add "$ADDR/24" dev eth0
ip link set eth0 up
rdma link add rxe0 type rxe netdev eth0 || echo "rig: rdma link add failed"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /share ||
	echo "rig: mounting the 9p share failed"

# The port turns active once eth0's carrier is up; the RoCE v2 GID of ADDR
# appears when rxe sees the address.  GIDX is its index, for -g.
GIDX=
i=0
while [ $i -lt 100 ]; do
	GIDX=$(ibv_devinfo -v -d rxe0 2>/dev/null |
		sed -n "s/.*GID\[ *\([0-9]*\)\]:.*::ffff:$ADDR, RoCE v2.*/\1/p")
	if [ -n "$GIDX" ] && ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE; then
		break
	fi
	i=$((i + 1))
	sleep 0.1
done
export ADDR GIDX
echo "rig: ready addr=$ADDR gid_index=$GIDX uptime=$(cut -d' ' -f1 /proc/uptime)"

if [ -f /share/cmd ]; then
	cd /share
	sh /share/cmd >/share/out 2>&1
	echo $? >/share/status
	cd /
else
	setsid cttyhack sh
fi
sync
umount /share
poweroff -f
