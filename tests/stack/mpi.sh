#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# MPI over UCX over softverbs0: mpi_check.c (allreduce, ping-pong and
# one-sided put/get/fetch_and_op, every byte checked) built with the MPI's
# own mpicc and run with 2 ranks, unmodified, through `softverbs run`:
#   mpi.sh ompi  WHERE [flags]   Open MPI (4.1 in Debian 12, 5 in 13, 6 in
#                                sid): mpirun -np 2
#   mpi.sh mpich WHERE [flags]   MPICH (ch4:ucx): mpiexec.hydra -n 2
# with no flag that selects a transport: `softverbs run` sets UCX_TLS,
# UCX_NET_DEVICES, OMPI_MCA_pml and OMPI_MCA_osc (tools/middleware.c) and
# says so in one line, which the launcher's output must hold.  As root,
# Open MPI's --allow-run-as-root is the one flag given.  With "flags" the
# user's explicit form instead: --mca pml ucx --mca osc ucx --mca btl
# self and -x UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1
# (nothing but UCX's verbs transports carries data), UCX_IB_GID_INDEX
# naming the veth address's GID between namespaces, and no line.
# WHERE: host (np 2 on this host), user (the same as an ordinary useradd
# user, tests/users.sh, when root: no --allow-run-as-root) or netns (one
# rank in each of two
# network namespaces, hosts given by address as the launchers take them:
# --host A:1,B:1, -hosts A,B -ppn 1).  Between namespaces the launcher
# starts its remote daemon through netns_agent.sh (ip netns exec NS
# softverbs run -- sh -c CMD) where it would use ssh: Open MPI with --mca
# plm_rsh_agent, MPICH with -launcher rsh -launcher-exec; the launcher
# itself runs in the first namespace.
# Every rank runs with SOFTVERBS_STATS=1: the RC QPs' traffic must be on
# softverbs (path=shm on one host, path=udp between namespaces, and at
# least 200 data packets on that path in all).  The last line of rank 0
# must be "mpi_check: PASS" and the launcher must exit 0.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mpi=${1:-ompi} where=${2:-host} style=${3:-none}
case $mpi in
ompi)
	sv_need openmpi-bin:/usr/bin/mpirun.openmpi libopenmpi-dev:/usr/bin/mpicc.openmpi \
		libopenmpi-dev:/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h
	cc=mpicc.openmpi
	;;
mpich)
	sv_need mpich:/usr/bin/mpiexec.hydra libmpich-dev:/usr/bin/mpicc.mpich \
		libmpich-dev:/usr/include/x86_64-linux-gnu/mpich/mpi.h
	cc=mpicc.mpich
	;;
*) echo "usage: $0 ompi|mpich host|netns [flags]"; exit 2 ;;
esac
# Without UCX's verbs transports (Debian sid's UCX) MPICH (ch4:ucx) and
# Open MPI's UCX pml cannot reach softverbs0; Open MPI with no flag still
# can (through libfabric), and `softverbs run` says so instead of setting
# the UCX variables.
uct_ib=1
if [ "$mpi" = mpich ] || [ "$style" = flags ]; then
	sv_need_uct_ib "$([ "$mpi" = mpich ] && echo "MPICH (ch4:ucx)" || echo "Open MPI's UCX pml (--mca pml ucx)")"
else
	sv_has_uct_ib || uct_ib=0
fi
# Open MPI 6 through libfabric between namespaces is skipped: osc rdma's
# atomics reach the other namespace through btl ofi over ofi_rxd, which
# fails there over softverbs' verbs provider and over libfabric's own udp
# provider (no softverbs) alike.  In libfabric 2.1 (sid's) rxd puts the
# target's entry for a fetching atomic on its peer's tx_list and, when the request's sar_hdr carries a num_segs other
# than 1 (the sender sends whatever its pooled entry last held:
# rxd_tx_entry_init_atomic never sets it for a fetch), on its rx_list
# too; the next ACK walks the corrupt tx_list into a SIGSEGV in
# rxd_start_xfer (from MPI_Win_lock).  libfabric fixed that in 2.5.0
# (1ab44bfad, "prov/rxd: fix atomic fetch/compare path"), but with 2.5.1,
# or 2.1 with that fix, the fetch_op part never completes, over udp
# too.  Open MPI 5 (Debian 13) and 4.1 (Debian 12) never get there:
# their openmpi-mca-params.conf excludes btl ofi, sid's does not.
if [ "$mpi" = ompi ] && [ "$where" = netns ] && [ $uct_ib = 0 ]; then
	ompi_ver=$(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p')
	fab_ver=$(dpkg-query -W -f '${Version}' libfabric1 2>/dev/null || true)
	case $ompi_ver in
	[6-9].* | [1-9][0-9]*)
		echo "SKIP: Open MPI $ompi_ver over libfabric ${fab_ver:-?} between namespaces: Open MPI's btl ofi does osc rdma's atomics (MPI_Win_lock, MPI_Fetch_and_op) through libfabric's ofi_rxd, which fails there over softverbs and over libfabric's own udp provider alike: 2.1 corrupts its peer's tx list on a fetching atomic and crashes (SIGSEGV in rxd_start_xfer; fixed in 2.5.0, 1ab44bfad), 2.5.1 never completes the fetch"
		exit 77
		;;
	esac
fi
as=()
if [ "$where" = user ]; then
	where=host
	if [ "$(id -u)" = 0 ]; then
		. "$here/../users.sh"
		sv_users_ready || { echo "SKIP: $SV_USERS_WHY"; exit 77; }
		sv_as 1
		as=("${SV_AS[@]}")
		chmod 755 "$TMP"
	fi
fi
# UCX opens /dev/infiniband/uverbs_sv0, and without it run sets none of
# the variables these checks expect.
sv_need_uverbs ${as[@]+"${as[@]}"}
sv_place "$where"

prog=$TMP/mpi_check
"$cc" -O2 -Wall -Werror -o "$prog" "$here/mpi_check.c" || { echo "FAIL: $cc could not build mpi_check.c"; exit 1; }

export SOFTVERBS_STATS=1
env=()
if [ "$style" = flags ]; then
	export UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1
	env=(UCX_TLS UCX_NET_DEVICES)
	if [ "$where" = netns ]; then
		sv_place_gids
		[ "$SRV_GID" = "$CLI_GID" ] ||
			{ echo "FAIL: the veth GIDs differ ($SRV_GID, $CLI_GID): one UCX_IB_GID_INDEX cannot name both"; exit 1; }
		export UCX_IB_GID_INDEX=$SRV_GID
		env+=(UCX_IB_GID_INDEX)
	fi
else
	unset UCX_TLS UCX_NET_DEVICES UCX_IB_GID_INDEX OMPI_MCA_pml OMPI_MCA_osc OMPI_MCA_btl
fi
[ "$where" = netns ] && export SV_AGENT_MAP="$CLI_IP=$CLI_NSNAME $SRV_IP=$SRV_NSNAME" SV_AGENT_SV=$SV
agent=$here/netns_agent.sh

rc=0
if [ "$mpi" = ompi ]; then
	args=()
	[ "$(id -u)" = 0 ] && [ ${#as[@]} = 0 ] && args+=(--allow-run-as-root)
	if [ "$style" = flags ]; then
		args+=(--oversubscribe --mca pml ucx --mca osc ucx --mca btl self)
		for e in "${env[@]}"; do
			args+=(-x "$e")
		done
	fi
	uts=()
	if [ "$where" = netns ]; then
		# Each namespace a host name of its own, its address, as
		# netns_agent.sh gives the other: Open MPI 5's launcher counts
		# no slot on a node whose name is not the one it was given.
		uts=(unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$SRV_IP")
		# One rank a namespace: with --oversubscribe, Open MPI 5 maps
		# by core, both ranks on the first node.
		args+=(--host "$SRV_IP:1,$CLI_IP:1" --map-by node --mca plm_rsh_agent "$agent")
		[ "$style" = flags ] && args+=(--mca oob_tcp_if_include sv0)
	fi
	args+=(-np 2)
	echo "mpirun ${args[*]} mpi_check"
	"${SRV_NS[@]}" "${uts[@]}" timeout -k 5 120 "${as[@]}" "$SV" run -- mpirun.openmpi "${args[@]}" "$prog" \
		>"$TMP/out" 2>&1 || rc=$?
else
	args=(-n 2)
	if [ "$where" = netns ]; then
		args=(-hosts "$SRV_IP,$CLI_IP" -ppn 1 -launcher rsh -launcher-exec "$agent" -n 2)
		[ "$style" = flags ] && args=(-localhost "$SRV_IP" "${args[@]}")
	fi
	echo "mpiexec.hydra ${args[*]} mpi_check"
	"${SRV_NS[@]}" timeout -k 5 120 "${as[@]}" "$SV" run -- mpiexec.hydra "${args[@]}" "$prog" \
		>"$TMP/out" 2>&1 || rc=$?
fi
show "$mpi (exit $rc)" "$TMP/out"
[ $rc = 0 ] || fail "the launcher exited $rc"
grep -q '^mpi_check: PASS$' "$TMP/out" || fail "rank 0 did not print 'mpi_check: PASS'"
grep -q ' FAIL$' "$TMP/out" && fail "some check failed"
line="softverbs: set UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1 OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx "
[ $uct_ib = 1 ] ||
	line="softverbs: this system's UCX has no verbs transports (no libuct_ib): UCX_TLS, UCX_NET_DEVICES, OMPI_MCA_pml and OMPI_MCA_osc left as they are"
if [ "$style" = flags ]; then
	grep -E "softverbs: set .*UCX_(TLS|NET_DEVICES)=" "$TMP/out" && fail "softverbs run set a variable the user had set"
else
	grep -qF "$line" "$TMP/out" || fail "no line '$line...'"
fi
sv_stats_carried "$TMP/out" "$([ "$where" = host ] && echo shm || echo udp)" 200
finish
