#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The between-hosts section of `make bench` (issue #20): softverbs' UDP
path where two hosts or two containers talk, against the kernel on the
same link in the same run.

    netns.py BUILD_DIR

Two network namespaces joined by a veth pair stand for two hosts (server
in one, pinned to one core; client in the other, pinned to the other).
At each MTU (1500 and 9000), every repeat runs, one after the other:

  perftest through softverbs: ib_write_bw, ib_read_bw, ib_send_bw at
  64 KiB and 1 MiB (-D), ib_send_bw and ib_write_bw at 8 B with 1 and 8
  QPs (-q 8: message rate), ib_send_lat and ib_write_lat at 8 B; the
  client's CPU per GiB in ib_write_bw 1 MiB; bench/udp_rate.c, the
  kernel's UDP packet rate on the same veth, the message rate's anchor
  (issue #36: one socket each way, 16-byte datagrams, sendmmsg and
  recvmmsg batches of 64, datagrams received per second);
  iperf3 TCP, one stream (and its client's CPU per GiB); sockperf UDP
  ping-pong at 16 B, non-blocking (--nonblocked: both spin on recvfrom)
  and blocking (both sleep in recvfrom), and blocking once more with a
  busy loop sharing each side's core (ib_write_lat's two sides spin on
  their memory, so softverbs' threads are woken on busy cores, where
  sockperf's blocking ends sleep on idle ones: this row is what such
  wake-ups cost on the host, ib_write_lat's anchor, issue #36); and
  bench/udp_floor.c, what the
  kernel alone charges ib_send_lat's exchange: one datagram each way on
  a plain socket (sockperf's), on softverbs' socket setup, and on that
  setup with each answer carrying its ACK in the same send, as an RC
  SEND whose completion is awaited must (no RDMA work at all; the last,
  ib_send_lat's anchor).  Each latency test runs right before its
  anchor, and its target is the median of each repeat's ratio.

First, what many connections cost (bench/setup_cost.c, in one process,
on the shm path and on UDP, SOFTVERBS_FASTPATH=0): 10,000 RC QPs, each
with a CQ of its own, connected in pairs (INIT->RTR per QP), the resident
memory they add per QP, and 10,000 more CQs created and destroyed (the
reap).

Then, at MTU 1500, under 1% and 10% random UDP loss (nftables in the
client's namespace, both directions): ib_write_bw 1 MiB and iperf3 (TCP
loss is dropped with the same rule's rate, on TCP).

Last, sharing a bottleneck (a token bucket, tc tbf, at
BENCH_NETNS_SHARE_RATE, default 500mbit, on both ends of the veth):
ib_write_bw 1 MiB and one iperf3 TCP stream started together, each one's
MiB/s while both run (iperf3's 1 s intervals inside perftest's measured
window) and softverbs' share of their sum: how the congestion window
backs off beside TCP's.  A figure, not a target.

Latencies are one-way (half a round trip), as both tools print them; the
figure is the median of the repeats, with min-max.  CPU per GiB: the
client's process tree's user+system time between two samples inside the
measured window, divided by the bytes the run's average rate moves in that
window.  Results: OUT/netns.md and OUT/netns.csv (OUT: BENCH_OUT or
bench/results; BENCH_QUICK=1: 1 repeat, MTU 1500 only, bench/results/quick).
Needs root (ip netns, nftables); prints why and exits 0 otherwise.

Environment: BENCH_QUICK, BENCH_REPEATS, BENCH_CPUS, BENCH_OUT as in
bench.py; BENCH_NETNS_MTUS=1500,9000; BENCH_NETNS_LOSS=1,10 (0: none);
BENCH_NETNS_SHARE_RATE=500mbit (empty: no sharing run);
BENCH_NETNS_ONLY=series,... runs only those (e.g. ib_write_bw,iperf3 TCP;
an item ending in * takes every series it begins: udp_floor* for the
three floors, whose names hold commas).
The namespaces' names carry this process's ID, so two runs (two
worktrees) do not tear down each other's."""
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402  (the suite's parsers and process helpers)

NS = ("svbench-a-%d" % os.getpid(), "svbench-b-%d" % os.getpid())
ADDR = ("10.233.0.1", "10.233.0.2")
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SETUP_QPS = 10000
# bench/udp_floor's modes and their series: the kernel's part of a one-way
# trip of ib_send_lat over UDP.
# sockperf's blocking ping-pong with a busy loop on the server's core.
BUSY_BLOCKING = "sockperf UDP blocking (cores busy)"
# Runs "$0" "$@" beside a busy loop on its core (the pinning is
# inherited), and stops the loop when it ends.
BESIDE_LOOP = ["sh", "-c", '(while :; do :; done) & loop=$!; "$0" "$@"; '
               'status=$?; kill $loop; exit $status']
# bench/udp_rate: the anchor of the 8-byte message rates, and those rates'
# series: (series, tool, QPs).
UDP_RATE = "kernel UDP rate (udp_rate)"
RATES = (("ib_send_bw", "ib_send_bw", 1), ("ib_write_bw", "ib_write_bw", 1),
         ("ib_send_bw -q 8", "ib_send_bw", 8),
         ("ib_write_bw -q 8", "ib_write_bw", 8))
# Issue #36's targets: at least this times the anchor, by QPs.
RATE_WANT = {1: 1.0, 8: 1.5}
FLOORS = (("plain", "udp_floor: plain socket"),
          ("one", "udp_floor: softverbs' socket"),
          ("ack", "udp_floor: softverbs' socket, answer + ACK"))
# Issue #20's targets for many connections: (setup_cost key, what, limit,
# unit).
SETUP_TARGETS = [
    ("rtr_us", "RTR per QP, 10,000 RC QPs", 20, "us"),
    ("rss_per_qp_kib", "memory per idle connected QP", 32, "KiB"),
    ("cq_reap_ms", "10,000 CQs reaped", 100, "ms"),
]


def sh(*cmd, check=True, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and res.returncode:
        raise B.RunError("%s: %s" % (" ".join(cmd), res.stderr.strip()))
    return res


def usable():
    if os.geteuid() != 0:
        return "not root (ip netns and nftables need it)"
    for tool in ("ip", "nft", "iperf3", "sockperf", "ib_write_bw"):
        if not shutil.which(tool):
            return "%s not installed" % tool
    return None


def setup():
    teardown()
    for ns in NS:
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", "sv0", "netns", NS[0], "type", "veth", "peer",
       "name", "sv0", "netns", NS[1])
    for ns, addr in zip(NS, ADDR):
        sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", "sv0")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "link", "set", "sv0", "up")


def set_mtu(mtu):
    for ns in NS:
        sh("ip", "-n", ns, "link", "set", "sv0", "mtu", str(mtu))


def set_loss(pct):
    """pct% of UDP and TCP packets dropped at random, both directions, in
    the client's namespace (0: no rule)."""
    sh("ip", "netns", "exec", NS[1], "nft", "delete", "table", "inet",
       "svloss", check=False)
    if not pct:
        return
    rules = "\n".join(
        "chain %s { type filter hook %s priority 0; policy accept; "
        "meta l4proto { udp, tcp } numgen random mod 100 < %d drop; }"
        % (name, hook, pct) for name, hook in (("in", "input"),
                                              ("out", "output")))
    sh("ip", "netns", "exec", NS[1], "nft", "-f", "-",
       input="table inet svloss {\n%s\n}\n" % rules)


def set_rate(rate):
    """A token bucket of rate (tc tbf, e.g. 500mbit) on both ends of the
    veth (None: none); what would wait more than 20 ms is dropped."""
    for ns in NS:
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "sv0",
           "root", check=False)
        if rate:
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "sv0",
               "root", "tbf", "rate", rate, "burst", "16kb", "latency",
               "20ms")


def teardown():
    for ns in NS:
        pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        sh("ip", "netns", "del", ns, check=False)


def gid_index(softverbs, ns, addr):
    out = sh("ip", "netns", "exec", ns, softverbs, "devices").stdout
    m = re.search(r"GID\[\s*(\d+)\]\s+::ffff:%s\s" % re.escape(addr), out)
    if not m:
        raise B.RunError("no GID for %s in %s:\n%s" % (addr, ns, out))
    return m.group(1)


def tree_cpu(pid):
    """User+system seconds of pid and its descendants (alive ones)."""
    kids, total = {}, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        f = s[s.rindex(")") + 2:].split()
        stats[int(d)] = (int(f[1]), (int(f[11]) + int(f[12])) / tick)
    for p, (ppid, _) in stats.items():
        kids.setdefault(ppid, []).append(p)
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += stats[p][1]
        todo += kids.get(p, [])
    return total


def listening(ns_pid, port, proto):
    """Whether the server's namespace (that of ns_pid) has port bound."""
    for name in (proto, proto + "6"):
        try:
            with open("/proc/%d/net/%s" % (ns_pid, name)) as f:
                next(f)
                for line in f:
                    fl = line.split()
                    if int(fl[1].rsplit(":", 1)[1], 16) == port and \
                            (proto == "udp" or fl[3] == "0A"):
                        return True
        except OSError:
            return False
    return False


class Netns:
    def __init__(self, build):
        env = os.environ
        B.section_settings(self, "raw-netns")
        self.softverbs = os.path.join(os.path.abspath(build), "bin",
                                      "softverbs")
        self.setup_cost = os.path.join(os.path.abspath(build), "bench",
                                       "setup_cost")
        self.udp_floor = os.path.join(os.path.abspath(build), "bench",
                                      "udp_floor")
        self.udp_rate = os.path.join(os.path.abspath(build), "bench",
                                     "udp_rate")
        self.mtus = [int(m) for m in (env.get("BENCH_NETNS_MTUS") or
                     ("1500" if self.quick else "1500,9000")).split(",")]
        self.losses = [int(p) for p in
                       (env.get("BENCH_NETNS_LOSS") or "1,10").split(",")
                       if int(p)]
        self.share_rate = env.get("BENCH_NETNS_SHARE_RATE", "500mbit")
        only = env.get("BENCH_NETNS_ONLY")
        self.only = set(only.split(",")) if only else None
        self.seconds = 2 if self.quick else 4  # -D / -t of bandwidth runs
        self.port = 21000
        self.rows = []

    def next_port(self):
        self.port += 1
        return self.port

    def pair(self, tag, server, client, port, proto="tcp",
             server_exits=True, cpu_window=None):
        """Server in NS[0] on one core, client in NS[1] on the other; returns
        the client's output and, with cpu_window (t0, t1 seconds after the
        client started), its process tree's CPU seconds in that window."""
        srv_cmd = ["ip", "netns", "exec", NS[0], "taskset", "-c",
                   self.cpus[0]] + server
        cli_cmd = ["ip", "netns", "exec", NS[1], "taskset", "-c",
                   self.cpus[1]] + client
        slog = os.path.join(self.raw, tag + ".server.txt")
        clog = os.path.join(self.raw, tag + ".client.txt")
        with open(os.path.join(self.raw, tag + ".cmd.txt"), "w") as f:
            f.write("server: %s\nclient: %s\n" % (" ".join(srv_cmd),
                                                  " ".join(cli_cmd)))
        with open(slog, "w") as so:
            srv = subprocess.Popen(srv_cmd, stdout=so,
                                   stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        cpu = None
        try:
            deadline = time.monotonic() + 20
            while not listening(srv.pid, port, proto):
                if srv.poll() is not None:
                    raise B.RunError("server exited before listening: " +
                                     B.tail(slog))
                if time.monotonic() > deadline:
                    raise B.RunError("server not listening after 20 s")
                time.sleep(0.02)
            t = time.monotonic()
            with open(clog, "w") as co:
                cli = subprocess.Popen(cli_cmd, stdout=co,
                                       stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            if cpu_window:
                time.sleep(max(0, t + cpu_window[0] - time.monotonic()))
                c0, w0 = tree_cpu(cli.pid), time.monotonic()
                time.sleep(max(0, t + cpu_window[1] - time.monotonic()))
                c1, w1 = tree_cpu(cli.pid), time.monotonic()
                if cli.poll() is None:
                    cpu = (c1 - c0, w1 - w0)
            try:
                rc = cli.wait(timeout=60)
            except subprocess.TimeoutExpired:
                B.kill_group(cli)
                raise B.RunError("client did not finish within 60 s")
            if server_exits:
                try:
                    src = srv.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    raise B.RunError("server did not finish")
            else:
                src = 0
        finally:
            B.kill_group(srv)
        out = open(clog, errors="replace").read()
        if rc or src:
            raise B.RunError("exit status client %d server %d: %s" %
                             (rc, src, B.tail(clog) or B.tail(slog)))
        return out, cpu

    def perftest(self, tag, tool, size, bw, gids, cpu=False, qps=1):
        port = self.next_port()
        common = ["-d", "softverbs0", "-p", str(port), "-s", str(size)]
        if qps > 1:
            common += ["-q", str(qps)]
        if bw:
            common += ["-D", str(self.seconds)]
        else:
            common += ["-n", "2000"]
        server = [self.softverbs, "run", "--", tool, "-x", gids[0]] + common
        client = [self.softverbs, "run", "--", tool, "-x", gids[1]] + \
            common + [ADDR[0]]
        # perftest -D measures for its duration after a warm-up; the
        # client lives about duration + 1.5 s: sample the CPU inside.
        window = (1.5, self.seconds + 0.5) if cpu else None
        out, c = self.pair(tag, server, client, port, cpu_window=window)
        fig = (B.parse_perftest_bw if bw else B.parse_perftest_lat)(out)
        if cpu and c:
            fig["cpu_gib"] = c[0] / (fig["bw"] * MiB * c[1] / GiB)
        return fig

    def iperf3(self, tag, cpu=False):
        port = self.next_port()
        out, c = self.pair(
            tag, ["iperf3", "-s", "-1", "-B", ADDR[0], "-p", str(port)],
            ["iperf3", "-c", ADDR[0], "-p", str(port), "-t",
             str(self.seconds), "-J"], port,
            cpu_window=(1.0, self.seconds - 0.5) if cpu else None)
        fig = B.parse_iperf3(out)
        if cpu and c:
            fig["cpu_gib"] = c[0] / (fig["bw"] * MiB * c[1] / GiB)
        return fig

    def sockperf(self, tag, spin, busy=False):
        """busy: a shell loop shares each side's core (BESIDE_LOOP)."""
        port = self.next_port()
        mode = ["--nonblocked"] if spin else []
        server = ["sockperf", "sr", "-i", ADDR[0], "-p", str(port)] + mode
        client = ["sockperf", "pp", "-i", ADDR[0], "-p", str(port), "-m",
                  "16", "-t", "2"] + mode
        if busy:
            server, client = BESIDE_LOOP + server, BESIDE_LOOP + client
        out, _ = self.pair(tag, server, client, port, proto="udp",
                           server_exits=False)
        return B.parse_sockperf(out)

    def floor(self, tag, mode):
        """bench/udp_floor MODE: its one-way median (lat)."""
        port = self.next_port()
        out, _ = self.pair(
            tag, [self.udp_floor, mode, "server", str(port)],
            [self.udp_floor, mode, "client", str(port), ADDR[0]], port,
            proto="udp", server_exits=False)
        kv = B.parse_kv(out, "median_us")
        if not kv:
            raise B.RunError("no udp_floor median")
        return {"lat": float(kv["median_us"])}

    def rate(self, tag):
        """bench/udp_rate: datagrams/s the server received (rate, in
        millions, as perftest's message rate)."""
        port = self.next_port()
        self.pair(tag, [self.udp_rate, "server", str(port)],
                  [self.udp_rate, "client", str(port), ADDR[0],
                   str(self.seconds)], port, proto="udp")
        out = open(os.path.join(self.raw, tag + ".server.txt"),
                   errors="replace").read()
        return {"rate": float(B.parse_kv(out, "rate")["rate"])}

    def setup(self, tag, path):
        """bench/setup_cost with SETUP_QPS QPs and as many CQs, on the shm
        path or UDP, pinned to the server's core: its key=value line."""
        env = dict(os.environ)
        if path == "udp":
            env["SOFTVERBS_FASTPATH"] = "0"
        cmd = ["taskset", "-c", self.cpus[0], self.softverbs, "run", "--",
               self.setup_cost, str(SETUP_QPS), str(SETUP_QPS)]
        log = os.path.join(self.raw, tag + ".txt")
        res = subprocess.run(cmd, capture_output=True, text=True, env=env,
                             timeout=120)
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + res.stdout + res.stderr)
        if res.returncode:
            raise B.RunError("setup_cost: " + B.tail(log))
        kv = dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)
        return {k: float(kv[k]) for k in ("rtr_us", "rss_per_qp_kib",
                                          "cq_reap_ms", "poll_empty_ns")
                if k in kv}

    def share(self, cond, rep, gids):
        """ib_write_bw 1 MiB and an iperf3 TCP stream started together
        through the bottleneck: two rows, each one's MiB/s while both ran,
        and softverbs' share of the sum."""
        tag = B.slug("%s share r%d" % (cond, rep))
        pt, tcp, res = self.next_port(), self.next_port(), {}

        def iperf():
            try:
                out, _ = self.pair(
                    tag + "-tcp", ["iperf3", "-s", "-1", "-B", ADDR[0], "-p",
                                   str(tcp)],
                    ["iperf3", "-c", ADDR[0], "-p", str(tcp), "-t",
                     str(self.seconds + 3), "-J"], tcp)
                data = json.loads(out[out.index("{"):])
                # perftest measures from about 1.5 s after its start for
                # self.seconds: iperf3's intervals inside that.
                bps = [i["sum"]["bits_per_second"] for i in data["intervals"]
                       if i["sum"]["start"] >= 1.5 and
                       i["sum"]["end"] <= self.seconds + 2]
                res["tcp"] = statistics.mean(bps) / 8 / MiB
            except (B.RunError, ValueError, KeyError,
                    statistics.StatisticsError) as e:
                res["tcp_err"] = str(e)
        th = threading.Thread(target=iperf)
        th.start()
        common = ["-d", "softverbs0", "-p", str(pt), "-s", str(MiB), "-D",
                  str(self.seconds)]
        try:
            out, _ = self.pair(
                tag + "-ib",
                [self.softverbs, "run", "--", "ib_write_bw", "-x", gids[0]] +
                common,
                [self.softverbs, "run", "--", "ib_write_bw", "-x", gids[1]] +
                common + [ADDR[0]], pt)
            ib, status = B.parse_perftest_bw(out)["bw"], "ok"
        except B.RunError as e:
            ib, status = None, "failed: %s" % e
        th.join()
        tcp_bw = res.get("tcp")
        figs = {"ib_write_bw (beside iperf3)": {} if ib is None else
                {"bw": ib},
                "iperf3 TCP (beside ib_write_bw)": {} if tcp_bw is None else
                {"bw": tcp_bw}}
        if ib is not None and tcp_bw is not None and ib + tcp_bw:
            figs["ib_write_bw (beside iperf3)"]["share"] = ib / (ib + tcp_bw)
        for name, fig in figs.items():
            st = status if name.startswith("ib") else \
                ("ok" if tcp_bw is not None else
                 "failed: %s" % res.get("tcp_err"))
            self.rows.append({"cond": cond, "name": name, "size": MiB if
                              name.startswith("ib") else 0, "rep": rep,
                              "fig": fig, "status": st})
            print("netns: %-14s %-28s run %d: %s" % (
                cond, name, rep, " ".join("%s=%.4g" % kv for kv in
                                         fig.items()) or st), flush=True)

    def record(self, cond, name, size, rep, fn):
        if self.only is not None and name not in self.only and not any(
                o.endswith("*") and name.startswith(o[:-1])
                for o in self.only):
            return
        tag = B.slug("%s %s %s r%d" % (cond, name, B.fmt_size(size), rep))
        t = time.monotonic()
        try:
            fig, status = fn(tag), "ok"
        except B.RunError as e:
            fig, status = {}, "failed: %s" % e
        print("netns: %-14s %-28s %-7s run %d: %s (%.1f s)" % (
            cond, name, B.fmt_size(size), rep,
            " ".join("%s=%.4g" % kv for kv in fig.items()) or status,
            time.monotonic() - t), flush=True)
        self.rows.append({"cond": cond, "name": name, "size": size,
                          "rep": rep, "fig": fig, "status": status})

    def run(self):
        os.makedirs(self.raw, exist_ok=True)
        for rep in range(1, self.repeats + 1):
            for path in ("shm", "udp"):
                self.record("setup " + path, "setup_cost", 0, rep,
                            lambda tag, p=path: self.setup(tag, p))
        setup()
        try:
            for mtu in self.mtus:
                set_mtu(mtu)
                set_loss(0)
                gids = (gid_index(self.softverbs, NS[0], ADDR[0]),
                        gid_index(self.softverbs, NS[1], ADDR[1]))
                cond = "mtu %d" % mtu
                for rep in range(1, self.repeats + 1):
                    self.one_pass(cond, rep, gids)
            set_mtu(1500)
            gids = (gid_index(self.softverbs, NS[0], ADDR[0]),
                    gid_index(self.softverbs, NS[1], ADDR[1]))
            for pct in self.losses:
                set_loss(pct)
                cond = "mtu 1500 loss %d%%" % pct
                for rep in range(1, self.repeats + 1):
                    self.record(cond, "ib_write_bw", MiB, rep,
                                lambda tag: self.perftest(
                                    tag, "ib_write_bw", MiB, True, gids))
                    self.record(cond, "iperf3 TCP", 0, rep,
                                lambda tag: self.iperf3(tag))
            set_loss(0)
            if self.share_rate:
                set_rate(self.share_rate)
                cond = "mtu 1500 rate %s" % self.share_rate
                for rep in range(1, self.repeats + 1):
                    self.share(cond, rep, gids)
                set_rate(None)
        finally:
            teardown()
        self.write()

    def one_pass(self, cond, rep, gids):
        for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
            for size in (64 * KiB, MiB):
                cpu = tool == "ib_write_bw" and size == MiB
                self.record(cond, tool, size, rep,
                            lambda tag, t=tool, z=size, c=cpu:
                            self.perftest(tag, t, z, True, gids, cpu=c))
        for name, tool, qps in RATES:
            self.record(cond, name, 8, rep,
                        lambda tag, t=tool, q=qps: self.perftest(
                            tag, t, 8, True, gids, qps=q))
        self.record(cond, UDP_RATE, 16, rep, lambda tag: self.rate(tag))
        # Each latency test right beside its target's anchor: the host
        # moves between slow and fast phases within minutes, and the
        # targets take the ratio of each repeat's pair (targets).
        self.record(cond, "ib_send_lat", 8, rep, lambda tag:
                    self.perftest(tag, "ib_send_lat", 8, False, gids))
        for mode, name in FLOORS:
            self.record(cond, name, 0, rep,
                        lambda tag, m=mode: self.floor(tag, m))
        self.record(cond, "ib_write_lat", 8, rep, lambda tag:
                    self.perftest(tag, "ib_write_lat", 8, False, gids))
        self.record(cond, BUSY_BLOCKING, 16, rep,
                    lambda tag: self.sockperf(tag, False, busy=True))
        self.record(cond, "iperf3 TCP", 0, rep,
                    lambda tag: self.iperf3(tag, cpu=True))
        self.record(cond, "sockperf UDP non-blocking", 16, rep,
                    lambda tag: self.sockperf(tag, True))
        self.record(cond, "sockperf UDP blocking", 16, rep,
                    lambda tag: self.sockperf(tag, False))

    # ---- results ---------------------------------------------------------

    def figure(self, cond, name, size, metric):
        """(median, min, max) of a metric over the repeats, or None."""
        vals = [r["fig"][metric] for r in self.rows
                if (r["cond"], r["name"], r["size"]) == (cond, name, size)
                and metric in r["fig"]]
        if not vals:
            return None
        return statistics.median(vals), min(vals), max(vals)

    def paired(self, cond, a, b, metric="lat"):
        """The median over the repeats of each repeat's ratio a / b
        (a, b: (series, size)), or None: the two ran one after the other
        in each repeat, so the host's phase cancels out."""
        def by_rep(name, size):
            return {r["rep"]: r["fig"][metric] for r in self.rows
                    if (r["cond"], r["name"], r["size"]) == (cond, name, size)
                    and metric in r["fig"]}
        x, y = by_rep(*a), by_rep(*b)
        ratios = [x[k] / y[k] for k in x if k in y and y[k]]
        return statistics.median(ratios) if ratios else None

    def targets(self):
        """Issue #20's done-when rows: (what, figure, anchor, ratio, want,
        met)."""
        rows = []

        def at_most(what, a, limit, unit):
            rows.append((what, a, None, None, "<= %g %s" % (limit, unit),
                         a is not None and a[0] <= limit))
        for path in ("shm", "udp"):
            cond = "setup " + path
            for metric, what, limit, unit in SETUP_TARGETS:
                at_most("%s: %s" % (cond, what),
                        self.figure(cond, "setup_cost", 0, metric),
                        limit, unit)

        def add(what, a, b, want, higher, r=None):
            if a is None or b is None or not b[0]:
                rows.append((what, a, b, None, want, False))
                return
            r = a[0] / b[0] if r is None else r
            rows.append((what, a, b, r, want,
                         r >= want if higher else r <= want))
        for mtu in self.mtus:
            cond = "mtu %d" % mtu
            tcp = self.figure(cond, "iperf3 TCP", 0, "bw")
            for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
                add("%s: %s 1 MiB / iperf3 TCP" % (cond, tool),
                    self.figure(cond, tool, MiB, "bw"), tcp, 1.0, True)
            # Issue #36: ib_send_lat against the kernel's conformant
            # floor (the answer carries the ACK), ib_write_lat against
            # sockperf's blocking ping-pong beside a busy loop on each
            # core (each side of it spins on memory); the ratio is the
            # median of each repeat's.
            floor = FLOORS[-1][1]
            add("%s: ib_send_lat 8 B / %s" % (cond, floor),
                self.figure(cond, "ib_send_lat", 8, "lat"),
                self.figure(cond, floor, 0, "lat"), 1.3, False,
                self.paired(cond, ("ib_send_lat", 8), (floor, 0)))
            add("%s: ib_write_lat 8 B / %s" % (cond, BUSY_BLOCKING),
                self.figure(cond, "ib_write_lat", 8, "lat"),
                self.figure(cond, BUSY_BLOCKING, 16, "lat"), 1.3, False,
                self.paired(cond, ("ib_write_lat", 8), (BUSY_BLOCKING, 16)))
            add("%s: CPU per GiB, ib_write_bw 1 MiB / iperf3" % cond,
                self.figure(cond, "ib_write_bw", MiB, "cpu_gib"),
                self.figure(cond, "iperf3 TCP", 0, "cpu_gib"), 1.5, False)
            anchor = self.figure(cond, UDP_RATE, 16, "rate")
            for name, tool, qps in RATES:
                add("%s: %s 8 B, %d QP%s / kernel UDP rate" % (
                    cond, tool, qps, "s" if qps > 1 else ""),
                    self.figure(cond, name, 8, "rate"), anchor,
                    RATE_WANT[qps], True)
        base = self.figure("mtu 1500", "ib_write_bw", MiB, "bw")
        for pct in self.losses:
            cond = "mtu 1500 loss %d%%" % pct
            fig = self.figure(cond, "ib_write_bw", MiB, "bw")
            if pct == 1:
                add("loss 1%: ib_write_bw 1 MiB / loss-free", fig, base,
                    0.5, True)
            else:
                done = [r for r in self.rows if r["cond"] == cond and
                        r["name"] == "ib_write_bw"]
                ok = bool(done) and all(r["status"] == "ok" for r in done)
                rows.append(("loss %d%%: ib_write_bw 1 MiB completes" % pct,
                             fig, None, None, "completes", ok))
        return rows

    def write(self):
        units = {"bw": "MiB/s", "rate": "Mmsg/s", "lat": "us",
                 "rtr_us": "us", "rss_per_qp_kib": "KiB", "cq_reap_ms": "ms",
                 "poll_empty_ns": "ns",
                 "lat_avg": "us", "cpu_gib": "CPU s/GiB",
                 "share": "of the sum"}
        with open(os.path.join(self.out, "netns.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["condition", "series", "size", "run", "metric",
                        "value", "unit", "status"])
            for r in self.rows:
                for m, v in (r["fig"].items() or [(None, None)]):
                    w.writerow([r["cond"], r["name"], r["size"], r["rep"], m,
                                "" if v is None else "%.6g" % v,
                                units.get(m, ""), r["status"]])

        def cell(f, unit=""):
            if f is None:
                return "-"
            return "%.4g%s (%.4g-%.4g)" % (f[0], unit, f[1], f[2])
        md = ["# softverbs between two network namespaces (veth)", "",
              "`bench/netns.py` (part of `make bench`): server and client "
              "in two network namespaces joined by a veth pair, pinned to "
              "cores %s and %s; median of %d run(s), (min-max); latencies "
              "one-way. Load average at the end: %s." % (
                  self.cpus[0], self.cpus[1], self.repeats,
                  " ".join("%.2f" % x for x in os.getloadavg())), "",
              "## Targets (issues #20 and #36)", "",
              "| target | softverbs | anchor | ratio | wanted | met |",
              "|---|---|---|---|---|---|"]
        for what, a, b, r, want, met in self.targets():
            md.append("| %s | %s | %s | %s | %s | %s |" % (
                what, cell(a), cell(b), "-" if r is None else "%.2f" % r,
                want if isinstance(want, str) else
                ("%s %.1fx" % (">=" if "lat" not in what and "CPU" not in
                               what else "<=", want)),
                "yes" if met else "**no**"))
        md += ["", "## Small messages' rate against the kernel's", "",
               "bench/udp_rate.c: one UDP socket each way on the same "
               "veth, 16-byte datagrams sent by sendmmsg and received by "
               "recvmmsg in batches of 64, both sides busy-polling: "
               "millions of datagrams received per second, beside "
               "perftest's 8-byte message rates (one datagram carries "
               "one RoCE packet; softverbs puts several in one "
               "UDP_SEGMENT send, docs/engine.md, \"Batched posts\").", "",
               "| condition | series | Mmsg/s | / kernel UDP rate |",
               "|---|---|---|---|"]
        for mtu in self.mtus:
            cond = "mtu %d" % mtu
            anchor = self.figure(cond, UDP_RATE, 16, "rate")
            for name, size in [(UDP_RATE, 16)] + [(n, 8) for n, _, _ in
                                                  RATES]:
                f = self.figure(cond, name, size, "rate")
                md.append("| %s | %s | %s | %s |" % (
                    cond, name, cell(f), "%.2f" % (f[0] / anchor[0])
                    if f and anchor and anchor[0] else "-"))
        md += ["", "## ib_send_lat's floor in the kernel", "",
               "bench/udp_floor.c: the same exchange with no RDMA work, "
               "both sides busy-polling, against sockperf's non-blocking "
               "ping-pong in the same run. perftest's latency tests signal "
               "every send, and an RC completion needs its ACK, so each "
               "answer carries one (softverbs sends both in one "
               "UDP_SEGMENT send): the last row is what the kernel alone "
               "charges an IBA-conformant exchange over UDP.", "",
               "| condition | series | one-way | / sockperf non-blocking |",
               "|---|---|---|---|"]
        for mtu in self.mtus:
            cond = "mtu %d" % mtu
            sp = self.figure(cond, "sockperf UDP non-blocking", 16, "lat")
            for name in ["ib_send_lat"] + [n for _, n in FLOORS]:
                f = self.figure(cond, name, 8 if name == "ib_send_lat"
                                else 0, "lat")
                md.append("| %s | %s | %s | %s |" % (
                    cond, name, cell(f, " us"),
                    "%.2f" % (f[0] / sp[0]) if f and sp and sp[0] else "-"))
        md += ["", "## ib_write_lat's wake-up on a busy core", "",
               "Each side of ib_write_lat spins on its own memory, so the "
               "WRITE that ends each wait is received by softverbs' "
               "progress thread, woken on a core that side keeps busy; "
               "sockperf's blocking ends sleep on idle ones. The last row "
               "runs sockperf's blocking ping-pong with a busy loop "
               "sharing each side's core: what such wake-ups cost on "
               "this host.", "",
               "| condition | series | one-way | / sockperf blocking "
               "| / the same, cores busy |",
               "|---|---|---|---|---|"]

        def ratio(f, g):
            return "%.2f" % (f[0] / g[0]) if f and g and g[0] else "-"
        for mtu in self.mtus:
            cond = "mtu %d" % mtu
            sb = self.figure(cond, "sockperf UDP blocking", 16, "lat")
            busy = self.figure(cond, BUSY_BLOCKING, 16, "lat")
            for name, size in (("ib_write_lat", 8),
                               ("sockperf UDP blocking", 16),
                               (BUSY_BLOCKING, 16)):
                f = self.figure(cond, name, size, "lat")
                md.append("| %s | %s | %s | %s | %s |" % (
                    cond, name, cell(f, " us"), ratio(f, sb),
                    ratio(f, busy)))
        md += ["", "## Every figure", "",
               "| condition | series | size | metric | median (min-max) |",
               "|---|---|---|---|---|"]
        seen = []
        for r in self.rows:
            key = (r["cond"], r["name"], r["size"])
            if key in seen:
                continue
            seen.append(key)
            metrics = sorted({m for x in self.rows if (x["cond"], x["name"],
                              x["size"]) == key for m in x["fig"]})
            fails = [x["status"] for x in self.rows if (x["cond"], x["name"],
                     x["size"]) == key and x["status"] != "ok"]
            for m in metrics or ["-"]:
                md.append("| %s | %s | %s | %s | %s |" % (
                    r["cond"], r["name"], B.fmt_size(r["size"]), m,
                    cell(self.figure(*key, m), " " + units.get(m, ""))
                    if m != "-" else "failed"))
            for s in fails:
                md.append("| %s | %s | %s | | %s |" % (
                    r["cond"], r["name"], B.fmt_size(r["size"]), s[:200]))
        with open(os.path.join(self.out, "netns.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        print("netns: results in %s" % os.path.join(self.out, "netns.md"))


def main():
    if len(sys.argv) != 2:
        print("usage: netns.py BUILD_DIR", file=sys.stderr)
        return 2
    why = usable()
    if why:
        print("netns: between-namespaces section skipped: %s" % why)
        return 0
    Netns(sys.argv[1]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
