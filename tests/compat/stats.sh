#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `softverbs stats` on a live and on a killed process: Debian's unmodified
# ib_write_bw, server and client through `softverbs run` on the loopback
# GID, the client read while it runs (its QP listed in RTS with its path,
# bytes and packets non-zero and growing between two reads; --json parses;
# --watch prints rate lines and ends after --count), then kill -9 of the
# client and the same command showing it gone with its last counters, the
# text and the JSON naming the same numbers; --clean PID removes its
# segment (which the test leaves behind otherwise).
#
#   stats.sh SOFTVERBS_CMD MODE
#   MODE  shm  the one-host fast path (the WRITEs by one-copy placement)
#         udp  SOFTVERBS_FASTPATH=0: every WRITE in packets
# Exit 77 (skipped) when perftest is not installed.
source "$(dirname "$0")/lib.sh"
MODE=$1
source "$(cd "$(dirname "$0")/../net" && pwd)/port.sh"
set +e

bin=$(command -v ib_write_bw) || { echo "SKIP: ib_write_bw not installed (perftest)"; exit 77; }
case $MODE in
shm) want_path=shm ;;
udp) want_path=udp; export SOFTVERBS_FASTPATH=0 ;;
*) echo "FAIL: unknown mode $MODE"; exit 2 ;;
esac

gid=$("$SV" devices 2>/dev/null |
	awk '/GID\[/ && /::ffff:127\.0\.0\.1[ \t]/ { sub(/.*GID\[ */, ""); sub(/\].*/, ""); print; exit }')
[ -n "$gid" ] || { echo "FAIL: no ::ffff:127.0.0.1 GID in 'softverbs devices'"; exit 1; }

tmp=$(mktemp -d /tmp/sv-stats.XXXXXX)
srv= cli= cli_pid= srv_pid=
cleanup() {
	[ -n "$cli" ] && kill -9 "$cli" 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	# A killed process's counters stay until removed: ours go.
	for p in $cli_pid $srv_pid; do
		"$SV" stats --clean "$p" >/dev/null 2>&1
	done
	rm -rf "$tmp" "$out" "$err"
}
trap cleanup EXIT

port=$(sv_free_port) || exit 1
cmd=("$SV" run -- "$bin" -d softverbs0 -x "$gid" -p "$port" -D 60)
timeout -k 5 90 "${cmd[@]}" >"$tmp/server" 2>&1 &
srv=$!
for _ in $(seq 100); do
	ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.1
done
timeout -k 5 90 "${cmd[@]}" 127.0.0.1 >"$tmp/client" 2>&1 &
cli=$!

# json_get FILE PID EXPR: EXPR (Python) of the process pid in the JSON
# document FILE, with p the process and q its first QP.
json_get() {
	python3 - "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
for p in doc["processes"]:
    if p["pid"] == pid:
        qs = [q for c in p["contexts"] for q in c["qp"]]
        q = qs[0] if qs else None
        print(eval(sys.argv[3]))
        break
else:
    print("none")
EOF
}

# The client: the process whose command line has our port and the
# server's address, once its QP is in RTS and has sent something.
for _ in $(seq 450); do # up to ~45 s: a loaded host starts perftest slowly
	if "$SV" stats --json >"$tmp/all.json" 2>/dev/null; then
		cli_pid=$(python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["processes"]:
    if "-p " + sys.argv[2] + " " in p["cmdline"] + " " and "127.0.0.1" in p["cmdline"]:
        qs = [q for c in p["contexts"] for q in c["qp"]]
        if qs and qs[0]["state"] == "RTS" and qs[0]["counters"]["wr_bytes"] > 0:
            print(p["pid"])' "$tmp/all.json" "$port")
		srv_pid=$(python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["processes"]:
    if "-p " + sys.argv[2] + " " in p["cmdline"] + " " and "127.0.0.1" not in p["cmdline"]:
        print(p["pid"])' "$tmp/all.json" "$port")
		[ -n "$cli_pid" ] && break
	fi
	sleep 0.1
done
if [ -z "$cli_pid" ]; then
	fail "no ib_write_bw client with a QP in RTS that sent data in 'softverbs stats'"
	"$SV" stats 2>&1 | sed 's/^/    | /'
	sed 's/^/    client: /' "$tmp/client" | tail -5
	finish
fi

# --- live: two reads, the second further on -----------------------------------
# The default view: a line for the process, one per QP, human units.
run_ok 10 "$SV" stats "$cli_pid"
expect "^pid $cli_pid \(ib_write_bw\) running, 1 QP, up [0-9]+ s: .*-p $port" "the client, running"
expect "^  qp 0x[0-9a-f]{6} RC RTS $want_path( \([^)]*\))?: sent [0-9.]+( [KMG])? WRs [0-9.]+ (B|KiB|MiB|GiB|TiB), received " \
	"its QP in RTS on $want_path, in one line"
[ "$(wc -l <"$out")" = 2 ] || { fail "the default view is not two lines"; sed 's/^/    | /' "$out"; }
# -v: every counter.
run_ok 10 "$SV" stats -v "$cli_pid"
expect "^pid $cli_pid \(ib_write_bw\) running: .*-p $port" "the client, running (-v)"
expect "qp 0x[0-9a-f]{6} RC RTS path=$want_path" "its QP in RTS on $want_path (-v)"
expect "send WRs done [1-9][0-9]* \([1-9][0-9]* B\)" "send WRs and bytes"
if [ "$MODE" = udp ]; then
	expect "tx [1-9][0-9]* pkts [1-9][0-9]* B" "packets sent"
	expect "^    sent_pkts +[1-9]" "the context's sent_pkts"
else
	expect "^    direct_write +[1-9]" "one-copy WRITEs counted"
fi
cp "$out" "$tmp/live1.txt"
run_ok 10 "$SV" stats --json "$cli_pid"
python3 -m json.tool "$out" >/dev/null || fail "--json output is not JSON"
cp "$out" "$tmp/live1.json"
b1=$(json_get "$tmp/live1.json" "$cli_pid" 'q["counters"]["wr_bytes"]')
p1=$(json_get "$tmp/live1.json" "$cli_pid" 'q["counters"]["tx_pkts"]')
sleep 1
run_ok 10 "$SV" stats --json "$cli_pid"
cp "$out" "$tmp/live2.json"
b2=$(json_get "$tmp/live2.json" "$cli_pid" 'q["counters"]["wr_bytes"]')
p2=$(json_get "$tmp/live2.json" "$cli_pid" 'q["counters"]["tx_pkts"]')
st=$(json_get "$tmp/live2.json" "$cli_pid" 'p["status"], q["state"], q["path"]')
[ "$st" = "('running', 'RTS', '$want_path')" ] || fail "JSON status, state, path: $st"
if ! [ "$b1" -gt 0 ] 2>/dev/null || ! [ "$b2" -gt "$b1" ] 2>/dev/null; then
	fail "bytes did not grow between two reads: $b1 then $b2"
fi
if [ "$MODE" = udp ] && { ! [ "$p1" -gt 0 ] || ! [ "$p2" -gt "$p1" ]; } 2>/dev/null; then
	fail "packets did not grow between two reads: $p1 then $p2"
fi

# --- watch: rate lines, then it ends -------------------------------------------
run_ok 20 "$SV" stats --watch 0.5 --count 2 "$cli_pid"
n=$(grep -Ec "pid $cli_pid \(ib_write_bw\) qp 0x[0-9a-f]{6} RC RTS: sent [1-9][0-9.]*( [KMG])? WRs/s [1-9][0-9.]* (B|KiB|MiB|GiB)/s, received .*, tx [0-9.]+( [KMG])? pkts/s, .*retransmissions [0-9.]+/s" "$out")
[ "$n" = 2 ] || { fail "--watch 0.5 --count 2: $n rate lines, not 2"; sed 's/^/    | /' "$out"; }

# --- killed: gone, its last counters ------------------------------------------
kill -9 "$cli_pid"
for _ in $(seq 50); do
	kill -0 "$cli_pid" 2>/dev/null || break
	sleep 0.1
done
run_ok 10 "$SV" stats -v "$cli_pid"
expect "^pid $cli_pid \(ib_write_bw\) gone \(killed or crashed\)" "the client, gone"
expect "its last counters" "last counters"
expect "qp 0x[0-9a-f]{6} RC RTS path=$want_path" "its QP as it was"
cp "$out" "$tmp/dead.txt"
run_ok 10 "$SV" stats --json "$cli_pid"
python3 -m json.tool "$out" >/dev/null || fail "--json output (gone) is not JSON"
cp "$out" "$tmp/dead.json"
st=$(json_get "$tmp/dead.json" "$cli_pid" 'p["status"], p["alive"]')
[ "$st" = "('gone', False)" ] || fail "JSON of the killed client: $st"
b3=$(json_get "$tmp/dead.json" "$cli_pid" 'q["counters"]["wr_bytes"]')
w3=$(json_get "$tmp/dead.json" "$cli_pid" 'q["counters"]["wr_done"]')
[ "$b3" -ge "$b2" ] 2>/dev/null || fail "last bytes $b3 below a live read's $b2"
grep -q "send WRs done $w3 ($b3 B)" "$tmp/dead.txt" ||
	fail "text and JSON differ: JSON send WRs $w3 ($b3 B), text: $(grep 'send WRs' "$tmp/dead.txt")"
# The whole listing shows it too, and a second read the same numbers
# (other processes' segments may be of another build: said on stderr).
# The default listing leaves gone processes out and says so; --all shows it.
timeout 10 "$SV" stats >"$out" 2>"$err" || fail "softverbs stats exited $?"
grep -q "^pid $cli_pid " "$out" && fail "the default listing shows the killed client"
expect "^\([0-9]+ gone process(es)? not shown: --all shows them, --clean removes them\)$" "gone processes counted"
timeout 10 "$SV" stats --all -v >"$out" 2>"$err" || fail "softverbs stats --all -v exited $?"
expect "^pid $cli_pid \(ib_write_bw\) gone" "the killed client in the --all listing"
grep -q "send WRs done $w3 ($b3 B)" "$out" || fail "the full listing's numbers moved after the kill"

# --- clean: only the gone one's segment, and only when asked -----------------
run_ok 10 "$SV" stats --clean "$cli_pid"
expect "removed .*stats\.$cli_pid \(pid $cli_pid, gone\)" "--clean PID"
rc=0
timeout 10 "$SV" stats "$cli_pid" >"$out" 2>"$err" || rc=$?
[ $rc = 1 ] && grep -q "no counters for pid $cli_pid" "$err" ||
	fail "after --clean: exit $rc, $(cat "$err")"
rc=0
timeout 10 "$SV" stats --watch 0.1 --count 1 "$cli_pid" >"$out" 2>"$err" || rc=$?
[ $rc = 1 ] && grep -q "no counters for pid $cli_pid" "$err" ||
	fail "--watch of a pid without counters: exit $rc, $(cat "$err")"
cli_pid=

# --- a damaged segment: named, not shown, the listing goes on ----------------
reg=$("$SV" devices 2>/dev/null | sed -n 's/.*(registry \(\/dev\/shm\/[^)]*\)).*/\1/p' | head -1)
if [ "$MODE" = shm ] && [ -d "$reg" ]; then
	sh -c 'exit 0' &
	dead=$!
	wait $dead
	head -c 70000 /dev/urandom >"$reg/stats.$dead"
	rc=0
	timeout 10 "$SV" stats "$dead" >"$out" 2>"$err" || rc=$?
	[ $rc = 1 ] || fail "a damaged segment: exit $rc, not 1"
	grep -q "stats\.$dead: not a softverbs counter segment" "$err" ||
		fail "a damaged segment: $(cat "$err")"
	[ -s "$out" ] && fail "a damaged segment was shown: $(head -3 "$out")"
	timeout 10 "$SV" stats >"$out" 2>"$err" || fail "the listing beside a damaged segment exited $?"
	grep -q "stats\.$dead: not a softverbs counter segment" "$err" ||
		fail "the listing did not name the damaged segment"
	run_ok 10 "$SV" stats --clean "$dead"
	[ -e "$reg/stats.$dead" ] && fail "--clean left the damaged segment of a dead pid"
	rm -f "$reg/stats.$dead"
fi
finish
