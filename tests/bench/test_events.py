#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bench/events.py (issue #35) on made-up figures: qperf's output parsed in
each unit it prints, the ratios against the targets and which side of each
is "met", a failed row reported with its reason.  No benchmark runs.  Run
by ctest (bench.events) or `python3 tests/bench/test_events.py`."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import events  # noqa: E402

MiB = 1 << 20


class Qperf(unittest.TestCase):
    def test_units(self):
        p = events.parse_qperf
        self.assertAlmostEqual(p("rc_lat:\n    latency  =  53.4 us\n")["lat"],
                               53.4)
        self.assertAlmostEqual(p("rc_lat:\n    latency  =  533 ns\n")["lat"],
                               0.533)
        self.assertAlmostEqual(p("    latency  =  1.2 ms\n")["lat"], 1200)
        self.assertAlmostEqual(p("rc_bw:\n    bw  =  3.49 GB/sec\n")["bw"],
                               3.49e9 / MiB)
        self.assertAlmostEqual(p("    bw  =  786 MB/sec\n")["bw"],
                               786e6 / MiB)
        self.assertAlmostEqual(p("    msg_rate  =  194 K/sec\n")["rate"],
                               194)
        self.assertAlmostEqual(p("    msg_rate  =  1.5 M/sec\n")["rate"],
                               1500)
        with self.assertRaises(events.B.RunError):
            p("failed to modify QP to RTR\n")


def report(figs, errors=None):
    """events.md's text for made-up figures {(path, row): value}."""
    ev = events.Events("/nonexistent")
    ev.load0 = 0.5
    ev.out = tempfile.mkdtemp()
    for (path, row), v in figs.items():
        key = "lat" if "lat" in row or "sockperf" in row else \
            "rate" if "swap" in row else "bw"
        ev.order.append((path, row, key, "-"))
        ev.figs[(path, row)] = [{key: v}, {key: v * 2}, {key: v / 2}]
    for (path, row), why in (errors or {}).items():
        ev.order.append((path, row, "bw", "-"))
        ev.errors[(path, row)] = why
    ev.write()
    with open(os.path.join(ev.out, "events.md")) as f:
        return f.read()


def ratio_line(text, what):
    for line in text.splitlines():
        if line.startswith("| ") and "| %s |" % what in line:
            return line
    raise AssertionError("no row %r in:\n%s" % (what, text))


class Report(unittest.TestCase):
    def test_ratios(self):
        h = "one host"
        text = report({
            (h, "ib_send_lat 8 B -e"): 24.0,
            (h, "ib_send_lat 8 B polling"): 0.2,
            (h, "sockperf UDP blocking 16 B"): 20.0,
            (h, "ib_send_bw 64 KiB -e"): 950.0,
            (h, "ib_send_bw 64 KiB polling"): 1000.0,
            (h, "ib_send_bw 1 MiB -e"): 800.0,
            (h, "ib_send_bw 1 MiB polling"): 1000.0,
            (h, "qperf rc_bw events"): 900.0,
            (h, "qperf rc_bw -cp1"): 1000.0,
            ("netns", "ib_send_lat 8 B -e"): 30.0,
            ("netns", "sockperf UDP blocking 16 B"): 20.0,
        })
        # A median of three: 24, 48, 12 -> 24 over 20 -> 1.20, met.
        line = ratio_line(text, "ib_send_lat 8 B -e / sockperf blocking")
        self.assertIn("| 1.20 | <= 1.3x: met |", line)
        self.assertIn("| 0.95 | >= 0.9x: met |",
                      ratio_line(text, "ib_send_bw 64 KiB -e / polling"))
        self.assertIn("| 0.80 | >= 0.9x: NOT met |",
                      ratio_line(text, "ib_send_bw 1 MiB -e / polling"))
        self.assertIn("| 0.90 | >= 0.9x: met |",
                      ratio_line(text, "qperf rc_bw events / -cp1"))
        self.assertIn("| 120.00 | - |",
                      ratio_line(text, "ib_send_lat 8 B -e / polling"))
        netns = [l for l in text.splitlines()
                 if l.startswith("| netns | ib_send_lat 8 B -e / sockperf")]
        self.assertEqual(netns, ["| netns | ib_send_lat 8 B -e / sockperf "
                                 "blocking | 1.50 | <= 1.3x: NOT met |"])
        # Ratios whose rows did not run are left out, not shown as 0.
        self.assertNotIn("ib_read_bw 64 KiB -e / polling", text)

    def test_failed_row(self):
        text = report({}, {("one host", "ib_read_bw 1 MiB -e"):
                           "server exited (1) | Events feature not available"})
        line = ratio_line(text, "ib_read_bw 1 MiB -e")
        self.assertIn("failed: server exited (1) / Events feature", line)
        self.assertTrue(line.endswith("| 0 |"))


if __name__ == "__main__":
    unittest.main()
