#!/usr/bin/env python3
"""ratios.py DIR...: per repeat, ib_write_lat / sockperf blocking (cores
busy) and ib_send_lat / the floor (answer + ACK), typical latencies, from
each DIR's netns.csv; then the median of each build's ratios (a build is
DIR's name without its trailing digits)."""
import csv, re, statistics, sys
PAIRS = (("ib_write_lat", "sockperf UDP blocking (cores busy)"),
         ("ib_send_lat", "udp_floor: softverbs' socket, answer + ACK"))
by = {}
for d in sys.argv[1:]:
    v = {}
    for r in csv.DictReader(open(d + "/netns.csv")):
        if r["metric"] == "lat" and r["status"] == "ok":
            v[(r["series"], r["run"])] = float(r["value"])
    b = re.sub(r"\d+$", "", d.rstrip("/").split("/")[-1])
    for t, a in PAIRS:
        for run in "123":
            if (t, run) in v and (a, run) in v and v[(t, run)] != float("inf"):
                x = v[(t, run)] / v[(a, run)]
                by.setdefault((b, t), []).append((x, v[(t, run)], v[(a, run)]))
for (b, t), xs in sorted(by.items()):
    print("%-5s %-13s median ratio %.2f (%s); %s median %.2f us, anchor %.2f us" % (
        b, t, statistics.median(x[0] for x in xs),
        " ".join("%.2f" % x[0] for x in xs), t,
        statistics.median(x[1] for x in xs), statistics.median(x[2] for x in xs)))
