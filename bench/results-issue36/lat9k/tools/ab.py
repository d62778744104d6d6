#!/usr/bin/env python3
"""Interleaved A/B: udp_floor ack/one and ib_send_lat of several builds."""
import os, sys, statistics, time
sys.path.insert(0, "/work/wt/lat9k/bench")
os.environ.setdefault("BENCH_OUT", "/tmp/lat9k/out")
import netns as N
import bench as B

builds = dict(a.split("=", 1) for a in sys.argv[1].split(","))
mtus = [int(m) for m in sys.argv[2].split(",")]
reps = int(sys.argv[3])
iters = sys.argv[4] if len(sys.argv) > 4 else "2000"
tools = (sys.argv[5] if len(sys.argv) > 5 else "ib_send_lat").split(",")
floors = (sys.argv[6] if len(sys.argv) > 6 else "ack").split(",")
objs = {k: N.Netns(v) for k, v in builds.items()}
first = next(iter(objs.values()))
res = {}
N.setup()
try:
    for mtu in mtus:
        N.set_mtu(mtu)
        gids = (N.gid_index(first.softverbs, N.NS[0], N.ADDR[0]),
                N.gid_index(first.softverbs, N.NS[1], N.ADDR[1]))
        os.makedirs(first.raw, exist_ok=True)
        for rep in range(reps):
            for f in floors:
                v = first.floor("f%s-%d-%d" % (f, mtu, rep), f)["lat"]
                res.setdefault((mtu, "floor " + f), []).append(v)
                print(mtu, rep, "floor", f, v, flush=True)
            for k, o in objs.items():
                os.makedirs(o.raw, exist_ok=True)
                for tool in tools:
                    port = o.next_port()
                    common = ["-d", "softverbs0", "-p", str(port), "-s", "8", "-n", iters]
                    srv = [o.softverbs, "run", "--", tool, "-x", gids[0]] + common
                    cli = [o.softverbs, "run", "--", tool, "-x", gids[1]] + common + [N.ADDR[0]]
                    try:
                        out, _ = o.pair("%s-%s-%d-%d" % (k, tool, mtu, rep), srv, cli, port)
                        fig = B.parse_perftest_lat(out)
                    except B.RunError as e:
                        print("fail", e); continue
                    res.setdefault((mtu, k + " " + tool), []).append(fig["lat"])
                    res.setdefault((mtu, k + " " + tool + " avg"), []).append(fig["lat_avg"])
                    print(mtu, rep, k, tool, fig, flush=True)
finally:
    N.teardown()
for (mtu, name), vals in sorted(res.items()):
    print("%5d %-28s median %.3f min %.3f max %.3f  n=%d  %s" % (mtu, name, statistics.median(vals), min(vals), max(vals), len(vals), " ".join("%.2f" % v for v in vals)))
