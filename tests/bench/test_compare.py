#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bench/bench.py's comparison with a base build (BENCH_BASE), on made-up
figures: no benchmark runs, nothing timed.  Run by ctest (bench.compare) or
`python3 tests/bench/test_compare.py`."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import bench  # noqa: E402

LABEL = "abc1234"


def fig(median):
    return {"median": median, "min": median, "max": median, "n": 1,
            "failed": 0}


def agg_of(figures):
    """{(series, metric, size): median} -> what bench.aggregate() gives."""
    return {k: fig(v) for k, v in figures.items()}


def row(rows, figure):
    return next(r for r in rows if r["figure"] == figure)


class Names(unittest.TestCase):
    def test_base_name(self):
        self.assertEqual(bench.base_name("softverbs ib_write_bw", LABEL),
                         "softverbs@abc1234 ib_write_bw")
        self.assertEqual(bench.base_label_of(
            ["memcpy (one process)", "softverbs@abc1234 ib_read_bw"]), LABEL)
        self.assertIsNone(bench.base_label_of(["softverbs ib_read_bw"]))


class Order(unittest.TestCase):
    def series(self, name, base_of=None):
        return bench.Series(name, "bw", ["bw"], None, base_of=base_of)

    def test_twins_adjacent_and_alternating(self):
        a = self.series("softverbs a")
        b = self.series(bench.base_name("softverbs a", LABEL), "softverbs a")
        c = self.series("softverbs c")
        d = self.series(bench.base_name("softverbs c", LABEL), "softverbs c")
        anchor = self.series("anchor")
        names = [a, b, c, d, anchor]
        self.assertEqual(bench.pass_order(names, 1), names)
        self.assertEqual(bench.pass_order(names, 2), [b, a, d, c, anchor])
        self.assertEqual(bench.pass_order(names, 3), names)


class Compare(unittest.TestCase):
    def rows(self, figures):
        return bench.compare_builds(agg_of(figures), LABEL)

    def test_bandwidth_worse_and_within(self):
        w, base = "softverbs ib_write_bw", "softverbs@abc1234 ib_write_bw"
        pvm = "process_vm_writev (one-copy limit)"
        rows = self.rows({(w, "bw", 1 << 20): 900.0,
                          (base, "bw", 1 << 20): 1000.0,
                          (pvm, "bw", 1 << 20): 2000.0,
                          (w, "bw", 64 << 10): 960.0,
                          (base, "bw", 64 << 10): 1000.0,
                          (pvm, "bw", 64 << 10): 500.0})
        r = row(rows, "ib_write_bw bw 1 MiB")
        self.assertAlmostEqual(r["base_ratio"], 0.5)
        self.assertAlmostEqual(r["new_ratio"], 0.45)
        self.assertAlmostEqual(r["change"], -0.1)
        self.assertEqual(r["flag"], "WORSE")
        r = row(rows, "ib_write_bw bw 64 KiB")
        self.assertAlmostEqual(r["change"], -0.04)
        self.assertEqual(r["flag"], "ok")
        target = row(rows, bench.DONE_WHEN[0][0])
        self.assertEqual(target["section"], "target")
        self.assertEqual(target["flag"], "WORSE")

    def test_latency_lower_is_better(self):
        lat, base = "softverbs ib_write_lat", "softverbs@abc1234 ib_write_lat"
        ucx = "ucx put_lat (cma, uct zcopy)"
        rows = self.rows({(lat, "lat", 8): 1.1, (base, "lat", 8): 1.0,
                          (ucx, "lat", 8): 2.0,
                          (lat, "lat", 4096): 0.8, (base, "lat", 4096): 1.0,
                          (ucx, "lat", 4096): 2.0})
        self.assertEqual(row(rows, "ib_write_lat lat 8 B")["flag"], "WORSE")
        better = row(rows, "ib_write_lat lat 4 KiB")
        self.assertAlmostEqual(better["change"], -0.2)
        self.assertEqual(better["flag"], "ok")

    def test_missing_figures(self):
        rows = self.rows({("softverbs ib_read_bw", "bw", 1 << 20): 1.0})
        r = row(rows, "ib_read_bw bw 1 MiB")
        self.assertIsNone(r["change"])
        self.assertEqual(r["flag"], "n/a")
        # Figures this run did not measure at either build are left out.
        self.assertFalse([r for r in rows if r["figure"] ==
                          "ib_read_bw bw 4 MiB"])

    def test_idle_is_absolute(self):
        base = bench.base_name(bench.IDLE, LABEL)
        rows = self.rows({(bench.IDLE, "cpu", 0): 0.02, (base, "cpu", 0): 0.01})
        idle = next(r for r in rows if r["series"] == bench.IDLE)
        self.assertAlmostEqual(idle["change"], 1.0)
        self.assertEqual(idle["flag"], "ok")  # 0.02 % of a core: under 1 %

    def test_files(self):
        class Cfg:
            quick = True
            repeats = 1
        with tempfile.TemporaryDirectory() as out:
            Cfg.out = out
            rows = bench.write_compare(Cfg, agg_of({
                ("softverbs ib_send_lat", "lat", 8): 0.2,
                ("softverbs@abc1234 ib_send_lat", "lat", 8): 0.2}), LABEL,
                [("softverbs", "0000000")])
            with open(os.path.join(out, "compare.csv")) as f:
                lines = f.read().splitlines()
            self.assertEqual(len(lines), 1 + len(rows))
            with open(os.path.join(out, "compare.md")) as f:
                md = f.read()
            self.assertIn("| README | ib_send_lat lat 8 B", md)

    def test_readme_figures_are_the_readmes(self):
        """README_FIGURES: every softverbs row of the README's tables."""
        import readme
        shown = {(n, m) for rows, m in ((readme.BW_ROWS, "bw"),
                                        (readme.RATE_ROWS, "rate"),
                                        (readme.LAT_ROWS, "lat"))
                 for n in rows if n.startswith("softverbs ")}
        self.assertEqual(shown, {(n, m) for n, m, _ in bench.README_FIGURES})


if __name__ == "__main__":
    unittest.main()
