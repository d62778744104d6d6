#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bench/netns.py's targets (issue #20) and tables on made-up figures: the
ratios, which side of each target is "met", the loss rows, failures listed.
No benchmark runs.  Run by ctest (bench.netns) or
`python3 tests/bench/test_netns.py`."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import netns  # noqa: E402

MiB = 1 << 20


def runner(rows):
    n = netns.Netns("/nonexistent")
    n.mtus, n.losses, n.repeats = [1500], [1, 10], len(rows)
    for rep, figs in enumerate(rows, 1):
        for (cond, name, size), fig in figs.items():
            status = fig.pop("status", "ok")
            n.rows.append({"cond": cond, "name": name, "size": size,
                           "rep": rep, "fig": fig, "status": status})
    return n


FLOOR = netns.FLOORS[-1][1]  # the answer carries its ACK


def figures(write_bw, tcp, send_lat=5.0, spin=4.0, write_lat=20.0,
            block=19.0, cpu=0.6, tcp_cpu=0.5, lossy=60.0, lost10=None,
            floor=4.0, busy=16.0):
    c, l1, l10 = "mtu 1500", "mtu 1500 loss 1%", "mtu 1500 loss 10%"
    f = {(c, "ib_write_bw", MiB): {"bw": write_bw, "cpu_gib": cpu},
         (c, "ib_read_bw", MiB): {"bw": write_bw / 2},
         (c, "ib_send_bw", MiB): {"bw": write_bw},
         (c, "ib_send_lat", 8): {"lat": send_lat},
         (c, "ib_write_lat", 8): {"lat": write_lat},
         (c, "iperf3 TCP", 0): {"bw": tcp, "cpu_gib": tcp_cpu},
         (c, "sockperf UDP non-blocking", 16): {"lat": spin},
         (c, "sockperf UDP blocking", 16): {"lat": block},
         (c, FLOOR, 0): {"lat": floor},
         (c, netns.BUSY_BLOCKING, 16): {"lat": busy},
         (l1, "ib_write_bw", MiB): {"bw": lossy},
         (l10, "ib_write_bw", MiB): lost10 or {"bw": 10.0}}
    return f


class Targets(unittest.TestCase):
    def targets(self, n):
        return {t[0]: t for t in n.targets()}

    def test_ratios_and_sides(self):
        t = self.targets(runner([figures(1000, 900), figures(1100, 1000),
                                 figures(900, 950)]))
        bw = t["mtu 1500: ib_write_bw 1 MiB / iperf3 TCP"]
        self.assertAlmostEqual(bw[3], 1000 / 950)  # medians 1000 and 950
        self.assertTrue(bw[5])
        self.assertFalse(t["mtu 1500: ib_read_bw 1 MiB / iperf3 TCP"][5])
        lat = t["mtu 1500: ib_send_lat 8 B / " + FLOOR]
        self.assertAlmostEqual(lat[3], 1.25)
        self.assertTrue(lat[5])  # lower is better: 1.25 <= 1.3
        wlat = t["mtu 1500: ib_write_lat 8 B / " + netns.BUSY_BLOCKING]
        self.assertAlmostEqual(wlat[3], 1.25)
        self.assertTrue(wlat[5])
        cpu = t["mtu 1500: CPU per GiB, ib_write_bw 1 MiB / iperf3"]
        self.assertAlmostEqual(cpu[3], 1.2)
        self.assertTrue(cpu[5])
        self.assertAlmostEqual(t["loss 1%: ib_write_bw 1 MiB / loss-free"][3],
                               0.06)
        self.assertFalse(t["loss 1%: ib_write_bw 1 MiB / loss-free"][5])
        self.assertTrue(t["loss 10%: ib_write_bw 1 MiB completes"][5])

    def test_latency_above_target_is_not_met(self):
        t = self.targets(runner([figures(1000, 900, send_lat=6.0)]))
        self.assertFalse(t["mtu 1500: ib_send_lat 8 B / " + FLOOR][5])
        t = self.targets(runner([figures(1000, 900, write_lat=21.0)]))
        self.assertFalse(
            t["mtu 1500: ib_write_lat 8 B / " + netns.BUSY_BLOCKING][5])

    def test_latency_ratio_pairs_each_repeat(self):
        """Each repeat's ib_send_lat over the floor measured beside it,
        then the median: 1.0, 1.75, 1.083 -> 1.083, where the medians'
        ratio (6.5 / 5) would say 1.3."""
        t = self.targets(runner([figures(1000, 900, send_lat=5.0, floor=5.0),
                                 figures(1000, 900, send_lat=7.0, floor=4.0),
                                 figures(1000, 900, send_lat=6.5,
                                         floor=6.0)]))
        lat = t["mtu 1500: ib_send_lat 8 B / " + FLOOR]
        self.assertAlmostEqual(lat[3], 6.5 / 6.0)
        self.assertEqual(lat[1][0], 6.5)  # the figures stay the medians
        self.assertEqual(lat[2][0], 5.0)
        self.assertTrue(lat[5])

    def test_a_failed_lossy_run_is_not_completed(self):
        n = runner([figures(1000, 900, lost10={"status": "failed: timeout"})])
        t = self.targets(n)
        self.assertFalse(t["loss 10%: ib_write_bw 1 MiB completes"][5])
        with tempfile.TemporaryDirectory() as d:
            n.out = d
            n.write()
            md = open(os.path.join(d, "netns.md")).read()
        self.assertIn("failed: timeout", md)
        self.assertIn("| loss 10%: ib_write_bw 1 MiB completes | - | - | - "
                      "| completes | **no** |", md)

    def test_missing_anchor_is_not_met(self):
        f = figures(1000, 900)
        del f[("mtu 1500", "iperf3 TCP", 0)]
        t = self.targets(runner([f]))
        self.assertFalse(t["mtu 1500: ib_write_bw 1 MiB / iperf3 TCP"][5])

    def test_setup_targets_are_limits(self):
        f = figures(1000, 900)
        f[("setup shm", "setup_cost", 0)] = {
            "rtr_us": 3.0, "rss_per_qp_kib": 30.3, "cq_reap_ms": 4.0}
        f[("setup udp", "setup_cost", 0)] = {
            "rtr_us": 25.0, "rss_per_qp_kib": 29.8}
        t = self.targets(runner([f]))
        self.assertTrue(t["setup shm: RTR per QP, 10,000 RC QPs"][5])
        self.assertTrue(t["setup shm: memory per idle connected QP"][5])
        self.assertTrue(t["setup shm: 10,000 CQs reaped"][5])
        self.assertEqual(t["setup shm: 10,000 CQs reaped"][4], "<= 100 ms")
        self.assertFalse(t["setup udp: RTR per QP, 10,000 RC QPs"][5])
        self.assertTrue(t["setup udp: memory per idle connected QP"][5])
        # Not measured (the run failed): not met.
        self.assertFalse(t["setup udp: 10,000 CQs reaped"][5])

    def test_message_rates_against_the_kernels(self):
        """Issue #36: 8-byte rates over udp_rate's datagram rate, >= 1.0x
        with 1 QP, >= 1.5x with 8; the table shows each ratio."""
        c = "mtu 1500"
        f = figures(1000, 900)
        f[(c, netns.UDP_RATE, 16)] = {"rate": 0.2}
        f[(c, "ib_send_bw", 8)] = {"bw": 9.0, "rate": 1.2}
        f[(c, "ib_write_bw", 8)] = {"bw": 1.5, "rate": 0.19}
        f[(c, "ib_send_bw -q 8", 8)] = {"bw": 2.0, "rate": 0.25}
        f[(c, "ib_write_bw -q 8", 8)] = {"bw": 2.5, "rate": 0.32}
        n = runner([f])
        t = self.targets(n)
        send = t["mtu 1500: ib_send_bw 8 B, 1 QP / kernel UDP rate"]
        self.assertAlmostEqual(send[3], 6.0)
        self.assertTrue(send[5])
        self.assertEqual(send[4], 1.0)
        self.assertFalse(
            t["mtu 1500: ib_write_bw 8 B, 1 QP / kernel UDP rate"][5])
        q8 = t["mtu 1500: ib_send_bw 8 B, 8 QPs / kernel UDP rate"]
        self.assertAlmostEqual(q8[3], 1.25)
        self.assertFalse(q8[5])  # wants 1.5x
        self.assertTrue(
            t["mtu 1500: ib_write_bw 8 B, 8 QPs / kernel UDP rate"][5])
        with tempfile.TemporaryDirectory() as d:
            n.out = d
            n.write()
            md = open(os.path.join(d, "netns.md")).read()
        self.assertIn("| mtu 1500: ib_send_bw 8 B, 8 QPs / kernel UDP rate "
                      "| 0.25 (0.25-0.25) | 0.2 (0.2-0.2) | 1.25 | >= 1.5x "
                      "| **no** |", md)
        self.assertIn("| mtu 1500 | ib_write_bw -q 8 | 0.32 (0.32-0.32) | 1.60 |",
                      md)

    def test_only_takes_exact_names_and_prefixes(self):
        """BENCH_NETNS_ONLY: names as they are, or a prefix ending in *
        (the floors' names hold commas)."""
        n = netns.Netns("/nonexistent")
        n.only = {"ib_send_lat", "udp_floor*"}
        ran = []
        for name in ["ib_send_lat", "ib_send_lat -e", FLOOR,
                     "udp_floor: plain socket", "ib_write_lat"]:
            n.record("mtu 1500", name, 8, 1,
                     lambda tag, x=name: ran.append(x) or {"lat": 1.0})
        self.assertEqual(ran, ["ib_send_lat", FLOOR,
                               "udp_floor: plain socket"])

    def test_missing_rate_anchor_is_not_met(self):
        f = figures(1000, 900)
        f[("mtu 1500", "ib_send_bw", 8)] = {"rate": 1.2}
        t = self.targets(runner([f]))
        self.assertFalse(
            t["mtu 1500: ib_send_bw 8 B, 1 QP / kernel UDP rate"][5])


if __name__ == "__main__":
    unittest.main()
