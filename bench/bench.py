#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""softverbs benchmark suite (`make bench`, through bench/run.sh).

Runs unmodified perftest through `softverbs run` and, in the same run, the
anchors softverbs is measured against: ucx_perftest over shared memory and
cross-memory attach, fi_pingpong over libfabric's shm provider, iperf3 and
sockperf on loopback, a memcpy figure and the one-copy limit between two
processes (process_vm_writev / process_vm_readv, bench/pvm_bw.c); and the
middleware over softverbs (issue #15, mw_series): ucx_perftest over
rc_verbs, an MPI ping-pong (bench/mpi_pingpong.c) under Open MPI's pml ucx
and fi_pingpong -p verbs -e msg, each against the same middleware over its
own shared memory (or, for fi_pingpong, softverbs' own ib_send_lat), with
softverbs' retransmissions counted in every such run.  Every pair
of processes is pinned to two cores (taskset), every figure is repeated and
reported as median and spread (min-max), and the results go to the output
directory as markdown, CSV, the exact commands, and PNG plots (gnuplot).

Environment (all optional):
  BENCH_QUICK=1        a small subset (3 sizes, 1 repeat) to check the pipeline;
                       writes to bench/results/quick/ (never committed)
  BENCH_REPEATS=N      runs per figure (default 3, quick 1)
  BENCH_SIZES=a,b,...  message sizes in bytes (default 8 B, then 64 B .. 4 MiB
                       in powers of 4: 10 sizes, with 64 KiB and 1 MiB, the
                       sizes the targets name)
  BENCH_ONLY=w1,w2     run only the series whose name contains one of the words
  BENCH_CPUS=A,B       the two cores (default 0,1)
  BENCH_OUT=DIR        output directory (default bench/results)
  BENCH_BUDGET_MIN=M   stop starting new runs after M minutes (default 21,
                       35 with BENCH_BASE) and report what was measured, the
                       rest marked skipped: a broken transport (every run
                       timing out) cannot make the suite run for hours
  BENCH_BASE=DIR       a second softverbs build to compare with: the build
                       directory of another commit (its bin/softverbs and
                       lib/; `make` in a worktree of that commit makes one)
  BENCH_BASE_LABEL=L   its name in the results (default: the commit of the
                       tree DIR is in, abbreviated, else "base")

Comparing two builds (BENCH_BASE): every softverbs series (perftest and the
idle process, through `softverbs run`) is also run through DIR/bin/softverbs,
as the series "softverbs@L ..." ("softverbs@5f9ba9f ib_write_bw").  It runs
in the same passes, right next to the same series of this build (which of
the two goes first alternates from pass to pass), so both builds and their
anchors at one size are measured seconds apart; the anchors are run once
and serve both builds.  compare.md and compare.csv then give, for each
target of issue #7 (DONE_WHEN) and each softverbs figure of the README's
Performance tables (README_FIGURES), the figures of both builds and of the
anchor, the ratio to the anchor at both builds, and the change of the ratio
(this build / base - 1), flagged when it is worse than 5% (issue #14's
criterion; for latencies, where lower is better, worse means above +5%).
With one anchor figure for both builds, the change of the ratio equals the
change of the softverbs figure.  BENCH_ONLY's words match both builds'
series ("ib_write_bw": both, and no anchor).  bench/readme.py publishes
this build's figures of such a run, as of any full run.  Without
BENCH_BASE nothing of this runs and the output is as before.

Time: a full run takes about 14 minutes on the 2-core development machine
with the middleware series (816 s at 600f9cb, other work running; 11 before
them), about 19 with BENCH_BASE (BENCH_QUICK=1 prints an estimate for the machine
it runs on).

Units: bandwidth in MiB/s (2^20 bytes/s: perftest's and ucx_perftest's
"MB/s"; fi_pingpong's and iperf3's decimal figures are converted), latency in
microseconds, one-way (half a round trip, as every tool here reports it; the
median where the tool gives one), message rate in millions of messages/s.
"""
import csv
import datetime
import os
import platform
import re
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class RunError(Exception):
    pass


class RunTimeout(RunError):
    pass


def fmt_size(n):
    if n == 0:  # a figure without a message size (the idle process)
        return "-"
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def clamp(v, lo, hi):
    return max(lo, min(hi, v))


# --------------------------------------------------------------------------
# Configuration


class Config:
    def __init__(self, build, bindir):
        env = os.environ
        self.quick = env.get("BENCH_QUICK", "") not in ("", "0")
        self.repeats = int(env.get("BENCH_REPEATS") or (1 if self.quick else 3))
        if env.get("BENCH_SIZES"):
            self.sizes = sorted(int(s) for s in env["BENCH_SIZES"].split(","))
        elif self.quick:
            self.sizes = [8, 64 << 10, 1 << 20]
        else:
            self.sizes = full_sizes()
        self.only = [w for w in env.get("BENCH_ONLY", "").split(",") if w]
        cpus = env.get("BENCH_CPUS", "0,1").split(",")
        self.cpu_server, self.cpu_client = cpus[0], cpus[1]
        default_out = os.path.join(HERE, "results", "quick" if self.quick else "")
        self.out = os.path.abspath(env.get("BENCH_OUT") or default_out)
        self.build = os.path.abspath(build)
        self.bindir = os.path.abspath(bindir)
        self.softverbs = os.path.join(self.build, "bin", "softverbs")
        # Seconds one run of a fixed-length tool lasts.  Quick runs are
        # shorter but of the same kind, so their wall times predict a full
        # run (see estimate()).
        self.length = self.lengths(self.quick)
        # Seconds a client may take: the longest normal run (ib_write_lat
        # at 4 MiB over UDP, 100 iterations) takes under 10 s.
        self.timeout = 30
        self.base = None  # the build compared with (BENCH_BASE)
        self.base_label = None
        self.base_softverbs = None
        if env.get("BENCH_BASE"):
            self.base = os.path.abspath(env["BENCH_BASE"])
            self.base_softverbs = os.path.join(self.base, "bin", "softverbs")
            self.base_label = env.get("BENCH_BASE_LABEL") or \
                commit_of(self.base) or "base"
        self.budget = float(env.get("BENCH_BUDGET_MIN") or
                            (35 if self.base else 21)) * 60

    @staticmethod
    def lengths(quick):
        return {"perftest": 2,  # perftest -D: measured seconds
                "copy": 0.2 if quick else 0.5,
                "iperf3": 1 if quick else 2,
                "sockperf": 1,  # plus its 0.4 s warm-up and ~2 s exit
                "idle": 2 if quick else 5}


def section_settings(obj, raw_name):
    """What every section after the main one (netns.py, events.py) reads
    from the environment, set on obj: quick, repeats, cpus (the two to
    pin each pair to), out (where results go) and raw (its raw logs)."""
    env = os.environ
    obj.quick = env.get("BENCH_QUICK", "") not in ("", "0")
    obj.repeats = int(env.get("BENCH_REPEATS") or (1 if obj.quick else 3))
    cpus = env.get("BENCH_CPUS", "0,1").split(",")
    obj.cpus = cpus[0], cpus[1]
    out = os.path.join(HERE, "results", "quick" if obj.quick else "")
    obj.out = os.path.abspath(env.get("BENCH_OUT") or out)
    obj.raw = os.path.join(obj.out, raw_name)


def commit_of(path):
    """The abbreviated commit of the git tree path is in, or None."""
    try:
        res = subprocess.run(["git", "-C", path, "rev-parse", "--short",
                              "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def full_sizes():
    """8 B, then 64 B to 4 MiB in powers of 4: the issue's range, with the
    sizes its targets name (8 B, 64 KiB, 1 MiB), at half the runs of powers
    of 2 (a full run must fit in about 20 minutes on two cores)."""
    return [8] + [64 << (2 * i) for i in range(9)]


# --------------------------------------------------------------------------
# Processes


def free_port():
    """A TCP and UDP port free on loopback right now (the kernel picks it)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
    raise RunError("no free port")


def port_bound(port, proto):
    """Whether a socket is listening (TCP) or bound (UDP) on port."""
    want_state = "0A" if proto == "tcp" else None
    for name in (proto, proto + "6"):
        try:
            with open("/proc/net/" + name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) != port:
                        continue
                    if want_state is None or fields[3] == want_state:
                        return True
        except OSError:
            pass
    return False


def kill_group(proc):
    """End a process we started, and whatever it started, by its group id."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue


def cmd_str(cmd, env_add):
    pre = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env_add.items())
    return (pre + " " if pre else "") + shlex.join(cmd)


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().strip().splitlines()
        return " | ".join(lines[-n:])
    except OSError:
        return ""


class Runner:
    def __init__(self, cfg):
        self.cfg = cfg
        self.raw = os.path.join(cfg.out, "raw")
        self.active = []  # processes we started, to end them if we are ended
        self.commands = []  # the current run's commands, known even if it fails

    def track(self, proc):
        self.active = [p for p in self.active if p.poll() is None]
        self.active.append(proc)
        return proc

    def end_all(self):
        for p in self.active:
            kill_group(p)

    def env(self, env_add):
        e = dict(os.environ)
        e.update(env_add)
        return e

    def start(self, cmd, env_add, log):
        with open(log, "w") as out:
            return self.track(subprocess.Popen(
                cmd, env=self.env(env_add), stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def wait(self, proc, timeout, what):
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise RunTimeout("%s did not finish within %d s" % (what, timeout))

    def pair(self, tag, server, client, env_add, port, proto="tcp",
             server_exits=True):
        """Start server pinned to one core, wait until it listens, run the
        client pinned to the other; return the client's output."""
        cfg = self.cfg
        server = ["taskset", "-c", cfg.cpu_server] + server
        client = ["taskset", "-c", cfg.cpu_client] + client
        slog = os.path.join(self.raw, tag + ".server.txt")
        clog = os.path.join(self.raw, tag + ".client.txt")
        commands = ["server: " + cmd_str(server, env_add),
                    "client: " + cmd_str(client, env_add)]
        self.commands = commands
        srv = self.start(server, env_add, slog)
        try:
            deadline = time.monotonic() + 20
            while not port_bound(port, proto):
                if srv.poll() is not None:
                    raise RunError("server exited (%d) before listening: %s"
                                   % (srv.returncode, tail(slog)))
                if time.monotonic() > deadline:
                    raise RunError("server not listening after 20 s")
                time.sleep(0.02)
            cli = self.start(client, env_add, clog)
            rc = self.wait(cli, cfg.timeout, "client")
            if server_exits:
                src = self.wait(srv, 15, "server")
            else:
                kill_group(srv)
                src = 0
        finally:
            kill_group(srv)
        with open(clog, errors="replace") as f:
            out = f.read()
        if rc != 0 or src != 0:
            raise RunError("exit status client %d server %s: %s"
                           % (rc, src, tail(clog) or tail(slog)))
        return out, commands

    def single(self, tag, cmd, env_add=None, cpus=None):
        env_add = env_add or {}
        cmd = ["taskset", "-c", cpus or self.cfg.cpu_server] + cmd
        log = os.path.join(self.raw, tag + ".txt")
        self.commands = [cmd_str(cmd, env_add)]
        proc = self.start(cmd, env_add, log)
        rc = self.wait(proc, self.cfg.timeout, cmd[3])
        with open(log, errors="replace") as f:
            out = f.read()
        if rc != 0:
            raise RunError("exit status %d: %s" % (rc, tail(log)))
        return out, [cmd_str(cmd, env_add)]

    def retx(self, tag, client_out):
        """softverbs' retransmissions in a pair's run (SOFTVERBS_STATS=1:
        both processes print their counters when they close the device)."""
        slog = os.path.join(self.raw, tag + ".server.txt")
        with open(slog, errors="replace") as f:
            return parse_retx(client_out + f.read())

    def pvm(self, tag, op, size, seconds):
        """process_vm_{write,read}v between two processes: a target that maps
        a buffer and waits (one core), the copier (the other core)."""
        cfg = self.cfg
        prog = os.path.join(cfg.bindir, "pvm_bw")
        tcmd = ["taskset", "-c", cfg.cpu_server, prog, "target", str(size)]
        tlog = os.path.join(self.raw, tag + ".target.txt")
        self.commands = ["target: " + cmd_str(tcmd, {})]
        with open(tlog, "w") as err:
            target = self.track(subprocess.Popen(
                tcmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, text=True, start_new_session=True))
        try:
            ready, _, _ = select.select([target.stdout], [], [], 20)
            line = target.stdout.readline() if ready else ""
            m = re.match(r"pid=(\d+) addr=(0x[0-9a-f]+)", line)
            if not m:
                raise RunError("target did not start: %s %s" % (line, tail(tlog)))
            ccmd = ["taskset", "-c", cfg.cpu_client, prog, op, m.group(1),
                    m.group(2), str(size), str(seconds)]
            clog = os.path.join(self.raw, tag + ".txt")
            self.commands.append("copier: " + cmd_str(ccmd, {}))
            cli = self.start(ccmd, {}, clog)
            rc = self.wait(cli, cfg.timeout, "pvm_bw " + op)
            target.stdin.close()
            self.wait(target, 10, "pvm_bw target")
        finally:
            kill_group(target)
        with open(clog, errors="replace") as f:
            out = f.read()
        if rc != 0:
            raise RunError("exit status %d: %s" % (rc, tail(clog)))
        return out, self.commands


# --------------------------------------------------------------------------
# Parsers: each tool's own output format


def parse_perftest_bw(out):
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "#bytes" in line and "BW average" in line:
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) >= 5 and f[0].isdigit():
                    return {"bw": float(f[3]), "rate": float(f[4])}
    raise RunError("no perftest bandwidth row")


def parse_perftest_lat(out):
    """t_typical (the median, the figure the tables show) and t_avg (the
    mean, to hold a tool that reports only its mean to: fi_pingpong)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "#bytes" in line and "t_typical" in line:
            head = line.split()
            col, avg = head.index("t_typical[usec]"), head.index("t_avg[usec]")
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) > max(col, avg) and f[0].isdigit():
                    return {"lat": float(f[col]), "lat_avg": float(f[avg])}
    raise RunError("no perftest latency row")


def parse_ucx(out):
    """ucx_perftest -v: a CSV header and one row of final numbers."""
    lines = [l.strip() for l in out.splitlines()]
    for i, line in enumerate(lines):
        if not line.startswith("iterations,"):
            continue
        # The row is the next line starting with a digit (UCX's log lines,
        # at UCX_LOG_LEVEL=info, may come in between).
        for row in lines[i + 1:]:
            if row[:1].isdigit():
                row = dict(zip(line.split(","), row.split(",")))
                return {"lat": float(row["50.0_percentile_lat"]),
                        "bw": float(row["overall_bw"]),
                        "rate": float(row["overall_mr"]) / 1e6}
    raise RunError("no ucx_perftest CSV row")


def parse_fi_pingpong(out):
    """bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; MB = 10^6
    bytes (bytes per microsecond), usec/xfer is one-way."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:1] == ["bytes"] and "usec/xfer" in line:
            f = lines[i + 1].split()
            return {"bw": float(f[-3]) * 1e6 / MiB, "lat": float(f[-2]),
                    "rate": float(f[-1])}
    raise RunError("no fi_pingpong result row")


def parse_iperf3(out):
    import json
    data = json.loads(out[out.index("{"):])
    if "error" in data:
        raise RunError("iperf3: " + data["error"])
    bps = data["end"]["sum_received"]["bits_per_second"]
    return {"bw": bps / 8 / MiB}


def parse_sockperf(out):
    """The median, and the mean (avg-latency) to hold a tool that reports
    only its mean to: qperf."""
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", out)
    if not m:
        raise RunError("no sockperf median")
    fig = {"lat": float(m.group(1))}
    a = re.search(r"avg-latency=([0-9.]+)", out)
    if a:
        fig["lat_avg"] = float(a.group(1))
    return fig


def parse_kv(out, key):
    """The first line of key=value pairs holding key."""
    for line in out.splitlines():
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if key in kv:
            return kv
    raise RunError("no %s= line" % key)


# softverbs' counters (SOFTVERBS_STATS=1) of a packet sent again or lost
# on the way: what "no retransmission on the shared-memory path" counts.
RETX_COUNTERS = ("completer_retry_err", "implied_nak_retry",
                 "fast_retransmit", "probe_retransmit", "shm_ring_full")


def parse_retx(out):
    """The sum of RETX_COUNTERS over every context's statistics in out;
    an output without statistics is an error (the figure would claim a
    count nobody made)."""
    if "softverbs stats: context" not in out:
        raise RunError("no softverbs statistics (SOFTVERBS_STATS=1) in the "
                       "output")
    total = 0
    for m in re.finditer(r"^\s+(%s)\s+(\d+)\s" % "|".join(RETX_COUNTERS),
                         out, re.M):
        total += int(m.group(2))
    return float(total)


def parse_mpi_pingpong(out):
    kv = parse_kv(out, "MiBps")
    return {"lat": float(kv["usec"]), "bw": float(kv["MiBps"])}


def parse_keyvalue(out):
    for line in out.splitlines():
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if "MiBps" in kv:
            return {"bw": float(kv["MiBps"]),
                    "rate": 1.0 / float(kv["usec_per_op"])}
    raise RunError("no result line")


# --------------------------------------------------------------------------
# Series: one line on a plot, one figure per message size


UNITS = {"bw": "MiB/s", "lat": "usec", "rate": "Mmsg/s",
         "cpu": "% of a core", "wake": "usec RTT", "warm": "usec RTT",
         "retx": "packets resent", "lat_avg": "usec (mean)"}


class Series:
    """name: as in the tables; group: 'bw' or 'lat' (which plot); metrics:
    what a run yields; run(runner, size, tag) -> (values, commands);
    sizes(cfg, full) -> message sizes (of this run, or of a full run);
    length: which Config.lengths entry sets the length of a run, for tools
    that run for a set time (used to extrapolate a full run); softverbs: a
    softverbs figure (drawn thick); base_of: for a series run through the
    base build (BENCH_BASE), the name of the same series of this build."""

    def __init__(self, name, group, metrics, run, sizes=None, length=None,
                 softverbs=False, base_of=None):
        self.name = name
        self.group = group
        self.metrics = metrics
        self.run = run
        self.sizes = sizes or (lambda cfg, full=False:
                               full_sizes() if full else cfg.sizes)
        self.length = length
        self.softverbs = softverbs
        self.base_of = base_of


def base_name(name, label):
    """A softverbs series' name when run through the base build:
    "softverbs ib_write_bw" -> "softverbs@5f9ba9f ib_write_bw"."""
    assert name.startswith("softverbs ")
    return "softverbs@%s %s" % (label, name[len("softverbs "):])


def base_label_of(names):
    """The base build's label in a run's series names, or None."""
    for n in names:
        m = re.match(r"softverbs@(\S+) ", n)
        if m:
            return m.group(1)
    return None


def gid_index(softverbs):
    out = subprocess.run([softverbs, "devices"], capture_output=True,
                         text=True, timeout=30).stdout
    for line in out.splitlines():
        m = re.match(r"\s*GID\[\s*(\d+)\]\s+::ffff:127\.0\.0\.1\s", line)
        if m:
            return m.group(1)
    raise RunError("softverbs devices shows no GID for 127.0.0.1:\n" + out)


def perftest_series(cfg, gid, softverbs=None, label=None):
    """perftest through softverbs: this build's, or with label, the base
    build's (softverbs: its bin/softverbs)."""
    softverbs = softverbs or cfg.softverbs

    def make(tool, bw):
        def run(r, size, tag):
            port = free_port()
            args = [softverbs, "run", "--", tool, "-d", "softverbs0",
                    "-x", gid, "-p", str(port)]
            if not tool.startswith("ib_atomic"):
                args += ["-s", str(size)]
            if bw:
                args += ["-D", str(cfg.length["perftest"])]
            else:
                args += ["-n", str(clamp((16 * MiB) // size, 100, 1000))]
            out, cmds = r.pair(tag, args, args + ["127.0.0.1"], {}, port)
            return (parse_perftest_bw if bw else parse_perftest_lat)(out), cmds
        return run

    def series(tool, *args, **kwargs):
        name = "softverbs " + tool
        if label:
            kwargs["base_of"] = name
            name = base_name(name, label)
        return Series(name, *args, softverbs=True, **kwargs)

    s = []
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
        s.append(series(tool, "bw", ["bw", "rate"], make(tool, True),
                        length="perftest"))
    for tool in ("ib_write_lat", "ib_send_lat"):
        s.append(series(tool, "lat", ["lat", "lat_avg"], make(tool, False)))
    s.append(series("ib_atomic_lat", "lat", ["lat"],
                    make("ib_atomic_lat", False),
                    sizes=lambda cfg, full=False: [8]))
    # Fetch-and-adds and compare-and-swaps are 8 bytes whatever -s says.
    s.append(series("ib_atomic_bw", "bw", ["bw", "rate"],
                    make("ib_atomic_bw", True), length="perftest",
                    sizes=lambda cfg, full=False: [8]))
    return s


def idle_series(cfg, gid, softverbs=None, label=None):
    """The issue's "no CPU burned when idle": bench/idle_cpu.c connects two
    processes (PD, MR, CQ, RC QP, one SEND each way), lets both sleep and
    measures their CPU time over the idle window (every thread); cpu is the
    busier process's figure in % of one core, wake the first round trip
    after the window (progress threads must wake promptly), warm one just
    before it, to compare.  softverbs, label: as perftest_series'."""
    softverbs = softverbs or cfg.softverbs

    def run(r, size, tag):
        out, cmds = r.single(tag, [softverbs, "run", "--",
                                   os.path.join(cfg.bindir, "idle_cpu"),
                                   str(cfg.length["idle"]), gid],
                             cpus="%s,%s" % (cfg.cpu_server, cfg.cpu_client))
        kv = parse_kv(out, "cpu_pct")
        return {"cpu": float(kv["cpu_pct"]),
                "wake": float(kv["wake_rtt_us"]),
                "warm": float(kv["warm_rtt_us"])}, cmds

    return [Series(base_name(IDLE, label) if label else IDLE, "idle",
                   ["cpu", "wake", "warm"], run,
                   sizes=lambda cfg, full=False: [0], length="idle",
                   softverbs=True, base_of=IDLE if label else None)]


IDLE = "softverbs idle process (idle_cpu)"


def softverbs_series(cfg, gid, label=None, base_gid=None):
    """Every series through softverbs; with label (BENCH_BASE), each
    followed by the same series through the base build."""
    ours = perftest_series(cfg, gid) + idle_series(cfg, gid)
    if not label:
        return ours
    theirs = perftest_series(cfg, base_gid, cfg.base_softverbs, label) + \
        idle_series(cfg, base_gid, cfg.base_softverbs, label)
    return [s for pair in zip(ours, theirs) for s in pair]


def pass_order(series, rep):
    """The series in the order pass rep runs them: as listed, except that
    in every other pass a base build's series goes before its twin (so
    that neither build always runs first, in a warmer or colder state)."""
    order = list(series)
    if rep % 2 == 0:
        for i in range(len(order) - 1):
            if order[i + 1].base_of == order[i].name:
                order[i], order[i + 1] = order[i + 1], order[i]
    return order


# UCX over softverbs (issue #15): UCX_TLS of the rc_verbs series, as the
# stack tests run it (tests/stack/ucx.sh): RC for the data, UD only as the
# auxiliary transport of the wire-up, and self for a rank to itself.
MW_UCX_TLS = "rc_verbs,ud_verbs:aux,self"
MW_UCX_ENV = {"UCX_TLS": MW_UCX_TLS, "UCX_NET_DEVICES": "softverbs0:1"}

# Transports UCP may use under each UCX_TLS value of the suite (names as
# ucx_info -d and UCP's "ep_cfg" log lines give them).
UCX_ALLOWED = {"posix,self": {"posix", "self"},
               "sm,self": {"posix", "sysv", "cma", "knem", "xpmem", "self"},
               MW_UCX_TLS: {"rc_verbs", "ud_verbs", "self"}}
UCX_LANES = {}  # series -> the ep_cfg lines seen (written to results)


def check_ucx_lanes(series, tls, out):
    """Refuse a UCP figure whose endpoint used a transport its UCX_TLS
    does not name, or whose lanes were not logged at all."""
    lanes = sorted({m.group(1).strip() for m in
                    re.finditer(r"ep_cfg\[\d+\]: (.*)", out)})
    if not lanes:
        raise RunError("UCX logged no ep_cfg line: transports unknown")
    used = set(re.findall(r"([a-z0-9_]+)/[a-z0-9_:.]+", " ".join(lanes)))
    if not used or not used <= UCX_ALLOWED[tls]:
        raise RunError("UCX_TLS=%s but the endpoint used %s" %
                       (tls, ", ".join(sorted(used)) or "?"))
    UCX_LANES.setdefault(series, set()).update(lanes)


def ucx_make(cfg, name, test, bw, env_add, uct=(), max_bw_iters=500000,
             wrap=(), retx=False):
    """One ucx_perftest figure: a server and a client (through wrap: the
    `softverbs run --` of the middleware series), UCP's lanes checked
    against UCX_TLS; retx: also count softverbs' retransmissions."""
    def run(r, size, tag):
        port = free_port()
        env = dict(env_add)
        if not uct:
            # UCP logs, at info level, the transports each endpoint
            # lane uses: proof the figure is over what its name says.
            env["UCX_LOG_LEVEL"] = "info"
        if retx:
            env["SOFTVERBS_STATS"] = "1"
        if bw:
            n = clamp((4096 * MiB) // size, 1000, max_bw_iters)
        else:
            n = clamp((256 * MiB) // size, 100, 100000)
        common = ["-p", str(port)]
        client = list(wrap) + [
            "ucx_perftest", "127.0.0.1", "-p", str(port), "-t", test,
            "-s", str(size), "-n", str(n), "-w", str(max(10, n // 10)),
            "-v"] + list(uct)
        out, cmds = r.pair(tag, list(wrap) + ["ucx_perftest"] + common,
                           client, env, port)
        if not uct:
            check_ucx_lanes(name, env["UCX_TLS"], out)
        vals = parse_ucx(out)
        vals = {k: vals[k] for k in (["bw", "rate"] if bw else ["lat"])}
        if retx:
            vals["retx"] = r.retx(tag, out)
        return vals, cmds
    return run


def ucx_series(cfg):
    # Iterations (ucx_make): enough for a stable figure at every size, few
    # enough that a run lasts well under a second (UCX over shared memory
    # moves 8 B messages at ~20 Mmsg/s; over cma every message is a system
    # call, ~2 us, hence the lower cap).
    def make(name, test, bw, env_add, uct=(), max_bw_iters=500000):
        return ucx_make(cfg, name, test, bw, env_add, uct, max_bw_iters)

    s = []
    for tls in ("posix,self", "sm,self"):
        env_add = {"UCX_TLS": tls}
        for test in ("tag_bw", "ucp_put_bw"):
            name = "ucx %s (%s)" % (test, tls)
            s.append(Series(name, "bw", ["bw", "rate"],
                            make(name, test, True, env_add)))
        for test in ("ucp_put_lat", "ucp_am_lat"):
            name = "ucx %s (%s)" % (test, tls)
            s.append(Series(name, "lat", ["lat"],
                            make(name, test, False, env_add)))
    # ib_read_bw's anchor (issue #36): UCP's get over shared memory, the
    # peer's region mapped by the requester (lane "rma(posix/memory)");
    # ucx_perftest names it ucp_get (a bandwidth run with -s/-n).
    name = "ucx ucp_get_bw (posix,self)"
    s.append(Series(name, "bw", ["bw", "rate"],
                    make(name, "ucp_get", True, {"UCX_TLS": "posix,self"})))
    # ib_atomic_bw's anchor: UCP's fetch-and-add message rate over shared
    # memory, where the requester's CPU executes the atomic itself in the
    # mapped segment (lane "amo(posix/memory)"): no other process involved,
    # a bound for an atomic the target executes.
    name = "ucx ucp_fadd (posix,self)"
    s.append(Series(name, "bw", ["bw", "rate"],
                    make(name, "ucp_fadd", True, {"UCX_TLS": "posix,self"}),
                    sizes=lambda cfg, full=False: [8]))
    # The anchor of the middleware series' tag_lat over softverbs.
    name = "ucx tag_lat (sm,self)"
    s.append(Series(name, "lat", ["lat"],
                    make(name, "tag_lat", False, {"UCX_TLS": "sm,self"}),
                    sizes=mw_sizes))
    # UCP cannot run on cma alone (UCX_TLS=cma,self: "no active messages
    # transport"), so cross-memory attach is measured at the UCT layer,
    # zero-copy: exactly one process_vm_writev per put.
    # (ucx_perftest's UCT tests name the transport and layout themselves:
    # -x cma fails if cma is not available; with strace -f -c, put_lat
    # makes one process_vm_writev per iteration.)
    uct = ["-x", "cma", "-d", "memory", "-D", "zcopy"]
    name = "ucx put_bw (cma, uct zcopy)"
    s.append(Series(name, "bw", ["bw", "rate"],
                    make(name, "put_bw", True, {}, uct, max_bw_iters=100000)))
    name = "ucx put_lat (cma, uct zcopy)"
    s.append(Series(name, "lat", ["lat"], make(name, "put_lat", False, {},
                                               uct)))
    return s


def other_series(cfg):
    def fi_run(r, size, tag):
        port = free_port()
        n = str(clamp((256 * MiB) // size, 100, 100000))
        base = ["fi_pingpong", "-p", "shm", "-e", "rdm", "-S", str(size), "-I", n]
        out, cmds = r.pair(tag, base + ["-B", str(port)],
                           base + ["-P", str(port), "127.0.0.1"], {}, port)
        return parse_fi_pingpong(out), cmds

    def iperf_run(r, size, tag):
        port = free_port()
        out, cmds = r.pair(tag, ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p",
                                 str(port)],
                           ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t",
                            str(cfg.length["iperf3"]), "-l", str(size), "-J"],
                           {}, port)
        return parse_iperf3(out), cmds

    def sockperf_make(tcp):
        def run(r, size, tag):
            port = free_port()
            proto = ["--tcp"] if tcp else []
            out, cmds = r.pair(tag, ["sockperf", "sr", "-i", "127.0.0.1", "-p",
                                     str(port)] + proto,
                               ["sockperf", "pp", "-i", "127.0.0.1", "-p",
                                str(port), "-m", str(size), "-t",
                                str(cfg.length["sockperf"])] + proto,
                               {}, port, proto="tcp" if tcp else "udp",
                               server_exits=False)
            return parse_sockperf(out), cmds
        return run

    def memcpy_run(r, size, tag):
        out, cmds = r.single(tag, [os.path.join(cfg.bindir, "memcpy_bw"),
                                   str(size), str(cfg.length["copy"])])
        return {"bw": parse_keyvalue(out)["bw"]}, cmds

    def pvm_make(op):
        def run(r, size, tag):
            out, cmds = r.pvm(tag, op, size, cfg.length["copy"])
            return {"bw": parse_keyvalue(out)["bw"]}, cmds
        return run

    def socket_sizes(full_list, quick_list, lo, hi):
        """Socket tools run at fewer sizes; with BENCH_SIZES, at those of
        them the tool accepts."""
        def sizes(cfg, full=False):
            if full:
                return full_list
            if os.environ.get("BENCH_SIZES"):
                return [z for z in cfg.sizes if lo <= z <= hi]
            return quick_list if cfg.quick else full_list
        return sizes

    iperf_sizes = socket_sizes([64, 1024, 16384, 262144, 1048576],
                               [65536, 1048576], 1, 1 << 20)
    # sockperf's messages are 14 bytes at least and one UDP datagram at most;
    # each run costs ~2.4 s beyond its -t (warm-up, exit), so few sizes.
    sock_sizes = socket_sizes([16, 1024, 16384], [16], 14, 32768)
    return [
        Series("libfabric fi_pingpong (shm)", "lat", ["lat", "bw"], fi_run),
        Series("iperf3 TCP loopback", "bw", ["bw"], iperf_run,
               sizes=iperf_sizes, length="iperf3"),
        Series("sockperf UDP loopback", "lat", ["lat"], sockperf_make(False),
               sizes=sock_sizes, length="sockperf"),
        Series("sockperf TCP loopback", "lat", ["lat"], sockperf_make(True),
               sizes=sock_sizes, length="sockperf"),
        Series("memcpy (one process)", "bw", ["bw"], memcpy_run,
               length="copy"),
        Series("process_vm_writev (one-copy limit)", "bw", ["bw"],
               pvm_make("write"), length="copy"),
        Series("process_vm_readv (one-copy limit)", "bw", ["bw"],
               pvm_make("read"), length="copy"),
    ]


def mw_sizes(cfg, full=False):
    """The middleware series and their own anchors run at the README's key
    sizes only (an MPI or libfabric run starts a launcher or a CM
    connection of its own): those among this run's sizes."""
    if full:
        return README_KEY_SIZES
    return [z for z in cfg.sizes if z in README_KEY_SIZES] or cfg.sizes


MPI_SV = "softverbs mpi pingpong (ompi, ucx rc_verbs)"
MPI_SM = "mpi pingpong (ompi, ucx sm,self)"
FI_MSG = "softverbs fi_pingpong (verbs msg)"
UCX_RC_BW = "softverbs ucx tag_bw (rc_verbs)"
UCX_RC_LAT = "softverbs ucx tag_lat (rc_verbs)"


def mw_series(cfg):
    """Issue #15: middleware through `softverbs run` over softverbs0, each
    against the same middleware over its own shared memory, same sizes,
    same pinning: ucx_perftest tag_bw and tag_lat over rc_verbs (anchors:
    tag_bw and tag_lat over sm,self, in ucx_series), the MPI ping-pong
    (bench/mpi_pingpong.c) under Open MPI's pml ucx over rc_verbs against
    the same over UCX sm,self, and fi_pingpong -p verbs -e msg (its
    figures are held to softverbs' own ib_send_lat).  Every run over
    softverbs counts its retransmissions (SOFTVERBS_STATS=1, metric
    retx): the one-host path should need none."""
    sv = [cfg.softverbs, "run", "--"]
    s = [Series(UCX_RC_BW, "bw", ["bw", "rate", "retx"],
                ucx_make(cfg, UCX_RC_BW, "tag_bw", True, MW_UCX_ENV,
                         wrap=sv, retx=True),
                sizes=mw_sizes, softverbs=True),
         Series(UCX_RC_LAT, "lat", ["lat", "retx"],
                ucx_make(cfg, UCX_RC_LAT, "tag_lat", False, MW_UCX_ENV,
                         wrap=sv, retx=True),
                sizes=mw_sizes, softverbs=True)]

    def mpi_make(name, over_softverbs):
        def run(r, size, tag):
            prog = os.path.join(cfg.bindir, "mpi_pingpong")
            if not os.access(prog, os.X_OK):
                raise RunError("%s not built (bench/run.sh builds it with "
                               "Open MPI's mpicc, libopenmpi-dev)" % prog)
            n = clamp((1024 * MiB) // size, 200, 100000)
            env = dict(MW_UCX_ENV) if over_softverbs else \
                {"UCX_TLS": "sm,self"}
            env["UCX_LOG_LEVEL"] = "info"  # the lanes, as ucx_make
            if over_softverbs:
                env["SOFTVERBS_STATS"] = "1"
            # pml ucx carries every message; each rank pinned to its core
            # by taskset (an MPMD launch: one rank per core), so mpirun's
            # own binding is off.  Open MPI 4.1 selects pml ucx only when
            # UCX offers one of pml_ucx_tls on a device matching
            # pml_ucx_devices (defaults: verbs and mlx5 transports, mlx*):
            # "any" for both series, or the shared-memory one has none.
            args = ["mpirun.openmpi", "--allow-run-as-root",
                    "--oversubscribe", "--bind-to", "none", "--mca", "pml",
                    "ucx", "--mca", "btl", "self", "--mca", "pml_ucx_tls",
                    "any", "--mca", "pml_ucx_devices", "any"]
            for k in sorted(env):
                args += ["-x", k]
            for i, cpu in enumerate((cfg.cpu_server, cfg.cpu_client)):
                args += ([":"] if i else []) + [
                    "-np", "1", "taskset", "-c", cpu, prog, str(size),
                    str(n)]
            out, cmds = r.single(tag, (sv if over_softverbs else []) + args,
                                 env, cpus="%s,%s" % (cfg.cpu_server,
                                                      cfg.cpu_client))
            check_ucx_lanes(name, env["UCX_TLS"], out)
            vals = parse_mpi_pingpong(out)
            if over_softverbs:
                vals["retx"] = parse_retx(out)
            return vals, cmds
        return run

    s.append(Series(MPI_SV, "bw", ["bw", "lat", "retx"],
                    mpi_make(MPI_SV, True), sizes=mw_sizes, softverbs=True))
    s.append(Series(MPI_SM, "bw", ["bw", "lat"], mpi_make(MPI_SM, False),
                    sizes=mw_sizes))

    def fi_msg_run(r, size, tag):
        port = free_port()
        n = str(clamp((256 * MiB) // size, 100, 100000))
        base = sv + ["fi_pingpong", "-p", "verbs", "-e", "msg", "-S",
                     str(size), "-I", n]
        out, cmds = r.pair(tag, base + ["-B", str(port)],
                           base + ["-P", str(port), "127.0.0.1"],
                           {"SOFTVERBS_STATS": "1"}, port)
        vals = parse_fi_pingpong(out)
        vals["retx"] = r.retx(tag, out)
        return vals, cmds

    s.append(Series(FI_MSG, "lat", ["lat", "bw", "retx"], fi_msg_run,
                    sizes=mw_sizes, softverbs=True))
    return s


# --------------------------------------------------------------------------
# Results


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def aggregate(rows):
    """(series, metric, size) -> dict(median, min, max, n, failed)."""
    agg = {}
    for r in rows:
        key = (r["series"], r["metric"], r["size"])
        a = agg.setdefault(key, {"values": [], "failed": 0})
        if r["status"] == "ok":
            a["values"].append(r["value"])
        else:
            a["failed"] += 1
    for a in agg.values():
        v = a["values"]
        a["n"] = len(v)
        a["median"] = statistics.median(v) if v else None
        a["min"] = min(v) if v else None
        a["max"] = max(v) if v else None
    return agg


def num(v):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.3g" % v


def cell(a):
    if not a or a["median"] is None:
        return "failed" if a and a["failed"] else "-"
    s = num(a["median"])
    if a["n"] > 1:
        s += " (%s-%s)" % (num(a["min"]), num(a["max"]))
    return s


def key_cell(agg, name, metric, size):
    """A figure at a key size; in the smallest column, a tool that cannot
    send such small messages (sockperf, iperf3) shows its smallest size."""
    a = agg.get((name, metric, size))
    if a or size > 8:
        return cell(a)
    small = sorted(k[2] for k in agg if k[0] == name and k[1] == metric and
                   k[2] <= 64)
    if not small:
        return "-"
    return cell(agg[(name, metric, small[0])]) + " @" + fmt_size(small[0])


# The issue's "done when" targets, each computed from this run's medians:
# (label, softverbs figure, anchor figure(s), comparison, target).  With
# several anchors the best (largest) median among them is the anchor.  A
# figure is (series, metric, size); the unit is the metric's.
DONE_WHEN = [
    ("ib_write_bw 1 MiB vs the process_vm_writev limit 1 MiB",
     ("softverbs ib_write_bw", "bw", 1 << 20),
     [("process_vm_writev (one-copy limit)", "bw", 1 << 20)], ">=", 0.9),
    ("ib_write_bw 1 MiB vs UCX's best 1 MiB: tag_bw (sm,self), put_bw (cma)",
     ("softverbs ib_write_bw", "bw", 1 << 20),
     [("ucx tag_bw (sm,self)", "bw", 1 << 20),
      ("ucx put_bw (cma, uct zcopy)", "bw", 1 << 20)], ">=", 1.0),
    ("ib_read_bw 1 MiB vs the process_vm_readv limit 1 MiB",
     ("softverbs ib_read_bw", "bw", 1 << 20),
     [("process_vm_readv (one-copy limit)", "bw", 1 << 20)], ">=", 0.9),
    ("ib_write_lat 8 B (typical, one-way) vs UCX put_lat (cma, zcopy) 8 B",
     ("softverbs ib_write_lat", "lat", 8),
     [("ucx put_lat (cma, uct zcopy)", "lat", 8)], "<=", 1.0),
    ("ib_send_lat 8 B vs UCX ucp_am_lat (posix,self) 8 B",
     ("softverbs ib_send_lat", "lat", 8),
     [("ucx ucp_am_lat (posix,self)", "lat", 8)], "<=", 2.0),
    ("ib_send_bw 8 B message rate vs UCX tag_bw (posix,self) 8 B",
     ("softverbs ib_send_bw", "rate", 8),
     [("ucx tag_bw (posix,self)", "rate", 8)], ">=", 1.0),
    # Issue #36: small one-host WRITEs and READs at a fair share of a
    # mapped-memory put/get's rate.
    ("ib_write_bw 8 B message rate vs UCX ucp_put_bw (posix,self) 8 B",
     ("softverbs ib_write_bw", "rate", 8),
     [("ucx ucp_put_bw (posix,self)", "rate", 8)], ">=", 0.25),
    ("ib_read_bw 8 B message rate vs UCX ucp_get_bw (posix,self) 8 B",
     ("softverbs ib_read_bw", "rate", 8),
     [("ucx ucp_get_bw (posix,self)", "rate", 8)], ">=", 0.25),
    # Issue #36: large SENDs at the one-copy limit (paths/chan_rdv.c).
    ("ib_send_bw 1 MiB vs the process_vm_writev limit 1 MiB (issue #36)",
     ("softverbs ib_send_bw", "bw", 1 << 20),
     [("process_vm_writev (one-copy limit)", "bw", 1 << 20)], ">=", 0.9),
    ("ib_send_lat 1 MiB vs softverbs ib_write_lat 1 MiB (issue #36)",
     ("softverbs ib_send_lat", "lat", 1 << 20),
     [("softverbs ib_write_lat", "lat", 1 << 20)], "<=", 1.2),
    # Issue #18: an atomic at the speed of a WRITE, measured the way the
    # issue puts it (perftest's own figures, same run).
    ("ib_atomic_lat 8 B vs softverbs ib_write_lat 8 B (issue #18)",
     ("softverbs ib_atomic_lat", "lat", 8),
     [("softverbs ib_write_lat", "lat", 8)], "<=", 1.5),
]
# Not targets: ratios worth reading next to them.
INFO_RATIOS = [
    ("ib_write_bw 64 KiB vs the process_vm_writev limit 64 KiB",
     ("softverbs ib_write_bw", "bw", 64 << 10),
     [("process_vm_writev (one-copy limit)", "bw", 64 << 10)], ">=", None),
    ("ib_read_bw 64 KiB vs the process_vm_readv limit 64 KiB",
     ("softverbs ib_read_bw", "bw", 64 << 10),
     [("process_vm_readv (one-copy limit)", "bw", 64 << 10)], ">=", None),
    ("ib_write_bw 4 MiB vs the process_vm_writev limit 4 MiB",
     ("softverbs ib_write_bw", "bw", 4 << 20),
     [("process_vm_writev (one-copy limit)", "bw", 4 << 20)], ">=", None),
    ("ib_send_lat 8 B vs libfabric fi_pingpong (shm) 8 B",
     ("softverbs ib_send_lat", "lat", 8),
     [("libfabric fi_pingpong (shm)", "lat", 8)], "<=", None),
]
# Issue #15's targets: the middleware over softverbs, from the same run
# (rows as DONE_WHEN's), then mw_done_when's retransmission row.
MW_DONE_WHEN = [
    ("ucx_perftest tag_bw 1 MiB over softverbs rc_verbs vs softverbs' own "
     "ib_send_bw 1 MiB",
     (UCX_RC_BW, "bw", 1 << 20), [("softverbs ib_send_bw", "bw", 1 << 20)],
     ">=", 0.8),
    ("MPI ping-pong 1 MiB, Open MPI over softverbs (UCX rc_verbs) vs Open "
     "MPI over UCX sm,self",
     (MPI_SV, "bw", 1 << 20), [(MPI_SM, "bw", 1 << 20)], ">=", 0.8),
    # fi_pingpong reports only its mean time per message: held to
    # ib_send_lat's mean (t_avg), not to its median (t_typical), which
    # leaves out the runs' slow outliers that the mean counts.
    ("fi_pingpong -p verbs -e msg 64 KiB vs softverbs ib_send_lat 64 KiB "
     "(both means)",
     (FI_MSG, "lat", 64 << 10),
     [("softverbs ib_send_lat", "lat_avg", 64 << 10)], "<=", 1.5),
    ("fi_pingpong -p verbs -e msg 1 MiB vs softverbs ib_send_lat 1 MiB "
     "(both means)",
     (FI_MSG, "lat", 1 << 20),
     [("softverbs ib_send_lat", "lat_avg", 1 << 20)], "<=", 1.5),
]
# The series whose runs count softverbs' retransmissions (metric retx).
MW_RETX = [UCX_RC_BW, UCX_RC_LAT, MPI_SV, FI_MSG]
IDLE_TARGET = 1.0  # % of one core ("well under 1% of a core")
# What a run leaves in its output directory (the fifth target).
RESULT_FILES = ["results.md", "results.csv", "runs.csv", "commands.txt",
                "bandwidth.png", "latency.png"]


def fmt_target(t):
    """A target factor as the tables write it: one decimal (1.0x, 0.9x)
    unless it has more (0.25x)."""
    return "%.1f" % t if round(t, 1) == t else "%g" % t


def compare(agg, label, numer, denoms, cmp, target):
    """One row: softverbs' median, the (best) anchor's, their ratio, and
    whether the target is met ("n/a" when a figure is missing)."""
    a = agg.get(numer)
    best, best_name = None, None
    for d in denoms:
        b = agg.get(d)
        if b and b["median"] is not None and (best is None or
                                              b["median"] > best):
            best, best_name = b["median"], d[0]
    row = {"target": label, "ours": None, "anchor": best,
           "anchor_name": best_name or ", ".join(d[0] for d in denoms),
           "unit": UNITS[numer[1]], "ratio": None,
           "goal": "%s %sx" % (cmp, fmt_target(target))
                   if target is not None else "-",
           "met": "n/a" if target is not None else "-"}
    if a and a["median"] is not None:
        row["ours"] = a["median"]
    if row["ours"] is None or not best:
        return row
    r = row["ours"] / best
    row["ratio"] = r
    if target is not None:
        row["met"] = "yes" if (r >= target if cmp == ">=" else
                               r <= target) else "no"
    return row


def done_when(agg, out, readme=False, writing=()):
    """The issue's targets as rows (see DONE_WHEN), the idle-CPU one and
    the results-files one.  readme: the rows are for the README section
    bench/readme.py writes, which is itself part of the fifth target;
    writing: result files being written by the caller (count as present)."""
    rows = [compare(agg, *t) for t in DONE_WHEN]
    a = agg.get((IDLE, "cpu", 0))
    v = a["median"] if a else None
    rows.append({"target": "idle process with open softverbs resources "
                 "(PD, MR, CQ, connected RC QP), no traffic: CPU",
                 "ours": v, "anchor": None,
                 "anchor_name": "absolute (issue: well under 1% of a core)",
                 "unit": UNITS["cpu"], "ratio": None,
                 "goal": "< %g %%" % IDLE_TARGET,
                 "met": "n/a" if v is None else
                 "yes" if v < IDLE_TARGET else "no"})
    have = [f for f in RESULT_FILES if f in writing or
            os.path.exists(os.path.join(out, f))]
    rows.append({"target": "figures, plots and commands in bench/results/" +
                 ("; the README shows the table and a plot" if readme else
                  " (README: bench/readme.py)"),
                 "ours": None, "anchor": None,
                 "anchor_name": "%d of %d files: %s" % (
                     len(have), len(RESULT_FILES), ", ".join(RESULT_FILES)),
                 "unit": "", "ratio": None, "goal": "all",
                 "met": "yes" if len(have) == len(RESULT_FILES) else "no"})
    return rows


def mw_done_when(agg):
    """Issue #15's targets as rows (MW_DONE_WHEN), and one for the
    retransmissions: the most any single run of MW_RETX counted."""
    rows = [compare(agg, *t) for t in MW_DONE_WHEN]
    worst, runs = None, 0
    for (name, metric, _), a in agg.items():
        if name in MW_RETX and metric == "retx" and a["max"] is not None:
            worst = max(worst or 0.0, a["max"])
            runs += a["n"]
    rows.append({"target": "retransmissions softverbs counted "
                 "(SOFTVERBS_STATS=1) in the runs of the middleware over "
                 "one host's shared-memory path: the most in one run",
                 "ours": worst, "anchor": None,
                 "anchor_name": "absolute (%d runs)" % runs,
                 "unit": UNITS["retx"], "ratio": None, "goal": "= 0",
                 "met": "n/a" if worst is None else
                 "yes" if worst == 0 else "no"})
    return rows


def info_ratios(agg):
    return [compare(agg, *t) for t in INFO_RATIOS]


def done_when_md(rows):
    """The done-when table in markdown (results.md and the README)."""
    md = ["| target | softverbs | anchor | ratio | goal | met |",
          "|---|---|---|---|---|---|"]
    for r in rows:
        ours = "%s %s" % (num(r["ours"]), r["unit"]) \
            if r["ours"] is not None else "-"
        if r["anchor"] is not None:
            anchor = "%s %s (%s)" % (num(r["anchor"]), r["unit"],
                                     r["anchor_name"])
        else:
            anchor = r["anchor_name"]
        md.append("| %s | %s | %s | %s | %s | %s |" % (
            r["target"], ours, anchor,
            "%.2f" % r["ratio"] if r["ratio"] is not None else "-",
            r["goal"], "**%s**" % r["met"] if r["met"] != "-" else "-"))
    return md


# --------------------------------------------------------------------------
# Comparison with a base build (BENCH_BASE)

# The softverbs figures of the README's Performance tables (bench/readme.py:
# the softverbs rows of BW_ROWS, RATE_ROWS and LAT_ROWS, at KEY_SIZES), each
# with the anchor the comparison takes its ratio to, at the same size: the
# anchor of issue #7's target on that figure where there is one, else an
# anchor of the same kind (a send is a two-sided message, as UCX's tag_bw;
# an atomic is answered by the other process, as ucp_am_lat's message).
README_KEY_SIZES = [8, 4096, 64 << 10, 1 << 20, 4 << 20]
README_FIGURES = [
    ("softverbs ib_write_bw", "bw", "process_vm_writev (one-copy limit)"),
    ("softverbs ib_read_bw", "bw", "process_vm_readv (one-copy limit)"),
    ("softverbs ib_send_bw", "bw", "ucx tag_bw (sm,self)"),
    ("softverbs ib_send_bw", "rate", "ucx tag_bw (posix,self)"),
    ("softverbs ib_write_bw", "rate", "ucx ucp_put_bw (posix,self)"),
    ("softverbs ib_read_bw", "rate", "ucx ucp_get_bw (posix,self)"),
    ("softverbs ib_write_lat", "lat", "ucx put_lat (cma, uct zcopy)"),
    ("softverbs ib_send_lat", "lat", "ucx ucp_am_lat (posix,self)"),
    ("softverbs ib_atomic_lat", "lat", "ucx ucp_am_lat (posix,self)"),
    ("softverbs ib_atomic_bw", "rate", "ucx ucp_fadd (posix,self)"),
]
# Issue #14: every figure within 5% of its ratio to its anchor before the
# change, or better.
COMPARE_TOLERANCE = 0.05
LOWER_IS_BETTER = {"lat", "lat_avg", "cpu", "wake", "warm"}


def compare_row(agg, label, section, what, numer, denoms):
    """One figure at both builds: the raw figures (this build's series
    numer, the base build's twin of it, the best of the anchors denoms),
    the ratios to the anchor, the change of the ratio and its flag."""
    new = compare(agg, what, numer, denoms, ">=", None)
    base_key = (base_name(numer[0], label),) + tuple(numer[1:])
    old = compare(agg, what, base_key, denoms, ">=", None)
    anchor_key = None
    if new["anchor"] is not None:
        anchor_key = (new["anchor_name"],) + tuple(numer[1:])
    row = {"section": section, "figure": what, "series": numer[0],
           "metric": numer[1], "size": numer[2], "unit": UNITS[numer[1]],
           "better": "lower" if numer[1] in LOWER_IS_BETTER else "higher",
           "anchor_name": new["anchor_name"] if denoms else "-",
           "cells": {"anchor": agg.get(anchor_key) if anchor_key else None,
                     "base": agg.get(base_key), "new": agg.get(numer)},
           "anchor": new["anchor"], "base": old["ours"], "new": new["ours"],
           "base_ratio": old["ratio"], "new_ratio": new["ratio"],
           "change": None, "flag": "n/a"}
    # Both ratios share one anchor figure, so their change is that of the
    # softverbs figures; without an anchor figure, the figures' change.
    if row["base_ratio"] and row["new_ratio"] is not None:
        row["change"] = row["new_ratio"] / row["base_ratio"] - 1
    elif row["base"] and row["new"] is not None:
        row["change"] = row["new"] / row["base"] - 1
    if row["change"] is not None:
        worse = row["change"] if row["better"] == "lower" else -row["change"]
        row["flag"] = "WORSE" if worse > COMPARE_TOLERANCE else "ok"
    return row


def compare_builds(agg, label):
    """The comparison's rows: issue #7's targets (DONE_WHEN, and the idle
    process's CPU, an absolute figure: flagged only when it misses its
    target), then the README's softverbs figures (README_FIGURES) that this
    run measured."""
    rows = []
    for what, numer, denoms, _, _ in DONE_WHEN:
        rows.append(compare_row(agg, label, "target", what, numer, denoms))
    idle = compare_row(agg, label, "target", "idle process: CPU (absolute, "
                       "goal < %g %%)" % IDLE_TARGET, (IDLE, "cpu", 0), [])
    if idle["new"] is not None:
        idle["flag"] = "ok" if idle["new"] < IDLE_TARGET else "WORSE"
    rows.append(idle)
    for name, metric, anchor in README_FIGURES:
        for z in README_KEY_SIZES:
            numer = (name, metric, z)
            if numer not in agg and \
                    (base_name(name, label), metric, z) not in agg:
                continue  # not measured in this run (BENCH_ONLY, quick...)
            what = "%s %s %s" % (name[len("softverbs "):], metric,
                                 fmt_size(z))
            rows.append(compare_row(agg, label, "README", what, numer,
                                    [(anchor, metric, z)]))
    return rows


def pct(change):
    return "-" if change is None else "%+.1f%%" % (100 * change)


def ratio_str(r):
    return "-" if r is None else "%.3g" % r


def compare_md(rows, label, rev):
    md = ["| | figure | anchor | anchor figure | softverbs@%s | ratio | "
          "softverbs %s | ratio | change | |" % (label, rev),
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cells"]
        md.append("| %s | %s (%s, %s is better) | %s | %s | %s | %s | %s | "
                  "%s | %s | %s |" % (
                      r["section"], r["figure"], r["unit"], r["better"],
                      r["anchor_name"], cell(c["anchor"]) if r["anchor_name"]
                      != "-" else "-", cell(c["base"]),
                      ratio_str(r["base_ratio"]), cell(c["new"]),
                      ratio_str(r["new_ratio"]), pct(r["change"]),
                      "**%s**" % r["flag"] if r["flag"] == "WORSE"
                      else r["flag"]))
    return md


def write_compare(cfg, agg, label, info):
    """compare.md and compare.csv; returns the rows."""
    rows = compare_builds(agg, label)
    info = dict(info)
    rev = info.get("softverbs", "?")
    with open(os.path.join(cfg.out, "compare.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "figure", "series", "metric", "size", "unit",
                    "better", "anchor_name", "anchor", "base", "new",
                    "base_ratio", "new_ratio", "change_pct", "flag",
                    "anchor_min", "anchor_max", "base_min", "base_max",
                    "new_min", "new_max"])
        for r in rows:
            def g(v):
                return "" if v is None else "%.6g" % v
            spreads = []
            for k in ("anchor", "base", "new"):
                a = r["cells"][k]
                spreads += [g(a and a["min"]), g(a and a["max"])]
            w.writerow([r["section"], r["figure"], r["series"], r["metric"],
                        r["size"], r["unit"], r["better"], r["anchor_name"],
                        g(r["anchor"]), g(r["base"]), g(r["new"]),
                        g(r["base_ratio"]), g(r["new_ratio"]),
                        "" if r["change"] is None else
                        "%.2f" % (100 * r["change"]), r["flag"]] + spreads)
    md = ["# softverbs %s compared with softverbs@%s%s\n" % (
        rev, label, " (BENCH_QUICK: a pipeline check, not real figures)"
        if cfg.quick else ""),
        "Both builds measured in one `make bench` run (%s; the base build: "
        "%s), each softverbs series of the base build right next to the "
        "same series of this build, at every size, in every pass; the "
        "anchors run once, in the same passes, and serve both. %d run(s) "
        "per figure; each figure is the median and, in parentheses, the "
        "spread (min-max). Ratio = softverbs / anchor (with several "
        "anchors, the best of them), both medians of this run. Change = "
        "ratio at this build / ratio at the base build - 1; as the anchor "
        "figure is the same for both, it is also the change of the "
        "softverbs figure. Flagged **WORSE** when worse than %d%% (issue "
        "#14): below -%d%% where higher is better, above +%d%% where lower "
        "is better. \"n/a\": a figure is missing. Every figure: "
        "results.md.\n" % (
            info.get("date", "?"), info.get("compared with (BENCH_BASE)",
                                            "softverbs@" + label),
            cfg.repeats, 100 * COMPARE_TOLERANCE, 100 * COMPARE_TOLERANCE,
            100 * COMPARE_TOLERANCE),
        "Sections: \"target\", issue #7's targets (the done-when table); "
        "\"README\", the softverbs figures of the README's Performance "
        "tables, each with its anchor (README_FIGURES in bench/bench.py).\n"]
    md += compare_md(rows, label, rev)
    worse = [r for r in rows if r["flag"] == "WORSE"]
    md.append("")
    md.append("%d figure(s) compared, %d worse than %d%%, %d n/a." % (
        len(rows), len(worse), 100 * COMPARE_TOLERANCE,
        sum(1 for r in rows if r["flag"] == "n/a")))
    with open(os.path.join(cfg.out, "compare.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return rows


def print_compare(rows, label):
    print("\nCompared with softverbs@%s (ratio = softverbs / anchor; change "
          "= new ratio / base ratio - 1; WORSE: worse than %d%%):"
          % (label, 100 * COMPARE_TOLERANCE))
    print("%-46s %-9s %10s %10s %10s %7s %7s %8s  %s" % (
        "figure", "unit", "anchor", "base", "new", "base r", "new r",
        "change", ""))
    for r in rows:
        print("%-46s %-9s %10s %10s %10s %7s %7s %8s  %s" % (
            r["figure"][:46], r["unit"], num(r["anchor"]), num(r["base"]),
            num(r["new"]), ratio_str(r["base_ratio"]),
            ratio_str(r["new_ratio"]), pct(r["change"]), r["flag"]))
    worse = sum(1 for r in rows if r["flag"] == "WORSE")
    print("%d figure(s) compared, %d worse than %d%%" % (
        len(rows), worse, 100 * COMPARE_TOLERANCE))


def key_sizes(cfg):
    want = [8, 4096, 64 << 10, 1 << 20, 4 << 20]
    ks = [s for s in want if s in cfg.sizes]
    return ks or cfg.sizes[:5]


def write_results(cfg, series, rows, info):
    os.makedirs(cfg.out, exist_ok=True)
    agg = aggregate(rows)
    with open(os.path.join(cfg.out, "info.csv"), "w", newline="") as f:
        csv.writer(f).writerows(info)

    # Every run, with the exact commands.
    with open(os.path.join(cfg.out, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "size", "run", "metric", "value", "unit",
                    "status", "wall_s", "commands"])
        for r in rows:
            w.writerow([r["series"], r["size"], r["run"], r["metric"],
                        "" if r["value"] is None else "%.6g" % r["value"],
                        UNITS[r["metric"]], r["status"], "%.2f" % r["wall"],
                        " ; ".join(r["commands"])])
    with open(os.path.join(cfg.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "size", "metric", "unit", "median", "min", "max",
                    "runs", "failed"])
        for (name, metric, size), a in sorted(agg.items(),
                                              key=lambda kv: (kv[0][0],
                                                              kv[0][1],
                                                              kv[0][2])):
            w.writerow([name, size, metric, UNITS[metric]] +
                       ["" if a[k] is None else "%.6g" % a[k]
                        for k in ("median", "min", "max")] +
                       [a["n"], a["failed"]])
    with open(os.path.join(cfg.out, "commands.txt"), "w") as f:
        f.write("# Every command this run executed, in order "
                "(series, size, run: commands).\n# pvm_bw's copier takes "
                "the pid and address its target printed.\n")
        for r in rows:
            if r["metric"] == series_by_name(series, r["series"]).metrics[0]:
                f.write("%s, %s, run %d (%s):\n" % (r["series"],
                                                    fmt_size(r["size"]),
                                                    r["run"], r["status"]))
                for c in r["commands"]:
                    f.write("    %s\n" % c)

    if UCX_LANES:  # (not in --report mode: the file of the run stays)
        with open(os.path.join(cfg.out, "ucx_transports.txt"), "w") as f:
            f.write("# The transports UCP's endpoints used in this run, per "
                    "series (UCX_LOG_LEVEL=info ep_cfg lines; every run was "
                    "checked against its UCX_TLS).\n")
            for name in sorted(UCX_LANES):
                f.write("%s: %s\n" % (name, " | ".join(
                    sorted(UCX_LANES[name]))))

    plots = draw_plots(cfg, series, agg)

    # The issue's targets, from this run's medians.
    ks = key_sizes(cfg)
    rat = done_when(agg, cfg.out, writing={"results.md"})
    mw_rat = mw_done_when(agg)
    info_rat = info_ratios(agg)
    with open(os.path.join(cfg.out, "done_when.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["target", "softverbs", "anchor", "anchor_name", "unit",
                    "ratio", "goal", "met"])
        for r in rat + mw_rat + info_rat:
            w.writerow([r["target"]] + ["" if r[k] is None else
                                        "%.6g" % r[k] if isinstance(r[k], float)
                                        else r[k] for k in
                                        ("ours", "anchor", "anchor_name",
                                         "unit", "ratio", "goal", "met")])

    # The markdown report.
    md = []
    md.append("# softverbs benchmark results%s\n" %
              (" (BENCH_QUICK: a pipeline check, not real figures)"
               if cfg.quick else ""))
    md.append("Produced by `make bench` (bench/run.sh, bench/bench.py). "
              "%d run(s) per figure; each cell is the median and, in "
              "parentheses, the spread (min-max). Bandwidth in MiB/s, latency "
              "in microseconds one-way (median where the tool gives one), "
              "message rate in millions of messages per second. Every pair of "
              "processes is pinned to cores %s and %s (taskset).\n"
              % (cfg.repeats, cfg.cpu_server, cfg.cpu_client))
    md.append("| | |\n|---|---|")
    for k, v in info:
        md.append("| %s | %s |" % (k, v))
    md.append("")
    md.append("## Done when (issue #7's targets, from this run's medians)\n")
    md.append("Ratio = softverbs / anchor, both medians of this run; with "
              "several anchors, the best of them. \"n/a\": a figure is "
              "missing (its runs failed or were not run).\n")
    md += done_when_md(rat)
    md.append("")
    md.append("## Done when (issue #15's targets: the middleware over "
              "softverbs, from this run's medians)\n")
    md += done_when_md(mw_rat)
    md.append("")
    md.append("Other ratios, for information:\n")
    md += done_when_md(info_rat)
    md.append("")
    label = base_label_of(s.name for s in series)
    if label:
        md.append("The same figures through the base build, softverbs@%s "
                  "(BENCH_BASE), measured next to these: "
                  "[compare.md](compare.md).\n" % label)
    a_cpu, a_wake = agg.get((IDLE, "cpu", 0)), agg.get((IDLE, "wake", 0))
    a_warm = agg.get((IDLE, "warm", 0))
    if a_cpu or a_wake:
        md.append("## Idle\n")
        md.append("`bench/idle_cpu.c`: two processes, each with a PD, an MR, "
                  "a CQ and a connected RC QP (one SEND each way, a receive "
                  "posted), sleep for %g s; CPU time of every thread of each "
                  "process over that window (CLOCK_PROCESS_CPUTIME_ID), the "
                  "busier of the two; then the first SEND round trip after "
                  "the window, next to one made just before it.\n"
                  % cfg.length["idle"])
        md.append("| figure | median (min-max) |\n|---|---|")
        md.append("| CPU while idle (%s) | %s |" % (UNITS["cpu"],
                                                     cell(a_cpu)))
        md.append("| first round trip after idleness (usec) | %s |"
                  % cell(a_wake))
        md.append("| a round trip just before the idle window (usec) | %s |"
                  % cell(a_warm))
        md.append("")
    for metric, title in (("bw", "Bandwidth (MiB/s)"),
                          ("rate", "Message rate (Mmsg/s)"),
                          ("lat", "Latency (usec, one-way)")):
        names = [s.name for s in series if metric in s.metrics and
                 any(k[0] == s.name and k[1] == metric for k in agg)]
        if not names:
            continue
        md.append("## %s at key sizes\n" % title)
        md.append("| series | " + " | ".join(fmt_size(z) for z in ks) + " |")
        md.append("|---|" + "---|" * len(ks))
        for n in names:
            md.append("| %s | %s |" % (n, " | ".join(
                key_cell(agg, n, metric, z) for z in ks)))
        md.append("")
    if plots:
        md.append("## Plots\n")
        for p in plots:
            md.append("![%s](%s)\n" % (p, p))
    md.append("## Every figure\n")
    md.append("All sizes: results.csv (median, min, max per figure), runs.csv "
              "(every run, with its commands), commands.txt.\n")
    md.append("| series | size | metric | median | min | max | runs | failed |")
    md.append("|---|---|---|---|---|---|---|---|")
    for s in series:
        for metric in s.metrics:
            for z in sorted({k[2] for k in agg if k[0] == s.name and
                             k[1] == metric}):
                a = agg[(s.name, metric, z)]
                md.append("| %s | %s | %s (%s) | %s | %s | %s | %d | %d |" % (
                    s.name, fmt_size(z), metric, UNITS[metric],
                    num(a["median"]), num(a["min"]), num(a["max"]), a["n"],
                    a["failed"]))
    with open(os.path.join(cfg.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return agg, rat + mw_rat + info_rat, ks


def series_by_name(series, name):
    for s in series:
        if s.name == name:
            return s
    raise KeyError(name)


def draw_plots(cfg, series, agg):
    if not shutil.which("gnuplot"):
        print("bench: gnuplot not found, no plots", file=sys.stderr)
        return []
    data = os.path.join(cfg.out, "data")
    os.makedirs(data, exist_ok=True)
    made = []
    # Distinct colours: softverbs' lines are thick and solid, anchors dashed.
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
               "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5",
               "#c49c94"]
    for group, metric, png, ylabel, title in (
            ("bw", "bw", "bandwidth.png", "bandwidth (MiB/s)",
             "Bandwidth versus message size"),
            ("lat", "lat", "latency.png", "latency, one-way (usec)",
             "Latency versus message size")):
        plots = []
        # A base build's series (BENCH_BASE) has its twin's colour, dotted.
        colour_of = {}
        for s in series:
            # By metric, not group: fi_pingpong's ping-pong bandwidth goes
            # on the bandwidth plot too.
            if metric not in s.metrics:
                continue
            pts = sorted((k[2], a) for k, a in agg.items()
                         if k[0] == s.name and k[1] == metric and
                         a["median"] is not None)
            if not pts:
                continue
            path = os.path.join(data, "%s.%s.dat" % (slug(s.name), metric))
            with open(path, "w") as f:
                f.write("# size median min max  (%s, %s)\n" % (s.name,
                                                               UNITS[metric]))
                for z, a in pts:
                    f.write("%d %.6g %.6g %.6g\n" % (z, a["median"], a["min"],
                                                     a["max"]))
            if s.base_of:
                style = "lw 2 dt 3 pt 7 ps 0.8"
            elif s.softverbs:
                style = "lw 3 pt 7 ps 1.2"
            else:
                style = "lw 1.5 dt 2 pt 6"
            colour = colour_of.get(s.base_of) or \
                colours[len(colour_of) % len(colours)]
            if not s.base_of:
                colour_of[s.name] = colour
            plots.append("'%s' using 1:2:3:4 with yerrorlines %s lc rgb '%s' "
                         "title '%s'" % (os.path.relpath(path, cfg.out), style,
                                         colour, s.name))
        if not plots:
            continue
        gp = os.path.join(cfg.out, png.replace(".png", ".gp"))
        with open(gp, "w") as f:
            f.write("set terminal pngcairo noenhanced size 1400,860 "
                    "font 'sans,11'\n")
            # Paths relative to the output directory (gnuplot runs there):
            # the scripts stay valid wherever the results are copied.
            f.write("set output '%s'\n" % png)
            f.write("set title '%s%s'\n" % (title, " (BENCH_QUICK)"
                                            if cfg.quick else ""))
            f.write("set logscale xy\nset grid\n"
                    "set key outside right top Left reverse\n")
            f.write("set xlabel 'message size (bytes)'\nset ylabel '%s'\n"
                    % ylabel)
            f.write("set xtics ('8' 8, '64' 64, '256' 256, '1K' 1024, "
                    "'4K' 4096, '16K' 16384, '64K' 65536, '256K' 262144, "
                    "'1M' 1048576, '4M' 4194304)\n")
            f.write("plot " + ", \\\n     ".join(plots) + "\n")
        res = subprocess.run(["gnuplot", os.path.basename(gp)], cwd=cfg.out,
                             capture_output=True, text=True)
        if res.returncode != 0:
            print("bench: gnuplot failed on %s: %s" % (gp, res.stderr.strip()),
                  file=sys.stderr)
            continue
        made.append(png)
    return made


def estimate(cfg, series, rows):
    """Extrapolate a full run from this run's wall times: mean wall time per
    run of each series (corrected for fixed-length tools) times the number of
    runs a full run makes."""
    total = 0.0
    for s in series:
        walls = [r["wall"] for r in rows if r["series"] == s.name and
                 r["metric"] == s.metrics[0]]
        if not walls:
            continue
        per_run = statistics.mean(walls)
        if s.length is not None:
            per_run += Config.lengths(False)[s.length] - cfg.length[s.length]
        total += per_run * len(s.sizes(cfg, full=True)) * 3
    return total


# --------------------------------------------------------------------------


def tool_versions():
    out = []
    for pkg in ("perftest", "ucx-utils", "libfabric-bin", "iperf3",
                "sockperf", "gnuplot-nox"):
        v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                           capture_output=True, text=True).stdout.strip()
        out.append("%s %s" % (pkg, v or "?"))
    return ", ".join(out)


def describe(path):
    """git describe of the tree path is in (commit, "-dirty" if changed)."""
    try:
        return subprocess.run(["git", "-C", path, "describe", "--always",
                               "--dirty"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def host_info(cfg):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    rev = describe(REPO)
    return [("date", datetime.datetime.now().astimezone().strftime(
                "%Y-%m-%d %H:%M:%S %z")),
            ("softverbs", rev or "?"),
            ("host", "%s, kernel %s, %d CPUs: %s" % (platform.node(),
                                                      platform.release(),
                                                      os.cpu_count(), cpu)),
            ("tools", tool_versions()),
            ("load average at start", " ".join("%.2f" % x
                                               for x in os.getloadavg()))]


def run_plan(plan, runner, rows, timed_out):
    # Repeats are whole passes over every series, so slow drift in the
    # machine's state spreads over all figures instead of biasing one.
    start = time.monotonic()
    width = max([38] + [len(s.name) for _, s, _ in plan])
    for i, (rep, s, z) in enumerate(plan, 1):
        tag = "%s.%d.r%d" % (slug(s.name), z, rep)
        t0 = time.monotonic()
        vals, cmds, err = None, [], "?"
        runner.commands = []
        if t0 - start > runner.cfg.budget:
            # Something made this run far slower than it should be (runs
            # timing out, say): report what was measured rather than go on.
            err = "skipped: time budget of %.0f min spent (BENCH_BUDGET_MIN)" \
                % (runner.cfg.budget / 60)
        elif timed_out.get((s.name, rep), z) < z:
            # A larger message will not be faster: do not wait again.
            err = "skipped: %s timed out in this pass" % fmt_size(
                timed_out[(s.name, rep)])
        else:
            for attempt in (1, 2):  # one retry: a port taken meanwhile, say
                runner.commands = []
                try:
                    vals, cmds = s.run(runner, z, tag)
                    break
                except RunTimeout as e:
                    err = "%s" % e
                    timed_out[(s.name, rep)] = z
                    break
                except (RunError, OSError, ValueError, KeyError,
                        IndexError) as e:
                    err = "%s" % e
                except Exception as e:  # a bug here must not end the suite
                    err = "%s: %s" % (type(e).__name__, e)
                    break
        wall = time.monotonic() - t0
        cmds = runner.commands if vals is None else cmds
        for m in s.metrics:
            ok = vals is not None and m in vals
            rows.append({"series": s.name, "size": z, "run": rep, "metric": m,
                         "value": vals[m] if ok else None,
                         "status": "ok" if ok else err if
                         err.startswith("skipped") else "failed: " + err,
                         "wall": wall, "commands": cmds})
        shown = ", ".join("%s %s %s" % (m, num(vals[m]), UNITS[m])
                          for m in s.metrics if m in vals) if vals else \
            "FAILED: " + err
        print("[%3d/%d] %-*s %8s run %d: %s (%.1f s)"
              % (i, len(plan), width, s.name, fmt_size(z), rep, shown, wall),
              flush=True)


def summarize(cfg, series, rows, info):
    """Write the results and print the tables."""
    agg, rat, ks = write_results(cfg, series, rows, info)

    print("\nDone when (issues #7 and #15's targets, this run's medians; "
          "ratio = softverbs / anchor):")
    for r in rat:
        if r["ratio"] is not None:
            fig = "%s / %s %s = %.2f" % (num(r["ours"]), num(r["anchor"]),
                                         r["unit"], r["ratio"])
        elif r["ours"] is not None:
            fig = "%s %s" % (num(r["ours"]), r["unit"])
        elif not r["unit"]:
            fig = r["anchor_name"].split(":")[0]
        else:
            fig = "no figure"
        print("  %-4s %s: %s%s" % (r["met"], r["target"], fig,
                                   " (goal %s)" % r["goal"]
                                   if r["goal"] != "-" else ""))
    for metric in ("bw", "rate", "lat", "cpu"):
        names = [s.name for s in series if metric in s.metrics]
        if metric == "cpu":
            for n in names:
                what = "idle CPU (%s)" % UNITS["cpu"] if n == IDLE else \
                    "idle CPU, %s" % n.split()[0]
                print("\n%-40s%22s" % (what, cell(agg.get((n, "cpu", 0)))))
            continue
        if not names:
            continue
        print("\n%-40s" % ("%s (%s)" % (metric, UNITS[metric])) +
              "".join("%22s" % fmt_size(z) for z in ks))
        for n in names:
            print("%-40s" % n[:40] + "".join("%22s" % key_cell(agg, n, metric, z)
                                             for z in ks))
    label = base_label_of(s.name for s in series)
    if label:
        print_compare(write_compare(cfg, agg, label, info), label)
    failed = sum(1 for r in rows if r["status"] != "ok")
    print("\nbench: %d run(s), %d failed figure(s); results in %s "
          "(results.md, results.csv, runs.csv, commands.txt, *.png%s)"
          % (len({(r["series"], r["size"], r["run"]) for r in rows}), failed,
             cfg.out, ", compare.md, compare.csv" if label else ""))


def read_runs(cfg):
    """The rows and host information of a finished run, from its files."""
    rows = []
    with open(os.path.join(cfg.out, "runs.csv"), newline="") as f:
        for r in csv.DictReader(f):
            rows.append({"series": r["series"], "size": int(r["size"]),
                         "run": int(r["run"]), "metric": r["metric"],
                         "value": float(r["value"]) if r["value"] else None,
                         "status": r["status"], "wall": float(r["wall_s"]),
                         "commands": r["commands"].split(" ; ")
                         if r["commands"] else []})
    try:
        with open(os.path.join(cfg.out, "info.csv"), newline="") as f:
            info = [tuple(r) for r in csv.reader(f)]
    except OSError:
        info = [("host", "not recorded")]
    return rows, info


def main():
    report_only = sys.argv[1:2] == ["--report"]
    if report_only:
        del sys.argv[1]
    if len(sys.argv) != 3:
        print("usage: bench.py [--report] BUILD_DIR HELPER_BIN_DIR\n"
              "  --report: rewrite the tables and plots of the last run in the "
              "output directory, from its runs.csv", file=sys.stderr)
        return 2
    cfg = Config(sys.argv[1], sys.argv[2])
    if not os.access(cfg.softverbs, os.X_OK):
        print("bench: %s not found: build first (make)" % cfg.softverbs,
              file=sys.stderr)
        return 1
    gid = gid_index(cfg.softverbs)
    if report_only:
        rows, info = read_runs(cfg)
        names = {r["series"] for r in rows}
        # The base build's series are named after its label; they are not
        # run again, so BENCH_BASE need not be set.
        label = base_label_of(names)
        series = softverbs_series(cfg, gid, label, gid) + ucx_series(cfg) + \
            other_series(cfg) + mw_series(cfg)
        series = [s for s in series if s.name in names]
        summarize(cfg, series, rows, info)
        return 0
    base_gid = None
    if cfg.base and not re.fullmatch(r"[^\s@]+", cfg.base_label):
        print("bench: BENCH_BASE_LABEL: one word, no '@'", file=sys.stderr)
        return 1
    if cfg.base:
        if not os.access(cfg.base_softverbs, os.X_OK):
            print("bench: BENCH_BASE: %s not found: build that commit first "
                  "(make in its tree)" % cfg.base_softverbs, file=sys.stderr)
            return 1
        base_gid = gid_index(cfg.base_softverbs)
    series = softverbs_series(cfg, gid, cfg.base_label, base_gid) + \
        ucx_series(cfg) + other_series(cfg) + mw_series(cfg)
    if cfg.only:
        series = [s for s in series if any(w in s.name for w in cfg.only)]
    os.makedirs(os.path.join(cfg.out, "raw"), exist_ok=True)
    runner = Runner(cfg)
    info = host_info(cfg)
    info.append(("softverbs loopback GID index", gid))
    if cfg.base:
        info.append(("compared with (BENCH_BASE)", "softverbs@%s: %s (%s)" % (
            cfg.base_label, cfg.base, describe(cfg.base) or "not in git")))
    knobs = ["%s=%s" % (k, os.environ[k]) for k in
             ("BENCH_REPEATS", "BENCH_SIZES", "BENCH_ONLY", "BENCH_CPUS")
             if os.environ.get(k)]
    info.append(("mode", ("BENCH_QUICK (pipeline check)" if cfg.quick
                          else "full") + (", " + ", ".join(knobs)
                                          if knobs else "")))

    # Within a pass, size by size across the series: a softverbs figure
    # and its anchors at one size run seconds apart, not minutes.  The
    # host's state drifts over minutes (on the VM this suite was tuned on,
    # cross-core latency doubles or triples for minutes at a time, for
    # UCX and softverbs alike), and a ratio of figures taken in different
    # states measures the host, not softverbs.
    sizes = sorted({z for s in series for z in s.sizes(cfg)})
    # A base build's series (BENCH_BASE) runs right next to the same series
    # of this build, at the same size, in the same pass.
    plan = [(rep, s, z) for rep in range(1, cfg.repeats + 1)
            for z in sizes for s in pass_order(series, rep)
            if z in s.sizes(cfg)]
    print("bench: %d runs (%d series, %d repeat(s)); output in %s"
          % (len(plan), len(series), cfg.repeats, cfg.out), flush=True)
    rows = []
    start = time.monotonic()
    timed_out = {}  # (series, repeat) -> the size that timed out

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        run_plan(plan, runner, rows, timed_out)
    except KeyboardInterrupt:
        runner.end_all()
        print("bench: interrupted; no results written", file=sys.stderr)
        return 130
    runner.end_all()

    info.append(("load average at end", " ".join("%.2f" % x
                                                 for x in os.getloadavg())))
    info.append(("suite wall time", "%.0f s" % (time.monotonic() - start)))
    summarize(cfg, series, rows, info)
    if cfg.quick:
        print("bench: a full run (all sizes, 3 repeats) would take about "
              "%.0f minutes on this machine" % (estimate(cfg, series, rows) / 60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
