#!/bin/bash
# MPI over UCX over softverbs0: mpi_check.c (allreduce, ping-pong and
# one-sided put/get/fetch_and_op, every byte checked) built with the MPI's
# own mpicc and run with 2 ranks, unmodified, through `softverbs run`:
#   mpi.sh ompi  WHERE   Open MPI 4.1: mpirun --mca pml ucx --mca osc ucx
#                        --mca btl self (nothing but UCX carries data)
#   mpi.sh mpich WHERE   MPICH 4.0 (ch4:ucx): mpiexec.hydra
# UCX_TLS=rc_verbs,ud_verbs:aux,self and UCX_NET_DEVICES=softverbs0:1:
# only verbs transports (and self, a rank to itself).
# WHERE: host (np 2 on this host) or netns (one rank in each of two
# network namespaces).  Between namespaces the launcher starts its remote
# daemon through netns_agent.sh (ip netns exec NS softverbs run -- sh -c
# CMD) where it would use ssh: Open MPI with --mca plm_rsh_agent, MPICH
# with -launcher rsh -launcher-exec; the launcher itself runs in the first
# namespace and is reached back on its veth address.  UCX_IB_GID_INDEX
# names the veth address's GID there (lib.sh).
# The last line of rank 0 must be "mpi_check: PASS" and the launcher must
# exit 0.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mpi=${1:-ompi} where=${2:-host}
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
*) echo "usage: $0 ompi|mpich host|netns"; exit 2 ;;
esac
sv_place "$where"

prog=$TMP/mpi_check
"$cc" -O2 -Wall -Werror -o "$prog" "$here/mpi_check.c" || { echo "FAIL: $cc could not build mpi_check.c"; exit 1; }

export UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1
env=(UCX_TLS UCX_NET_DEVICES)
if [ "$where" = netns ]; then
	sv_place_gids
	[ "$SRV_GID" = "$CLI_GID" ] ||
		{ echo "FAIL: the veth GIDs differ ($SRV_GID, $CLI_GID): one UCX_IB_GID_INDEX cannot name both"; exit 1; }
	export UCX_IB_GID_INDEX=$SRV_GID
	env+=(UCX_IB_GID_INDEX)
	export SV_AGENT_MAP="$CLI_IP=$CLI_NSNAME $SRV_IP=$SRV_NSNAME" SV_AGENT_SV=$SV
fi
agent=$here/netns_agent.sh

rc=0
if [ "$mpi" = ompi ]; then
	args=(--allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca osc ucx
		--mca btl self)
	for e in "${env[@]}"; do
		args+=(-x "$e")
	done
	if [ "$where" = netns ]; then
		args+=(--host "$SRV_IP:1,$CLI_IP:1" --mca plm_rsh_agent "$agent"
			--mca oob_tcp_if_include sv0)
	fi
	echo "mpirun ${args[*]} mpi_check"
	"${SRV_NS[@]}" timeout -k 5 120 "$SV" run -- mpirun.openmpi "${args[@]}" "$prog" \
		>"$TMP/out" 2>&1 || rc=$?
else
	args=(-n 2)
	if [ "$where" = netns ]; then
		args=(-hosts "$SRV_IP,$CLI_IP" -ppn 1 -launcher rsh -launcher-exec "$agent"
			-localhost "$SRV_IP" -n 2)
	fi
	echo "mpiexec.hydra ${args[*]} mpi_check"
	"${SRV_NS[@]}" timeout -k 5 120 "$SV" run -- mpiexec.hydra "${args[@]}" "$prog" \
		>"$TMP/out" 2>&1 || rc=$?
fi
show "$mpi (exit $rc)" "$TMP/out"
[ $rc = 0 ] || fail "the launcher exited $rc"
grep -q '^mpi_check: PASS$' "$TMP/out" || fail "rank 0 did not print 'mpi_check: PASS'"
grep -q ' FAIL$' "$TMP/out" && fail "some check failed"
finish
