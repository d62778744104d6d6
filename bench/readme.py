#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Write the README's "Performance" section from a benchmark run's files.

    python3 bench/readme.py [--force] [RESULTS_DIR]   (default: bench/results)

Reads RESULTS_DIR/results.csv and info.csv (written by `make bench`) and
replaces, in README.md, everything between the two marker comments
<!-- bench:performance:begin --> and <!-- bench:performance:end --> with: where
the figures come from, the issue's targets with this run's figures (the
same rows as results.md's "Done when", recomputed from results.csv), the
main figures at key sizes, and the plots.  Without a full run's results
(none yet, or only a BENCH_QUICK run) the section says so and shows only
what the suite will measure (--force: publish such a run's figures anyway).
Run it after `make bench`; nothing else edits that section.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (the suite's own tables and targets)

BEGIN = "<!-- bench:performance:begin -->"
END = "<!-- bench:performance:end -->"

# The figures the README shows (results.md has every one).
BW_ROWS = ["softverbs ib_write_bw", "softverbs ib_read_bw",
           "softverbs ib_send_bw", "process_vm_writev (one-copy limit)",
           "process_vm_readv (one-copy limit)", "ucx tag_bw (sm,self)",
           "ucx put_bw (cma, uct zcopy)", "libfabric fi_pingpong (shm)",
           "iperf3 TCP loopback", "memcpy (one process)"]
# Issue #15: the middleware over softverbs next to the same middleware over
# its own shared memory.
MW_BW_ROWS = [bench.UCX_RC_BW, "ucx tag_bw (sm,self)", bench.MPI_SV,
              bench.MPI_SM]
MW_LAT_ROWS = [bench.UCX_RC_LAT, "ucx tag_lat (sm,self)", bench.MPI_SV,
               bench.MPI_SM, bench.FI_MSG, "softverbs ib_send_lat",
               "libfabric fi_pingpong (shm)"]
LAT_ROWS = ["softverbs ib_write_lat", "softverbs ib_send_lat",
            "softverbs ib_atomic_lat", "ucx put_lat (cma, uct zcopy)",
            "ucx ucp_am_lat (posix,self)", "ucx ucp_put_lat (sm,self)",
            "libfabric fi_pingpong (shm)", "sockperf UDP loopback"]
RATE_ROWS = ["softverbs ib_send_bw", "softverbs ib_write_bw",
             "softverbs ib_read_bw", "softverbs ib_atomic_bw",
             "ucx tag_bw (posix,self)", "ucx ucp_put_bw (posix,self)",
             "ucx ucp_get_bw (posix,self)", "ucx ucp_fadd (posix,self)"]
KEY_SIZES = bench.README_KEY_SIZES  # (bench.README_FIGURES: the comparison)


def read_agg(out):
    """results.csv -> {(series, metric, size): {median, min, max, n,
    failed}}, the shape bench.aggregate() gives."""
    agg = {}
    with open(os.path.join(out, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            def val(k):
                return float(r[k]) if r[k] else None
            agg[(r["series"], r["metric"], int(r["size"]))] = {
                "median": val("median"), "min": val("min"),
                "max": val("max"), "n": int(r["runs"]),
                "failed": int(r["failed"])}
    return agg


def read_info(out):
    try:
        with open(os.path.join(out, "info.csv"), newline="") as f:
            return {r[0]: r[1] for r in csv.reader(f) if len(r) >= 2}
    except OSError:
        return {}


def rel(path):
    return os.path.relpath(path, REPO)


def table(agg, names, metric, title):
    names = [n for n in names if any(k[0] == n and k[1] == metric
                                     for k in agg)]
    if not names:
        return []
    md = ["%s\n" % title,
          "| | " + " | ".join(bench.fmt_size(z) for z in KEY_SIZES) + " |",
          "|---|" + "---|" * len(KEY_SIZES)]
    for n in names:
        cells = [bench.key_cell(agg, n, metric, z) for z in KEY_SIZES]
        md.append("| %s | %s |" % ("**%s**" % n if n.startswith("softverbs")
                                   else n, " | ".join(cells)))
    md.append("")
    return md


def section(out):
    md = ["## Performance", ""]
    have = os.path.exists(os.path.join(out, "results.csv"))
    info = read_info(out) if have else {}
    # A run with BENCH_ONLY, BENCH_SIZES... is not "one make bench run".
    full = have and (info.get("mode") == "full" or FORCE)
    if not full:
        md.append("No benchmark figures are published yet. They will come "
                  "from one full `make bench` run on this project's 2-core "
                  "development machine (every figure the median of 3 runs, "
                  "softverbs and its anchors measured in the same run), "
                  "written to `bench/results/` and copied here by "
                  "`python3 bench/readme.py`%s." %
                  (" (the results there now are from a partial or "
                   "BENCH_QUICK run: %s)" % info.get("mode", "?")
                   if have else ""))
        md.append("")
        md.append("The run decides these targets of issue #7 (ratio = "
                  "softverbs / anchor):")
        md.append("")
        for label, _, _, cmp, target in bench.DONE_WHEN:
            md.append("- %s: %s %.1fx" % (label, cmp, target))
        md.append("- idle process with open softverbs resources: CPU < "
                  "%g%% of a core" % bench.IDLE_TARGET)
        md.append("")
        md.append("and these of issue #15 (the middleware):")
        md.append("")
        for label, _, _, cmp, target in bench.MW_DONE_WHEN:
            md.append("- %s: %s %.1fx" % (label, cmp, target))
        md.append("- no retransmission counted by softverbs in the "
                  "middleware runs")
        md.append("")
        return md

    agg = read_agg(out)
    md.append("Figures from one `make bench` run (%s, softverbs %s, %s; "
              "%s; load average %s at the start, %s at the end); each "
              "figure is the median of the runs, with the spread "
              "(min-max) in the tables below. Every figure, the commands "
              "that made them and the plots: [%s](%s). Bandwidth in MiB/s, "
              "latency one-way in microseconds, message rate in millions of "
              "messages per second." % (
                  info.get("date", "?"), info.get("softverbs", "?"),
                  info.get("host", "?"), info.get("mode", "?"),
                  info.get("load average at start", "?").split(" ")[0],
                  info.get("load average at end", "?").split(" ")[0],
                  rel(os.path.join(out, "results.md")),
                  rel(os.path.join(out, "results.md"))))
    md.append("")
    md.append("Issue #7's targets (ratio = softverbs / anchor, both from "
              "this run):")
    md.append("")
    md += bench.done_when_md(bench.done_when(agg, out, readme=True))
    md.append("")
    md += table(agg, BW_ROWS, "bw", "Bandwidth (MiB/s):")
    md += table(agg, RATE_ROWS, "rate", "Message rate (Mmsg/s):")
    md += table(agg, LAT_ROWS, "lat", "Latency (usec, one-way):")
    if any(k[0] in bench.MW_RETX for k in agg):
        md.append("Issue #15's targets: the middleware through `softverbs "
                  "run` over softverbs0 (UCX_TLS=%s) against the same "
                  "middleware over its own shared memory, same run, same "
                  "pinning:" % bench.MW_UCX_TLS)
        md.append("")
        md += bench.done_when_md(bench.mw_done_when(agg))
        md.append("")
        md += table(agg, MW_BW_ROWS, "bw",
                    "Middleware bandwidth (MiB/s; the MPI ping-pong's is "
                    "the message size over its one-way time):")
        md += table(agg, MW_LAT_ROWS, "lat",
                    "Middleware latency (usec, one-way):")
    for png, what in (("bandwidth.png", "Bandwidth versus message size"),
                      ("latency.png", "Latency versus message size")):
        if os.path.exists(os.path.join(out, png)):
            md.append("![%s](%s)" % (what, rel(os.path.join(out, png))))
            md.append("")
    return md


FORCE = False


def main():
    global FORCE
    args = sys.argv[1:]
    if args[:1] == ["--force"]:  # publish a partial run's figures anyway
        FORCE = True
        args = args[1:]
    out = os.path.abspath(args[0] if args else os.path.join(HERE, "results"))
    readme = os.path.join(REPO, "README.md")
    with open(readme) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print("readme.py: README.md has no %s ... %s markers" % (BEGIN, END),
              file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = "\n".join(section(out)).rstrip("\n")
    with open(readme, "w") as f:
        f.write(head + BEGIN + "\n" + body + "\n" + END + tail)
    print("readme.py: README.md's Performance section written from %s"
          % rel(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
