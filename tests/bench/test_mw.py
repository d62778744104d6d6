#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bench/bench.py's middleware series (issue #15) on made-up outputs and
figures: the retransmission count read from softverbs' statistics, the MPI
ping-pong's line, and the middleware targets.  No benchmark runs.  Run by
ctest (bench.mw) or `python3 tests/bench/test_mw.py`."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import bench  # noqa: E402

# What SOFTVERBS_STATS=1 prints (engine/diag/stats.c): a QP's line at its
# destroy, then each context's counters at close; two contexts.
STATS = """Final: 4096 ...
softverbs stats: context 0x5581
  sent_pkts                         12  packets sent
  probe_retransmit                   3  early resends while waiting for an ACK
  shm_tx_pkts                     9000  packets sent through shared memory
softverbs: destroying qp 0x012301 RC RTS: path=shm, sent 9 WRs (72 B), ...
softverbs stats: context 0x7f00
  fast_retransmit                    2  retries after a duplicate ACK
  shm_ring_full                      1  packets lost: the peer's ring was full
"""


def fig(median, mx=None):
    return {"median": median, "min": median,
            "max": median if mx is None else mx, "n": 3, "failed": 0}


class Parse(unittest.TestCase):
    def test_retx_sums_every_context(self):
        self.assertEqual(bench.parse_retx(STATS), 6.0)

    def test_retx_zero_when_none_printed(self):
        self.assertEqual(bench.parse_retx(
            "softverbs stats: context 0x1\n  shm_tx_pkts  5  x\n"), 0.0)

    def test_retx_without_statistics_is_an_error(self):
        with self.assertRaises(bench.RunError):
            bench.parse_retx("Final: 4096 ...\n")

    def test_mpi_pingpong_line(self):
        vals = bench.parse_mpi_pingpong(
            "[info] ucp ep_cfg[0]: tag(rc_verbs/softverbs0:1)\n"
            "size=1048576 iters=1024 usec=100.000 MiBps=10000.00\n")
        self.assertEqual(vals, {"lat": 100.0, "bw": 10000.0})


class PerftestLat(unittest.TestCase):
    def test_median_and_mean(self):
        out = (" #bytes #iterations    t_min[usec]    t_max[usec]  "
               "t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
               "99% percentile[usec]   99.9% percentile[usec] \n"
               " 65536   1000          20.09          4094.52      21.24    "
               "\t       26.16       \t90.19  \t\t70.45   \t\t4094.52\n")
        self.assertEqual(bench.parse_perftest_lat(out),
                         {"lat": 21.24, "lat_avg": 26.16})


class Targets(unittest.TestCase):
    def rows(self, figures):
        return {r["target"]: r for r in bench.mw_done_when(figures)}

    def test_met_and_missed(self):
        mib, k64 = 1 << 20, 64 << 10
        agg = {(bench.UCX_RC_BW, "bw", mib): fig(4000.0),
               ("softverbs ib_send_bw", "bw", mib): fig(4000.0),
               (bench.MPI_SV, "bw", mib): fig(700.0),
               (bench.MPI_SM, "bw", mib): fig(1000.0),
               (bench.FI_MSG, "lat", k64): fig(30.0),
               ("softverbs ib_send_lat", "lat_avg", k64): fig(20.0),
               (bench.FI_MSG, "retx", k64): fig(0.0),
               (bench.UCX_RC_BW, "retx", mib): fig(0.0, 2.0)}
        rows = list(bench.mw_done_when(agg))
        met = [r["met"] for r in rows]
        # tag_bw 1.0x (>= 0.8), MPI 0.7x (< 0.8), fi 64 KiB 1.5x (<= 1.5),
        # fi 1 MiB missing, and one run resent 2 packets.
        self.assertEqual(met, ["yes", "no", "yes", "n/a", "no"])
        self.assertEqual(rows[-1]["ours"], 2.0)
        self.assertEqual(rows[-1]["anchor_name"], "absolute (6 runs)")

    def test_no_runs(self):
        self.assertEqual(bench.mw_done_when({})[-1]["met"], "n/a")


class Sizes(unittest.TestCase):
    def test_key_sizes_of_this_run(self):
        class Cfg:
            sizes = [8, 64, 64 << 10, 1 << 20]
        self.assertEqual(bench.mw_sizes(Cfg), [8, 64 << 10, 1 << 20])
        self.assertEqual(bench.mw_sizes(Cfg, full=True),
                         bench.README_KEY_SIZES)


if __name__ == "__main__":
    unittest.main()
