#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The remote-shell agent through which Open MPI's mpirun (plm_rsh_agent)
# and MPICH's mpiexec.hydra (-launcher rsh -launcher-exec) start their
# daemon in another network namespace of this host: instead of ssh HOST
# CMD it runs CMD with /bin/sh in the namespace that holds HOST's address,
# with HOST as its host name, under `softverbs run`, so the daemon and the
# ranks it starts see softverbs0 as every process of the test does.
#   SV_AGENT_MAP="ADDR=NAMESPACE ..."   which namespace holds which address
#   SV_AGENT_SV                         the softverbs command
# Usage (as the launchers call it): netns_agent.sh [-opts...] HOST CMD...
set -euo pipefail
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
	shift # rsh/ssh options a launcher may add (none is needed here)
done
host=$1
shift
ns=
for m in ${SV_AGENT_MAP:-}; do
	[ "${m%%=*}" = "$host" ] && ns=${m#*=}
done
[ -n "$ns" ] || { echo "netns_agent: no namespace for $host" >&2; exit 255; }
# A host name of its own (a UTS namespace named after the address): Open
# MPI 5's launcher takes daemons that report the same host name as its
# own for the same node, and would see one node with one slot.
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' \
	"$host" "$SV_AGENT_SV" run -- /bin/sh -c "$*"
