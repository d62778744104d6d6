#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# libfabric (Debian's libfabric-bin 1.17) over softverbs0 through
# `softverbs run`:
#   fabric.sh info WHERE    fi_info -p verbs lists softverbs0 with an MSG
#                           endpoint, softverbs0-dgram with a DGRAM one,
#                           and verbs;ofi_rxm's RDM endpoint on softverbs0
#   fabric.sh msg WHERE     fi_pingpong -p verbs -e msg
#   fabric.sh rdm WHERE     fi_pingpong -p "verbs;ofi_rxm" -e rdm
#   fabric.sh dgram WHERE   fi_pingpong -p verbs -e dgram
# fi_pingpong runs every size ("all": to 1 MiB, datagrams to the MTU)
# with -c, its data integrity check of every message received; both sides
# must exit 0 and the client must report each size with every message
# acknowledged ("#ack" =ITERS), and with SOFTVERBS_STATS=1 on both an RC
# (dgram: UD) QP must have carried at least ITERS operations on softverbs
# (lib.sh).  WHERE: host (127.0.0.1) or netns; no variable is needed
# there (the verbs provider's UD endpoints take GID 0, the veth address);
# with a third argument "flags", FI_VERBS_GID_IDX names that GID as a
# user would have before (lib.sh).  The
# server is started as a user starts it, without an address (this
# fi_pingpong has no option for one): libfabric's verbs provider binds
# "localhost", finds no device there (our rdma_cm, as the kernel's, binds
# a loopback address like the wildcard) and listens on the device's own
# addresses, which the other namespace reaches.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mode=${1:-info} where=${2:-host} style=${3:-none}
sv_need libfabric-bin:/usr/bin/fi_pingpong libfabric-bin:/usr/bin/fi_info
sv_place "$where"
unset FI_VERBS_GID_IDX FI_PROVIDER
[ "$style" = flags ] && sv_place_gids

if [ "$mode" = info ]; then
	rc=0
	"${SRV_NS[@]}" timeout -k 5 60 "$SV" run -- fi_info -p verbs >"$TMP/info" 2>&1 || rc=$?
	show "fi_info -p verbs (exit $rc)" "$TMP/info"
	[ $rc = 0 ] || fail "fi_info -p verbs exited $rc"
	# provider / domain / type triples, one per line
	awk '/provider:/ { p = $2 } /domain:/ { d = $2 } /type:/ { print p, d, $2 }' \
		"$TMP/info" | sort -u >"$TMP/triples"
	for want in "verbs softverbs0 FI_EP_MSG" "verbs softverbs0-dgram FI_EP_DGRAM" \
		"verbs;ofi_rxm softverbs0 FI_EP_RDM"; do
		grep -qxF "$want" "$TMP/triples" || fail "fi_info -p verbs lists no '$want'"
	done
	finish
fi

case $mode in
msg) prov=verbs max=1m ;;
rdm) prov="verbs;ofi_rxm" max=1m ;;
dgram) prov=verbs max= ;;
*) echo "usage: $0 info|msg|rdm|dgram host|netns"; exit 2 ;;
esac
iters=20
port=$(sv_free_port "${SRV_NS[@]}")
args=(-p "$prov" -e "$mode" -c -I "$iters")
echo "fi_pingpong ${args[*]} $where, control port $port"
export SOFTVERBS_STATS=1
"${SRV_NS[@]}" timeout -k 5 60 "$SV" run -- fi_pingpong "${args[@]}" -B "$port" \
	>"$TMP/server" 2>&1 &
srv=$!
SV_BG_PIDS+=("$srv")
sv_wait_port "$port" "$srv" "${SRV_NS[@]}" || fail "the server did not listen on $port"
crc=0
"${CLI_NS[@]}" timeout -k 5 60 "$SV" run -- fi_pingpong "${args[@]}" -P "$port" "$SRV_IP" \
	>"$TMP/client" 2>&1 || crc=$?
src=0
wait "$srv" || src=$?
show "server (exit $src)" "$TMP/server"
show "client (exit $crc)" "$TMP/client"
[ $src = 0 ] || fail "server exited $src"
[ $crc = 0 ] || fail "client exited $crc"
# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
awk -v n="$iters" '$1 ~ /^[0-9]+[km]?$/ && NF >= 8 {
	rows++
	if ($2 != n || $3 != "=" n) { bad++; print "    row", $0 }
} END { exit !(rows > 0 && !bad) }' "$TMP/client" ||
	fail "the client's table is missing or has a size with fewer than $iters messages acknowledged"
for size in 64 1k $max; do
	grep -Eq "^$size +$iters +=$iters " "$TMP/client" || fail "no '$size' row with $iters messages"
done
cat "$TMP/server" "$TMP/client" >"$TMP/both"
sv_stats_carried "$TMP/both" "$([ "$where" = host ] && echo shm || echo udp)" "$iters" \
	"$([ "$mode" = dgram ] && echo UD || echo RC)"
finish
