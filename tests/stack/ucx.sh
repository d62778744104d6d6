#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UCX (Debian's ucx-utils: 1.13 in Debian 12, 1.18 in 13) over softverbs0,
# unmodified, through `softverbs run` (77 where UCX has no verbs
# transports, as Debian sid's):
#   ucx.sh info WHERE              ucx_info -d, with no UCX_* variable,
#                                  lists softverbs0:1 with the rc_verbs and
#                                  ud_verbs transports
#   ucx.sh perf WHERE TEST TLS     ucx_perftest TEST between a server and a
#                                  client; TLS is rcud (UCX_TLS=rc_verbs,
#                                  ud_verbs:aux: RC for data, UD for the
#                                  wire-up, UCX 1.13's spelling, as its
#                                  ucp_tl_aliases write rc_v) or ud
#                                  (UCX_TLS=ud_verbs), or none: no UCX_*
#                                  variable at all, `softverbs run` sets
#                                  UCX_TLS and UCX_NET_DEVICES and says so
#                                  in one line (tools/middleware.c), and
#                                  UCX picks its GID itself
# WHERE is host (both over 127.0.0.1) or netns (server and client in two
# network namespaces).  Both sides must exit 0 and the client must report
# the whole run ("Final:" with every iteration); with SOFTVERBS_STATS=1 on
# both, an RC (or for ud a UD) QP must have carried at least an iteration's
# worth of packets on softverbs (path=shm on one host, UDP between
# namespaces).  For rcud and ud UCX_NET_DEVICES names softverbs0:1 only,
# so no other device or transport can carry the data; between namespaces
# UCX_IB_GID_INDEX names the veth address's GID (lib.sh).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mode=${1:-info} where=${2:-host}
sv_need ucx-utils:/usr/bin/ucx_perftest ucx-utils:/usr/bin/ucx_info
sv_need_uct_ib "UCX over softverbs0"
sv_need_uverbs
sv_place "$where"
unset UCX_TLS UCX_NET_DEVICES UCX_IB_GID_INDEX
if [ "$mode" = perf ] && [ "${4:-}" != none ]; then
	sv_place_gids
	export UCX_NET_DEVICES=softverbs0:1
fi

if [ "$mode" = info ]; then
	rc=0
	"${SRV_NS[@]}" timeout -k 5 60 "$SV" run -- ucx_info -d >"$TMP/info" 2>&1 || rc=$?
	[ $rc = 0 ] || { fail "ucx_info -d exited $rc"; show ucx_info "$TMP/info"; }
	for tl in rc_verbs ud_verbs; do
		awk -v tl="$tl" '/Transport:/ { t = $NF } /Device:/ && t == tl { print $NF }' \
			"$TMP/info" | grep -qx 'softverbs0:1' ||
			fail "ucx_info -d lists no $tl on softverbs0:1"
	done
	grep -E 'Transport: (rc|ud)_verbs|Device: softverbs0' "$TMP/info" | sort | uniq -c
	finish
fi

[ "$mode" = perf ] || { echo "usage: $0 info|perf WHERE [TEST TLS]"; exit 2; }
test=$3 tls=$4
case $tls in
rcud) export UCX_TLS=rc_verbs,ud_verbs:aux ;;
ud) export UCX_TLS=ud_verbs ;;
none) ;;
*) echo "unknown TLS set $tls"; exit 2 ;;
esac
# A ucx_perftest built with MPI support (UCX 1.18, Debian 13) takes a run
# whose input is not a terminal for an MPI launch unless told -P 0, which
# UCX 1.13 (Debian 12) does not know.
help=$(ucx_perftest -h 2>&1 || true)
case $help in
*'-P <0|1>'*) nompi=(-P 0) ;;
*) nompi=() ;;
esac
# Small counts: the label checks that the data moves, not how fast.
case $test in
tag_lat | ucp_am_lat) args=(-s 8 -n 500 -w 20) ;;
tag_bw | ucp_put_bw | ucp_get) args=(-s 65536 -n 100 -w 10) ;;
*) echo "unknown test $test"; exit 2 ;;
esac
iters=${args[3]}
port=$(sv_free_port "${SRV_NS[@]}")
echo "ucx_perftest -t $test ${args[*]} UCX_TLS=${UCX_TLS:-(unset)} $where, port $port"
export SOFTVERBS_STATS=1

"${SRV_NS[@]}" timeout -k 5 60 "$SV" run -- ucx_perftest -p "$port" ${nompi[@]+"${nompi[@]}"} \
	>"$TMP/server" 2>&1 &
srv=$!
SV_BG_PIDS+=("$srv")
sv_wait_port "$port" "$srv" "${SRV_NS[@]}" || fail "the server did not listen on $port"
crc=0
"${CLI_NS[@]}" timeout -k 5 60 "$SV" run -- ucx_perftest "$SRV_IP" -p "$port" \
	${nompi[@]+"${nompi[@]}"} -t "$test" "${args[@]}" >"$TMP/client" 2>&1 || crc=$?
src=0
wait "$srv" || src=$?
show "server (exit $src)" "$TMP/server"
show "client (exit $crc)" "$TMP/client"
[ $src = 0 ] || fail "server exited $src"
[ $crc = 0 ] || fail "client exited $crc"
grep -Eq "^Final: +$iters " "$TMP/client" || fail "the client reported no 'Final: $iters' line"
if [ "$tls" = none ]; then
	line="softverbs: set UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1 (middleware"
	for side in server client; do
		grep -qF "$line" "$TMP/$side" || fail "the $side has no line '$line...'"
	done
fi
cat "$TMP/server" "$TMP/client" >"$TMP/both"
sv_stats_carried "$TMP/both" "$([ "$where" = host ] && echo shm || echo udp)" "$iters" \
	"$([ "$tls" = ud ] && echo UD || echo RC)"
finish
