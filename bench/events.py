#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The event-mode section of `make bench` (issue #35): applications that
sleep on completion channels (ibv_req_notify_cq + ibv_get_cq_event) rather
than poll, against the kernel's blocking sockets and the same tools
polling, in the same run.

    events.py BUILD_DIR

One host (the shm fast path between two processes, loopback for the
socket anchor), each pair pinned to the two cores (BENCH_CPUS):

  perftest through softverbs with -e (the application sleeps on its
  channel) and without (it polls): ib_send_bw, ib_read_bw at
  64 KiB and 1 MiB (-n: perftest refuses -D with -e), ib_send_lat 8 B
  (20,000 iterations); ib_write_bw is not there: perftest refuses -e for
  WRITE ("Events feature not available on WRITE verb"), the target waiting
  for nothing; sockperf's blocking UDP
  ping-pong (both ends sleep in recvfrom) at 16 B;
  qperf (-cm1: its connection through rdma_cm, which gives the address a
  GRH) rc_lat, rc_bw, rc_rdma_read_bw, rc_compare_swap_mr in its default
  mode (it waits on the completion queues) and with -cp1 (it polls).

Two network namespaces joined by veth (softverbs' UDP path, as
bench/netns.py sets them up; needs root): the same perftest rows, and
sockperf's blocking ping-pong on the veth.

Ratios: an event-mode latency over sockperf blocking on the same path
(target <= 1.3), an event-mode bandwidth or rate over the same tool
polling (target >= 0.9), each a ratio of medians.  Every repeat runs
every row once, in the same order, so the anchor of a ratio is measured
minutes from it at most.  Latencies are one-way (half a round trip) and
the median of each run (perftest's t_typical, sockperf's median), with
the mean on a row of its own ("us (mean)": t_avg, avg-latency); qperf
prints only its mean, so its rc_lat is held to sockperf's mean; bandwidth
MiB/s (qperf's decimal MB/s converted), rate in thousands of
operations/s.

Environment: BENCH_REPEATS (default 3, quick 1), BENCH_CPUS, BENCH_OUT,
BENCH_QUICK as in bench.py; BENCH_EVENTS_ONLY=word,... runs only the rows
whose name holds one of the words; BENCH_EVENTS_NETNS=0 skips the
namespaces; BENCH_BASE=DIR (another build's directory) runs every
softverbs row through that build too, right after this build's, as
"ROW @LABEL" (BENCH_BASE_LABEL, default: its commit).  Results:
OUT/events.md, OUT/events.csv, raw logs in OUT/raw-events."""
import csv
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402
import netns as N  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
BW_SIZES = (64 * KiB, MiB)
EV_TOOLS = ("ib_send_bw", "ib_read_bw")
# (event-mode row, anchor row, kind): lat rows want <= 1.3x, bw/rate >= 0.9x.
LAT_TARGET, BW_TARGET = 1.3, 0.9


def parse_qperf(out):
    """qperf's one figure: latency (us, one-way), bw (MiB/s) or msg_rate
    (K/s)."""
    m = re.search(r"latency\s*=\s*([0-9.]+)\s*(ns|us|ms|sec)", out)
    if m:
        scale = {"ns": 1e-3, "us": 1, "ms": 1e3, "sec": 1e6}[m.group(2)]
        return {"lat": float(m.group(1)) * scale}
    m = re.search(r"bw\s*=\s*([0-9.]+)\s*(KB|MB|GB)/sec", out)
    if m:
        scale = {"KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
        return {"bw": float(m.group(1)) * scale / MiB}
    m = re.search(r"msg_rate\s*=\s*([0-9.]+)\s*(K|M)?/sec", out)
    if m:
        scale = {"K": 1, "M": 1e3, None: 1e-3}[m.group(2)]
        return {"rate": float(m.group(1)) * scale}
    raise B.RunError("no qperf figure")


def ns_usable():
    if os.geteuid() != 0:
        return "not root (ip netns needs it)"
    for tool in ("ip", "sockperf"):
        if not shutil.which(tool):
            return "%s not installed" % tool
    return None


def iters(size):
    """perftest's iterations (-D does not work with -e, so both modes
    run a count): about a second of either at a few GB/s."""
    return 20000 if size <= 64 * KiB else 2000


class Events:
    def __init__(self, build):
        env = os.environ
        B.section_settings(self, "raw-events")
        self.builds = [("", os.path.join(os.path.abspath(build), "bin",
                                         "softverbs"))]
        if env.get("BENCH_BASE"):
            base = os.path.abspath(env["BENCH_BASE"])
            label = env.get("BENCH_BASE_LABEL") or B.commit_of(base) or \
                "base"
            self.builds.append((" @" + label,
                                os.path.join(base, "bin", "softverbs")))
        only = env.get("BENCH_EVENTS_ONLY")
        self.only = only.split(",") if only else None
        self.netns = env.get("BENCH_EVENTS_NETNS", "1") != "0"
        self.seconds = 2  # -D / -t of bandwidth runs
        self.port = 23000
        self.figs = {}  # (path, row) -> [figure dicts]
        self.errors = {}  # (path, row) -> last error
        self.order = []  # (path, row, key, unit) in order of first run

    def next_port(self):
        self.port += 1
        return self.port

    def wanted(self, row):
        return not self.only or any(w in row for w in self.only)

    def record(self, path, row, key, unit, fn):
        if not self.wanted(row):
            return
        k = (path, row)
        if (path, row, key, unit) not in self.order:
            self.order.append((path, row, key, unit))
        tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", "%s-%s-%d" % (
            path, row, len(self.figs.get(k, []))))
        t = time.monotonic()
        try:
            fig = fn(tag)
            self.figs.setdefault(k, []).append(fig)
            print("events: %-9s %-44s %10.2f %s  (%.0f s)" %
                  (path, row, fig[key], unit, time.monotonic() - t),
                  flush=True)
            # A latency tool's mean beside its median: qperf prints only
            # its mean, which only a mean answers.
            if key == "lat" and "lat_avg" in fig and \
                    (path, row, "lat_avg", "us (mean)") not in self.order:
                self.order.insert(self.order.index((path, row, key, unit))
                                  + 1, (path, row, "lat_avg", "us (mean)"))
        except B.RunError as e:
            self.errors[k] = str(e)
            print("events: %-9s %-44s failed: %s" % (path, row, e),
                  flush=True)

    # ---- one host ------------------------------------------------------

    def host_pair(self, tag, server, client, port, proto="tcp",
                  server_exits=True):
        cfg = B.Config.__new__(B.Config)
        cfg.cpu_server, cfg.cpu_client = self.cpus
        cfg.timeout = 60
        cfg.out = self.out
        r = B.Runner(cfg)
        r.raw = self.raw
        try:
            out, _ = r.pair(tag, server, client, {}, port, proto=proto,
                            server_exits=server_exits)
        finally:
            r.end_all()
        return out

    def host_perftest(self, sv, tool, size, event):
        def run(tag):
            port = self.next_port()
            bw = not tool.endswith("_lat")
            common = ["-d", "softverbs0", "-x", self.gid[sv], "-p",
                      str(port), "-s", str(size), "-n", str(iters(size))]
            if event:
                common.append("-e")
            out = self.host_pair(tag, [sv, "run", "--", tool] + common,
                                 [sv, "run", "--", tool] + common +
                                 ["127.0.0.1"], port)
            return (B.parse_perftest_bw if bw else B.parse_perftest_lat)(out)
        return run

    def host_sockperf(self, tag):
        port = self.next_port()
        out = self.host_pair(
            tag, ["sockperf", "sr", "-i", "127.0.0.1", "-p", str(port)],
            ["sockperf", "pp", "-i", "127.0.0.1", "-p", str(port), "-m",
             "16", "-t", "2"], port, proto="udp", server_exits=False)
        return B.parse_sockperf(out)

    def host_qperf(self, sv, test, poll):
        def run(tag):
            port = self.next_port()
            server = [sv, "run", "--", "qperf", "-lp", str(port)]
            client = [sv, "run", "--", "qperf", "-lp", str(port), "-cm1",
                      "-t", str(self.seconds)] + (["-cp1"] if poll else []) \
                + ["127.0.0.1", test]
            return parse_qperf(self.host_pair(tag, server, client, port,
                                              server_exits=False))
        return run

    def host_messenger(self, sv, mode):
        """tests/integration/rc_messenger (one process pair, both cores):
        mode stream over shm, udp (the same, SOFTVERBS_FASTPATH=0), or
        tcp (kernel TCP on loopback, the same messages and loop, its
        buffers faulted in before the clock starts as registration faults
        the verbs buffers in).  The slower side's rate each way, and the
        longest SEND."""
        def run(tag):
            prog = os.path.join(os.path.dirname(sv), "rc_messenger")
            env = dict(os.environ)
            if mode == "udp":
                env["SOFTVERBS_FASTPATH"] = "0"
            cpus = ",".join(self.cpus)
            try:
                r = subprocess.run(["taskset", "-c", cpus, prog,
                                    "tcp" if mode == "tcp" else "stream"],
                                   env=env, timeout=120, text=True,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
            except subprocess.TimeoutExpired:
                raise B.RunError("rc_messenger %s: timed out" % mode)
            out = r.stdout
            os.makedirs(self.raw, exist_ok=True)
            with open(os.path.join(self.raw, tag + ".log"), "w") as f:
                f.write(out)
            rates = [float(m) for m in re.findall(
                r"([0-9.]+) MiB/s each way", out)]
            waits = [float(m) for m in re.findall(
                r"longest SEND ([0-9]+) ms", out)]
            if len(rates) != 2:
                raise B.RunError("rc_messenger %s: no rate of both sides"
                                 % mode)
            fig = {"bw": min(rates)}
            if waits:
                fig["wait"] = max(waits)
            return fig
        return run

    def host_rows(self):
        if not hasattr(self, "gid"):
            # The loopback GID, as bench.py's perftest rows use.
            self.gid = {sv: B.gid_index(sv) for _, sv in self.builds}
        for label, sv in self.builds:
            for tool in EV_TOOLS:
                for size in BW_SIZES:
                    name = "%s %s" % (tool, B.fmt_size(size))
                    for ev in (True, False):
                        self.record("one host", "%s %s%s" % (
                            name, "-e" if ev else "polling", label), "bw",
                            "MiB/s", self.host_perftest(sv, tool, size, ev))
            for ev in (True, False):
                self.record("one host", "ib_send_lat 8 B %s%s" % (
                    "-e" if ev else "polling", label), "lat", "us",
                    self.host_perftest(sv, "ib_send_lat", 8, ev))
            if shutil.which("qperf"):
                for test, key, unit in (("rc_lat", "lat", "us"),
                                        ("rc_bw", "bw", "MiB/s"),
                                        ("rc_rdma_read_bw", "bw", "MiB/s"),
                                        ("rc_compare_swap_mr", "rate",
                                         "K/s")):
                    for poll in (False, True):
                        self.record("one host", "qperf %s %s%s" % (
                            test, "-cp1" if poll else "events", label), key,
                            unit, self.host_qperf(sv, test, poll))
        self.record("one host", "sockperf UDP blocking 16 B", "lat", "us",
                    self.host_sockperf)
        for label, sv in self.builds:
            for mode in ("shm", "udp"):
                self.record("one host", "messenger %s%s" % (mode, label),
                            "bw", "MiB/s",
                            self.host_messenger(sv, mode))
                # The other target: no SEND waits 100 ms.
                self.record("one host", "messenger %s longest SEND%s" % (
                    mode, label), "wait", "ms",
                    self.host_messenger(sv, mode))
        self.record("one host", "messenger kernel TCP", "bw", "MiB/s",
                    self.host_messenger(self.builds[0][1], "tcp"))

    # ---- two namespaces ------------------------------------------------

    def ns_rows(self, ns, gids):
        for label, sv in self.builds:
            for tool in EV_TOOLS:
                for size in BW_SIZES:
                    for ev in (True, False):
                        self.record("netns", "%s %s %s%s" % (
                            tool, B.fmt_size(size), "-e" if ev else
                            "polling", label), "bw", "MiB/s",
                            self.ns_perftest(ns, sv, gids, tool, size, ev))
            for ev in (True, False):
                self.record("netns", "ib_send_lat 8 B %s%s" % (
                    "-e" if ev else "polling", label), "lat", "us",
                    self.ns_perftest(ns, sv, gids, "ib_send_lat", 8, ev))
        self.record("netns", "sockperf UDP blocking 16 B", "lat", "us",
                    lambda tag: ns.sockperf(tag, False))

    def ns_perftest(self, ns, sv, gids, tool, size, event):
        def run(tag):
            port = ns.next_port()
            bw = not tool.endswith("_lat")
            common = ["-d", "softverbs0", "-p", str(port), "-s", str(size),
                      "-n", str(iters(size))]
            if event:
                common.append("-e")
            out, _ = ns.pair(tag, [sv, "run", "--", tool, "-x", gids[sv][0]]
                             + common, [sv, "run", "--", tool, "-x",
                                        gids[sv][1]] + common + [N.ADDR[0]],
                             port)
            return (B.parse_perftest_bw if bw else B.parse_perftest_lat)(out)
        return run

    # ---- report --------------------------------------------------------

    def median(self, path, row, key):
        figs = [f[key] for f in self.figs.get((path, row), []) if key in f]
        return (statistics.median(figs), min(figs), max(figs)) if figs \
            else None

    def ratios(self):
        """(path, what, figure row, anchor row, key, target, kind); key
        is one figure's, or a pair (the row's, the anchor's)."""
        out = []
        for path in ("one host", "netns"):
            for label, _ in self.builds:
                lat = "ib_send_lat 8 B -e" + label
                out.append((path, lat + " / sockperf blocking", lat,
                            "sockperf UDP blocking 16 B", "lat", LAT_TARGET,
                            "le"))
                out.append((path, lat + " / polling", lat,
                            "ib_send_lat 8 B polling" + label, "lat", None,
                            "le"))
                for tool in EV_TOOLS:
                    for size in BW_SIZES:
                        name = "%s %s " % (tool, B.fmt_size(size))
                        out.append((path, name + "-e / polling" + label,
                                    name + "-e" + label,
                                    name + "polling" + label, "bw",
                                    BW_TARGET if tool == "ib_send_bw"
                                    else None, "ge"))
                if path == "one host":
                    for mode in ("shm", "udp"):
                        m = "messenger %s%s" % (mode, label)
                        out.append((path, m + " / kernel TCP", m,
                                    "messenger kernel TCP", "bw", 1.0, "ge"))
                    # qperf prints its mean latency: held to sockperf's
                    # mean, as the perftest row's median is to sockperf's
                    # median (a loaded machine's tail moves a mean, not a
                    # median).
                    q = "qperf rc_lat events" + label
                    out.append((path, q + " / sockperf blocking (means)", q,
                                "sockperf UDP blocking 16 B",
                                ("lat", "lat_avg"), LAT_TARGET, "le"))
                    out.append((path, q + " / ib_send_lat 8 B -e (means)", q,
                                lat, ("lat", "lat_avg"), None, "le"))
                    for test, key in (("rc_bw", "bw"),
                                      ("rc_rdma_read_bw", "bw"),
                                      ("rc_compare_swap_mr", "rate"),
                                      ("rc_lat", "lat")):
                        out.append((path, "qperf %s events / -cp1%s" % (
                            test, label), "qperf %s events%s" % (test, label),
                            "qperf %s -cp1%s" % (test, label), key,
                            BW_TARGET if key == "bw" else None,
                            "le" if key == "lat" else "ge"))
        return out

    def write(self):
        os.makedirs(self.out, exist_ok=True)
        md = ["# Applications that sleep on completion channels (issue #35)",
              "",
              "bench/events.py, %s; %d run(s) per row, pinned to cores %s "
              "and %s; median (min-max) of the runs; load average %.2f at "
              "the start, %.2f at the end." % (
                  time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  self.repeats, self.cpus[0], self.cpus[1], self.load0,
                  os.getloadavg()[0]), "",
              "| path | row | figure | unit | runs |",
              "|---|---|---|---|---|"]
        rows = []
        for path, row, key, unit in self.order:
            m = self.median(path, row, key)
            if m:
                fig = "%.2f (%.2f-%.2f)" % m
                n = len(self.figs[(path, row)])
            else:
                fig = "failed: %s" % self.errors.get(
                    (path, row), "?")[:80].replace("|", "/")
                n = 0
            md.append("| %s | %s | %s | %s | %d |" % (path, row, fig, unit,
                                                     n))
            rows.append([path, row, key, unit] +
                        (["%.3f" % v for v in m] if m else ["", "", ""]))
        md += ["", "| path | ratio | value | target |", "|---|---|---|---|"]
        for path, what, num, den, key, target, kind in self.ratios():
            nkey, dkey = key if isinstance(key, tuple) else (key, key)
            a, b = self.median(path, num, nkey), self.median(path, den, dkey)
            if not a or not b or not b[0]:
                continue
            r = a[0] / b[0]
            if target is None:
                verdict = "-"
            else:
                ok = r <= target if kind == "le" else r >= target
                verdict = "%s %.1fx: %s" % ("<=" if kind == "le" else ">=",
                                           target, "met" if ok else "NOT met")
            md.append("| %s | %s | %.2f | %s |" % (path, what, r, verdict))
            rows.append([path, what, "ratio", "", "%.3f" % r, "", ""])
        with open(os.path.join(self.out, "events.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        with open(os.path.join(self.out, "events.csv"), "w",
                  newline="") as f:
            w = csv.writer(f)
            w.writerow(["path", "row", "key", "unit", "median", "min", "max"])
            w.writerows(rows)
        print("\n".join(md))

    def run(self):
        self.load0 = os.getloadavg()[0]
        os.makedirs(self.raw, exist_ok=True)
        why = ns_usable() if self.netns else "BENCH_EVENTS_NETNS=0"
        if why:
            print("events: the namespaces part skipped: %s" % why)
        gids = None
        try:
            if not why:
                N.setup()
                N.set_mtu(1500)
                ns = N.Netns.__new__(N.Netns)
                ns.cpus, ns.raw, ns.port = self.cpus, self.raw, 25000
                ns.seconds = self.seconds
                gids = {sv: (N.gid_index(sv, N.NS[0], N.ADDR[0]),
                             N.gid_index(sv, N.NS[1], N.ADDR[1]))
                        for _, sv in self.builds}
            for rep in range(self.repeats):
                print("events: repeat %d of %d" % (rep + 1, self.repeats),
                      flush=True)
                self.host_rows()
                if gids:
                    self.ns_rows(ns, gids)
        finally:
            if not why:
                N.teardown()
        self.write()


def main():
    if len(sys.argv) != 2:
        print("usage: events.py BUILD_DIR", file=sys.stderr)
        return 2
    # Ended (make's ^C, a timeout): the namespaces and servers go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    Events(sys.argv[1]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
