#!/usr/bin/env python3
"""Tests of reproduction/report.py: every check type confirmed and refuted on a known digest,
the digest of records, lint's refusals and `check`'s detection of a stale report."""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import report  # noqa: E402

EPS = [0.01, 0.1, 1.0, 10.0]


def row(label, eps, metrics, params=None, best=True, cost=None):
    r = {"label": label, "eps": eps, "params": params or {}, "best": best,
         "metrics": {m: [v, 0.0, 10] for m, v in metrics.items()}}
    if cost:
        r["cost"] = cost
    return r


def make_digest():
    rows = []
    # RACE improves with eps: 1.0, 0.3, 0.1, 0.03; Bernstein flat 0.2; exact 0.01 (no privacy)
    for e, v in zip(EPS, [1.0, 0.3, 0.1, 0.03]):
        rows.append(row("RACE", e, {"mre": v, "auc": 1 - v / 2}, {"rows": 100}, cost={"build_seconds": 0.5}))
        rows.append(row("RACE", e, {"mre": v * 1.5, "auc": 1 - v}, {"rows": 1000}, best=False,
                        cost={"build_seconds": 0.1}))
        rows.append(row("Bernstein", e, {"mre": 0.2, "auc": 0.9}, {"degree": 4}, cost={"build_seconds": 3.0}))
    rows.append(row("Exact", None, {"mre": 0.01, "auc": 0.999}))
    # a rate: error = n^-0.25 at every eps
    for e in EPS:
        for n in (1e3, 1e4, 1e5, 1e6):
            rows.append(row("Alg2", e, {"excess_risk": n ** -0.25 / e}, {"players": n}, best=False))
    return {"config": "toy", "profile": "full", "task": "kde", "dataset": "skin", "stand_in": False,
            "metric": "mre", "commits": ["abc123"], "machine": "test machine", "cells": 100,
            "cell_seconds": 12.0, "wall_seconds": 10.0, "jobs": [1], "threads": [2], "rows": rows,
            "timing": [{"label": "RACE", "build_seconds": 0.5, "query_ms": 2.0},
                       {"label": "Bernstein", "build_seconds": 3.0, "query_ms": 1.0}]}


class Checks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "toy.json").write_text(json.dumps(make_digest()))
        self.digests = report.Digests(self.dir)

    def tearDown(self):
        self.tmp.cleanup()

    def verdict(self, check):
        return report.evaluate_check(check, "toy", self.digests)

    def test_better(self):
        v, text = self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "Bernstein", "eps": {"min": 1}})
        self.assertEqual(v, report.CONFIRMED, text)
        self.assertIn("0.1", text)  # RACE's value at eps 1, its worst against Bernstein
        v, text = self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "Bernstein"})
        self.assertEqual(v, report.REFUTED, text)
        self.assertIn("2/4", text)
        v, _ = self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "Bernstein", "need": "majority",
                             "eps": [0.1, 1, 10]})
        self.assertEqual(v, report.CONFIRMED)
        # higher is better for auc: Bernstein 0.9 beats RACE's 0.5 at eps 0.01
        v, _ = self.verdict({"type": "better", "metric": "auc", "a": "Bernstein", "b": "RACE", "eps": [0.01]})
        self.assertEqual(v, report.CONFIRMED)

    def test_better_leaves_out_refused_cells(self):
        # MST refused at eps 0.01 (no metric in its row), 0.5 elsewhere: RACE against MST and
        # Bernstein compares Bernstein alone at 0.01; MST against RACE skips 0.01 and says so.
        d = make_digest()
        d["rows"].append(row("MST", 0.01, {}))
        d["rows"] += [row("MST", e, {"mre": 0.5}) for e in EPS[1:]]
        (self.dir / "toy.json").write_text(json.dumps(d))
        digests = report.Digests(self.dir)
        v, text = report.evaluate_check({"type": "better", "metric": "mre", "a": "RACE", "b": ["MST", "Bernstein"]},
                                        "toy", digests)
        self.assertEqual(v, report.REFUTED, text)
        self.assertIn("2/4", text)
        self.assertNotIn("refused", text)
        v, text = report.evaluate_check({"type": "better", "metric": "mre", "a": "MST", "b": "RACE", "need": "majority"},
                                        "toy", digests)
        self.assertEqual(v, report.REFUTED, text)  # RACE 0.3, 0.1, 0.03 beat 0.5
        self.assertIn("0/3 eps (1 eps refused)", text)
        v, text = report.evaluate_check({"type": "better", "metric": "mre", "a": "MST", "b": "RACE", "eps": [0.01]},
                                        "toy", digests)
        self.assertEqual(v, report.NOT_RUN, text)

    def write_sweep(self, name, metric, table):
        """A digest of one RACE grid: table {eps: {(rows, width or power): value}}."""
        d = make_digest()
        d["config"], d["metric"] = name, metric
        d["rows"] = [row("RACE", e, {metric: v}, {"rows": r, "width": w, "power": w}, best=False)
                     for e, pts in table.items() for (r, w), v in pts.items()]
        (self.dir / f"{name}.json").write_text(json.dumps(d))

    def test_size_needed(self):
        # kde: error falls with R up to 1000 at eps 1 (1000 needed), flat from 100 at eps 0.1;
        # cls: accuracy flat from R = 10 (10 needed) except eps 0.1, where 1000 is best.
        self.write_sweep("kde", "mre", {1.0: {(10, 4): 1.0, (100, 4): 0.5, (1000, 4): 0.2, (1000, 64): 0.21},
                                        0.1: {(10, 4): 1.0, (100, 4): 0.5, (1000, 4): 0.52}})
        self.write_sweep("cls", "accuracy", {1.0: {(10, 4): 0.9, (100, 4): 0.905, (100, 64): 0.905, (1000, 4): 0.906},
                                             0.1: {(10, 4): 0.5, (100, 4): 0.6, (1000, 4): 0.9}})
        digests = report.Digests(self.dir)
        check = {"type": "size_needed", "param": "rows", "larger": [{"config": "kde", "method": "RACE", "rel": 0.1}],
                 "smaller": [{"config": "cls", "method": "RACE", "rel": 0.01}]}
        # needed R: kde 1000 (eps 1), 100 (eps 0.1, 0.52 is 4% off 0.5); cls 10 (eps 1), 1000 (eps 0.1)
        self.assertEqual(report.size_needed_at(check["larger"][0], digests.get("kde"), "rows"), {1.0: 1000, 0.1: 100})
        self.assertEqual(report.size_needed_at(check["smaller"][0], digests.get("cls"), "rows"), {1.0: 10, 0.1: 1000})
        v, text = report.evaluate_check(check, None, digests)
        self.assertEqual(v, report.REFUTED, text)
        self.assertIn("larger at 1/2", text)
        v, text = report.evaluate_check({**check, "eps": [1.0]}, None, digests)
        self.assertEqual(v, report.CONFIRMED, text)
        # the width at eps 1: kde needs 4 (64's 0.21 is not better), so not larger than cls's 4
        v, text = report.evaluate_check({**check, "param": "width", "eps": [1.0]}, None, digests)
        self.assertEqual(v, report.REFUTED, text)
        # exp2: a power p is the size 2^p
        entry = {"config": "kde", "method": "RACE", "param": "power", "exp2": True}
        self.assertEqual(report.size_needed_at(entry, digests.get("kde"), "rows"), {1.0: 16})
        # a config without records: not run
        v, _ = report.evaluate_check({**check, "smaller": [{"config": "absent", "method": "RACE"}]}, None, digests)
        self.assertEqual(v, report.NOT_RUN)

    def test_config_added_after_the_records_commit(self):
        # race_rw_kde_skin was written after 0898ba8120bf; kde_skin was in it
        known = subprocess.run(["git", "-C", str(report.REPO), "cat-file", "-e", "0898ba8120bf^{commit}"],
                               capture_output=True).returncode == 0
        if not known:
            self.skipTest("this clone does not have commit 0898ba8120bf")
        self.assertTrue(report.config_added_after("0898ba8120bf", "race_rw_kde_skin"))
        self.assertFalse(report.config_added_after("0898ba8120bf", "kde_skin"))
        self.assertFalse(report.config_added_after("unknown", "race_rw_kde_skin"))

    def test_where_sides(self):
        v, text = self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "RACE",
                                "where_a": {"rows": 100}, "where_b": {"rows": 1000}})
        self.assertEqual(v, report.CONFIRMED, text)
        self.assertIn("rows=1000", text)

    def test_nonprivate_only(self):
        v, text = self.verdict({"type": "value", "metric": "mre", "method": "Exact", "eps": 1, "paper": 0.012,
                                "factor": 1.5})
        self.assertEqual(v, report.CONFIRMED, text)
        self.assertEqual(self.verdict({"type": "value", "metric": "mre", "method": "Exact", "eps": 1,
                                       "paper": 0.1, "factor": 2})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "threshold", "metric": "auc", "method": "Exact", "op": ">=",
                                       "value": 0.99})[0], report.CONFIRMED)

    def test_nonprivate_method_is_the_same_at_every_eps(self):
        v, _ = self.verdict({"type": "better", "metric": "mre", "a": "Exact", "b": ["RACE", "Bernstein"]})
        self.assertEqual(v, report.CONFIRMED)

    def test_threshold_close_trend_value(self):
        self.assertEqual(self.verdict({"type": "threshold", "metric": "auc", "method": "RACE", "op": ">=",
                                       "value": 0.8, "eps": {"min": 0.1}})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "threshold", "metric": "auc", "method": "RACE", "op": ">=",
                                       "value": 0.8})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "close", "metric": "mre", "a": "RACE", "b": "Exact",
                                       "eps": [10], "abs": 0.05})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "close", "metric": "mre", "a": "RACE", "b": "Exact",
                                       "eps": [1, 10], "rel": 1.0})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "trend", "metric": "mre", "method": "RACE"})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "trend", "metric": "auc", "method": "RACE"})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "trend", "metric": "mre", "method": "RACE",
                                       "direction": "worsens"})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "value", "metric": "mre", "method": "RACE", "eps": 1,
                                       "paper": 0.11, "rel": 0.2})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "value", "metric": "mre", "method": "RACE", "eps": 1,
                                       "paper": 0.5, "rel": 0.2})[0], report.REFUTED)

    def test_grid_stable(self):
        self.assertEqual(self.verdict({"type": "grid_stable", "metric": "mre", "method": "RACE", "param": "rows",
                                       "range": [100, 1000], "within": 1.6})[0], report.CONFIRMED)
        v, text = self.verdict({"type": "grid_stable", "metric": "mre", "method": "RACE", "param": "rows",
                                "range": [100, 1000], "within": 1.4})
        self.assertEqual(v, report.REFUTED)
        self.assertIn("rows=1000", text)

    def test_slope(self):
        v, text = self.verdict({"type": "slope", "metric": "excess_risk", "method": "Alg2", "param": "players",
                                "max": -0.2})
        self.assertEqual(v, report.CONFIRMED, text)
        self.assertIn("-0.25", text)
        self.assertEqual(self.verdict({"type": "slope", "metric": "excess_risk", "method": "Alg2",
                                       "param": "players", "max": -0.3})[0], report.REFUTED)

    def test_times(self):
        self.assertEqual(self.verdict({"type": "faster", "a": "RACE", "b": "Bernstein",
                                       "what": "build_seconds"})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "faster", "a": "RACE", "b": "Bernstein",
                                       "what": "query_ms"})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "time", "method": "RACE", "what": "build_seconds",
                                       "paper": 2.0, "factor": 5})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "time", "method": "RACE", "what": "build_seconds",
                                       "paper": 60.0, "factor": 5})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "time", "method": "RACE", "what": "build_seconds",
                                       "max": 120})[0], report.CONFIRMED)
        # at a useful release: within 2x of the best mre at eps 1 (Exact's 0.01, so <= 0.02):
        # nothing qualifies; within 2x at eps 10 (best 0.01): nothing; at eps 1 within 12x:
        # RACE rows=100 (0.1, 0.5 s) and rows=1000 (0.15, 0.1 s): the cheaper one, 0.1 s
        v, text = self.verdict({"type": "time", "method": "RACE", "what": "build_seconds", "max": 0.2,
                                "at": {"metric": "mre", "eps": 1, "within": 16}})
        self.assertEqual(v, report.CONFIRMED, text)
        self.assertIn("0.1 s", text)
        v, text = self.verdict({"type": "time", "method": "Bernstein", "what": "build_seconds", "max": 10,
                                "at": {"metric": "mre", "eps": 1, "within": 2}})
        self.assertEqual(v, report.NOT_COMPARABLE, text)

    def test_not_run(self):
        self.assertEqual(self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "KME"})[0],
                         report.NOT_RUN)
        self.assertEqual(report.evaluate_check({"type": "trend", "metric": "mre", "method": "RACE"}, "absent",
                                               self.digests)[0], report.NOT_RUN)
        self.assertEqual(self.verdict({"type": "better", "metric": "mre", "a": "RACE", "b": "Bernstein",
                                       "eps": [0.5]})[0], report.NOT_RUN)

    def test_all(self):
        ok = {"type": "trend", "metric": "mre", "method": "RACE"}
        bad = {"type": "trend", "metric": "mre", "method": "RACE", "direction": "worsens"}
        gone = {"type": "not_run", "reason": "data unavailable"}
        self.assertEqual(self.verdict({"type": "all", "checks": [ok, ok]})[0], report.CONFIRMED)
        self.assertEqual(self.verdict({"type": "all", "checks": [ok, bad, gone]})[0], report.REFUTED)
        self.assertEqual(self.verdict({"type": "all", "checks": [ok, gone]})[0], report.NOT_RUN)


class Lint(unittest.TestCase):
    def test_refusals(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = Path(tmp)
            (cfg / "toy.json").write_text(json.dumps({"methods": [{"name": "race", "label": "RACE"}]}))
            claim = {"id": "x", "paper": "race", "place": "Figure 1", "quote": "q", "paper_says": "p",
                     "setting": "s", "config": "toy"}
            good = dict(claim, check={"type": "trend", "metric": "mre", "method": "RACE"})
            self.assertEqual(report.lint({"claims": [good], "beyond": [], "deviations": []}, cfg), [])
            cases = [
                ({"type": "trend", "metric": "mre", "method": "KME"}, "no method labelled"),
                ({"type": "trend", "metric": "mre", "method": "RACE", "direktion": "x"}, "no key 'direktion'"),
                ({"type": "bigger", "metric": "mre"}, "unknown check type"),
                ({"type": "close", "metric": "mre", "a": "RACE", "b": "RACE"}, "'rel' or 'abs'"),
                ({"type": "not_run"}, "needs a reason"),
            ]
            for check, words in cases:
                problems = report.lint({"claims": [dict(claim, check=check)], "beyond": [], "deviations": []}, cfg)
                self.assertTrue(any(words in p for p in problems), (check, problems))
            problems = report.lint({"claims": [good, good], "beyond": [], "deviations": []}, cfg)
            self.assertTrue(any("duplicate id" in p for p in problems))


class Pipeline(unittest.TestCase):
    def test_wall_time_of_cut_off_runs(self):
        # Log lines cover every cell: their seconds alone.
        self.assertEqual(report.config_wall_seconds((7.0, 8), 6, 6.0, 1), {"wall_seconds": 7.0})
        # 2 of 6 cells logged (3 s); the other 4 cells' share of 12 s summed, over 2 jobs: 4 s.
        self.assertEqual(report.config_wall_seconds((3.0, 2), 6, 12.0, 2),
                         {"wall_seconds": 7.0, "wall_estimated_seconds": 4.0, "wall_estimated_cells": 4})
        # No log line at all: every cell estimated.
        self.assertEqual(report.config_wall_seconds(None, 4, 8.0, 2)["wall_seconds"], 4.0)

    def test_digest_write_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            results = tmp / "results"
            results.mkdir()
            recs = []
            for rep in range(3):
                for rows, mre in ((100, 0.2), (1000, 0.1)):
                    recs.append({"config": "toy", "dataset": "skin", "task": "kde", "quick": False,
                                 "stand_in": False, "primary_metric": "mre", "label": "RACE",
                                 "params": {"rows": rows}, "epsilon": 1.0, "rep": rep, "git_commit": "abc",
                                 "wall_seconds": 1.0, "jobs": 1, "threads": 2, "build_seconds": 0.1 * rows / 100,
                                 "metrics": {"mre": mre + rep * 0.01, "grid_points": rows}})
            (results / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
            (results / "toy.summary.json").write_text(json.dumps({"metric": "mre", "rows": [
                {"label": "RACE", "epsilon": 1.0, "params": {"rows": 1000}, "best_over_grid": True}]}))
            (results / "run_all.log").write_text(
                "2026-01-01T00:00:00Z config=toy mode=full cells_to_run=6 seconds=4 estimated=1s status=ok\n"
                "2026-01-01T01:00:00Z config=toy mode=full cells_to_run=2 seconds=3 estimated=1s status=ok\n")
            digests, docs = tmp / "digests", tmp / "docs"
            script = str(HERE / "report.py")
            subprocess.run([sys.executable, script, "digest", str(results), "--out", str(digests),
                            "--machine", "m"], check=True, capture_output=True)
            text = (digests / "toy.json").read_text()
            d = json.loads(text)
            # One grid row a line, each line a whole row.
            row_lines = [l.strip().rstrip(",") for l in text.splitlines() if l.startswith("  {")]
            self.assertEqual([json.loads(l) for l in row_lines], d["rows"])
            self.assertEqual(len(d["rows"]), 2)
            # A metric no repetition moves is named once, not repeated in every row.
            self.assertEqual(d["setting_metrics"], ["grid_points"])
            self.assertTrue(all(set(r["metrics"]) == {"mre"} for r in d["rows"]))
            self.assertEqual(d["wall_seconds"], 7.0)
            self.assertEqual(d["cells"], 6)
            best = [r for r in d["rows"] if r["best"]]
            self.assertEqual([r["params"]["rows"] for r in best], [1000])
            self.assertAlmostEqual(best[0]["metrics"]["mre"][0], 0.11)
            self.assertEqual(best[0]["metrics"]["mre"][2], 3)
            claims = tmp / "claims.json"
            claims.write_text(json.dumps({"claims": [
                {"id": "c", "paper": "race", "place": "Figure 3", "quote": "q | with a bar", "paper_says": "p",
                 "setting": "s", "config": "toy",
                 "check": {"type": "value", "metric": "mre", "method": "RACE", "eps": 1, "paper": 0.1, "rel": 0.2}}]}))
            args = ["--claims", str(claims), "--digests", str(digests), "--docs", str(docs)]
            subprocess.run([sys.executable, script, "write", *args], check=True, capture_output=True)
            text = (docs / "reproduction.md").read_text()
            self.assertIn("| race | 1 | 1 | 0 | 0 | 0 |", text)
            self.assertIn("q \\| with a bar", text)  # a bar never cuts a row
            self.assertTrue((docs / "results" / "toy.md").is_file())
            ok = subprocess.run([sys.executable, script, "check", *args], capture_output=True)
            self.assertEqual(ok.returncode, 0, ok.stderr)
            (docs / "results" / "toy.md").write_text("edited\n")
            stale = subprocess.run([sys.executable, script, "check", *args], capture_output=True, text=True)
            self.assertEqual(stale.returncode, 1)
            self.assertIn("toy.md", stale.stderr)

    def test_cells_are_short(self):
        self.assertLessEqual(len(report.cell("x" * 500)), report.MAX_CELL)


if __name__ == "__main__":
    unittest.main()
