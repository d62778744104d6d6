#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Run inside `softverbs run` by presence.sh: print, one fact a line, what
# a program probing the kernel's files finds.  presence.sh compares the
# lines with the library's own answers and with the world outside.
#   presence_dump.sh DEV_NAME IBDEV
dev=/dev/infiniband/$1
sys=/sys/class/infiniband/$2
uv=/sys/class/infiniband_verbs/$1

# UCX's test of a device: stat() says character device, access(R_OK|W_OK).
[ -c "$dev" ] && echo "chr $dev"
[ -r "$dev" ] && [ -w "$dev" ] && echo "rw $dev"
[ -c /dev/infiniband/rdma_cm ] && echo "chr rdma_cm"
for f in node_guid sys_image_guid node_type fw_ver hca_type ports/1/state \
	ports/1/phys_state ports/1/link_layer ports/1/lid; do
	echo "attr $f $(cat "$sys/$f" 2>&1)"
done
for g in "$sys"/ports/1/gids/*; do
	n=${g##*/}
	echo "gid $n $(cat "$g") $(cat "$sys/ports/1/gid_attrs/types/$n" 2>/dev/null || echo -)" \
		"$(cat "$sys/ports/1/gid_attrs/ndevs/$n" 2>/dev/null || echo -)"
done
echo "ibdev $(cat "$uv/ibdev" 2>&1)"
echo "devnum $(stat -c '%Hr:%Lr' "$dev" 2>&1) $(cat "$uv/dev" 2>&1)"
echo "netlink lo $(cat "$sys/device/net/lo/ifindex" 2>&1) $(cat /sys/class/net/lo/ifindex)"
echo "id $(id -u) $(id -g)"
echo "capeff $(awk '$1 == "CapEff:" { print $2 }' /proc/self/status)"
echo "shm $(stat -c %d:%i /dev/shm)"
echo "userns $(readlink /proc/self/ns/user)"
echo "mntns $(readlink /proc/self/ns/mnt)"
ls /sys/class | sed 's/^/class /'
ls -a /dev | sed 's/^/dev /'
ls /sys/class/net | sed 's/^/net /'
