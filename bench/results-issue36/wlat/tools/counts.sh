#!/bin/bash
# counts.sh BUILD N LABEL: one ib_write_lat 8 B pair between the namespaces
# of lat9k/tools/ns.sh (server l9a on core 0, client l9b on core 1), each side under
# `perf stat`; prints each side's counts per round trip (N iterations).
BUILD=$1; N=$2; L=$3
SV=$BUILD/bin/softverbs; P=$((19000 + RANDOM % 1000)); D=/tmp/wlat-counts
mkdir -p $D
EV=context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_recvmsg,syscalls:sys_enter_recvmmsg,sched:sched_wakeup
ip netns exec l9a taskset -c 0 perf stat -x, -e $EV -o $D/srv.stat $SV run -- ib_write_lat -d softverbs0 -x 0 -p $P -s 8 -n $N > $D/srv.out 2>&1 &
S=$!
sleep 0.4
ip netns exec l9b taskset -c 1 perf stat -x, -e $EV -o $D/cli.stat $SV run -- ib_write_lat -d softverbs0 -x 0 -p $P -s 8 -n $N 10.233.9.1 > $D/cli.out 2>&1
wait $S
T=$(grep -A1 t_typical $D/cli.out | tail -1 | awk '{print $5, $6}')
for side in srv cli; do
	printf '%s %s typical,avg %s:' "$L" $side "$T"
	awk -F, -v n=$N '/^[0-9]/ { split($3, a, ":"); e = a[2] ? a[2] : $3; sub("sys_enter_", "", e); printf " %s=%.3f", e, $1 / n }' $D/$side.stat
	echo
done
