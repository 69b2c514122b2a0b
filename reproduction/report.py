#!/usr/bin/env python3
"""The reproduction report: the papers' claims checked against the records.

    report.py digest RESULTS_DIR [--out DIR] [--machine TEXT] [--quick]
        results/NAME.jsonl (+ NAME.summary.json, run_all.log) -> DIR/NAME.json (small, committed)
    report.py write [--claims FILE] [--digests DIR] [--docs DIR]
        claims + digests -> DOCS/reproduction.md and DOCS/results/CONFIG.md
    report.py check [same options]
        exit 1 if the files under DOCS differ from what `write` would make
    report.py lint [--claims FILE] [--configs DIR]
        exit 1 if a claim names an unknown config, method label, metric or check type

Standard library only. reproduction/README.md defines the claim schema and the check types.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAPERS = {
    "race": "Private RACE: Coleman & Shrivastava, \"A One-Pass Private Sketch for Most Machine Learning Tasks\"",
    "race-ccs21": "Private RACE, CCS'21 experiments (Coleman & Shrivastava)",
    "m2m": "M2M: Houssiau et al., \"M2M: a general method to perform various data analysis tasks from a differentially private sketch\"",
    "ldp-erm": "LDP-ERM: Wang, Gaboardi & Xu, \"Empirical Risk Minimization in Non-interactive Local Differential Privacy\"",
}
PAPER_ORDER = ["race", "race-ccs21", "m2m", "ldp-erm"]
HIGHER_IS_BETTER = ("auc", "accuracy", "coverage", "recall", "r2", "precision", "f1", "hit")
CHECK_TYPES = {"better", "threshold", "close", "trend", "value", "grid_stable", "slope", "faster", "time",
               "size_needed", "all", "not_run", "not_comparable"}
# the keys each check type accepts (lint refuses others: a misspelt key must not be ignored)
COMMON_KEYS = {"type", "config", "where", "eps"}
# the keys of one side of a size_needed check
SIZE_ENTRY_KEYS = {"config", "method", "param", "exp2", "rel", "name"}
CHECK_KEYS = {
    "better": {"metric", "a", "b", "need", "where_a", "where_b"},
    "threshold": {"metric", "method", "op", "value"},
    "close": {"metric", "a", "b", "rel", "abs", "where_a", "where_b"},
    "trend": {"metric", "method", "direction"},
    "value": {"metric", "method", "paper", "rel", "abs", "factor"},
    "grid_stable": {"metric", "method", "param", "range", "within", "within_abs"},
    "slope": {"metric", "method", "param", "max", "min"},
    "faster": {"a", "b", "what", "at"},
    "time": {"method", "what", "paper", "factor", "max", "min", "at"},
    "size_needed": {"param", "larger", "smaller", "need"},
    "all": {"checks"},
    "not_run": {"reason"},
    "not_comparable": {"reason"},
}
MAX_CELL = 200
CONFIRMED, REFUTED, NOT_RUN, NOT_COMPARABLE = "confirmed", "refuted", "not run", "not comparable"
VERDICTS = [CONFIRMED, REFUTED, NOT_RUN, NOT_COMPARABLE]


class ClaimError(Exception):
    pass


# ----------------------------------------------------------------------------------- numbers

def sig(x: float | None, digits: int = 3) -> str:
    """A number for a table cell: `digits` significant digits, no trailing noise."""
    if x is None:
        return "-"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x == 0:
        return "0"
    mag = abs(x)
    if 1e-3 <= mag < 1e5:
        decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
        text = f"{x:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")


def round_sig(x, digits=5):
    if x is None or not isinstance(x, (int, float)) or isinstance(x, bool):
        return x
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x if not math.isnan(x) else None
    return float(f"{x:.{digits}g}")


def higher_is_better(metric: str) -> bool:
    return metric.lower().startswith(HIGHER_IS_BETTER)


def eps_text(e) -> str:
    return "inf" if e is None else sig(e, 3)


def params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


# ----------------------------------------------------------------------------------- digest

def machine_description() -> str:
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        mem = f", {round(kb / 2**20)} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} vCPUs ({model}){mem}"


def read_jsonl(path: Path):
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{lineno}: not a JSON record ({e.msg})")


def config_wall_log(results: Path, name: str, quick: bool) -> tuple[float, int] | None:
    """(seconds, cells) of the runner's finished runs of a config, summed over resumed runs
    (results/run_all.log); None without a log line. A run cut off (a signal, a session's end)
    writes no line: its cells are in the records but not here."""
    log = results / "run_all.log"
    if not log.is_file():
        return None
    mode = "quick" if quick else "full"
    total, cells, seen = 0.0, 0, False
    for line in log.read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
        if fields.get("config") == name and fields.get("mode") == mode and "seconds" in fields:
            total += float(fields["seconds"])
            cells += int(fields.get("cells_to_run", 0) or 0)
            seen = True
    return (total, cells) if seen else None


def config_wall_seconds(logged: tuple[float, int] | None, cells: int, cell_seconds: float, jobs: int) -> dict:
    """The config's wall time: the logged runs' seconds, plus, for the cells no log line covers,
    their share of the summed cell time divided by the jobs that ran at once (an estimate,
    said so on the page through "wall_estimated_seconds")."""
    logged_s, logged_cells = logged or (0.0, 0)
    uncovered = max(0, cells - logged_cells)
    if uncovered == 0 or cells == 0:
        return {"wall_seconds": logged_s if logged else None}
    est = cell_seconds * uncovered / cells / max(1, jobs)
    return {"wall_seconds": round(logged_s + est, 1), "wall_estimated_seconds": round(est, 1),
            "wall_estimated_cells": uncovered}


def config_added_after(commit: str, name: str) -> bool:
    """True when configs/NAME.json is not in the records' commit: the config was written after
    it and ran on its code (records keep the commit of the code that ran them)."""
    if commit == "unknown" or not (REPO / "configs" / f"{name}.json").is_file():
        return False
    try:
        r = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}:configs/{name}.json"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    if r.returncode == 0:
        return False
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True, timeout=30)
    return known.returncode == 0  # a commit this clone knows, without the file


def make_digest(results: Path, stem: str, machine: str) -> dict:
    jsonl = results / f"{stem}.jsonl"
    summary_path = results / f"{stem}.summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    groups = defaultdict(list)
    commits, cell_seconds, jobs, threads = set(), 0.0, set(), set()
    meta = {}
    for r in read_jsonl(jsonl):
        if "label" not in r or "metrics" not in r:
            continue
        eps = r.get("epsilon")
        groups[(r["label"], params_key(r.get("params", {})), eps)].append(r)
        commits.add(r.get("git_commit", "unknown"))
        cell_seconds += float(r.get("wall_seconds") or 0.0)
        jobs.add(r.get("jobs"))
        threads.add(r.get("threads"))
        if not meta:
            meta = {"config": r.get("config"), "dataset": r.get("dataset"), "task": r.get("task"),
                    "quick": bool(r.get("quick")), "stand_in": bool(r.get("stand_in")),
                    "primary_metric": r.get("primary_metric")}
    if not meta:
        raise SystemExit(f"{jsonl}: no records")
    best = set()
    for row in summary.get("rows", []):
        if row.get("best_over_grid"):
            best.add((row["label"], params_key(row.get("params", {})), row.get("epsilon")))
    rows = []
    for (label, pkey, eps), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2])):
        metrics = defaultdict(list)
        for r in recs:
            for m, v in r["metrics"].items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    metrics[m].append(float(v))
        stats = {}
        for m, vals in sorted(metrics.items()):
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            stats[m] = [round_sig(statistics.fmean(vals)), round_sig(sd, 3), len(vals)]
        cost = {}
        builds = [float(r["build_seconds"]) for r in recs if isinstance(r.get("build_seconds"), (int, float))]
        queries = [1000 * float(r["query_seconds_per_query"]) for r in recs
                   if isinstance(r.get("query_seconds_per_query"), (int, float))]
        if builds:
            cost["build_seconds"] = round_sig(statistics.median(builds), 3)
        if queries:
            cost["query_ms"] = round_sig(statistics.median(queries), 3)
        params = json.loads(pkey)
        # one grid point: it is the selection; otherwise the runner's summary marks it
        single = len({k[1] for k in groups if k[0] == label}) == 1
        row = {"label": label, "params": params, "eps": eps,
               "best": single or (label, pkey, eps) in best, "metrics": stats}
        if cost:
            row["cost"] = cost
        rows.append(row)
    # Metrics that no repetition moves in any row (the setting's own quantities: grid sizes,
    # the optimum's risk, a range) are not results: where some row has repetitions to show it,
    # they are named once instead of repeated in every row. The primary metric always stays.
    fixed = sorted({m for row in rows for m in row["metrics"]} - {meta["primary_metric"]})
    fixed = [m for m in fixed
             if any(row["metrics"][m][2] > 1 for row in rows if m in row["metrics"])
             and all(row["metrics"][m][1] == 0 for row in rows if m in row["metrics"])]
    for row in rows:
        for m in fixed:
            row["metrics"].pop(m, None)
    name = meta["config"]
    digest = {
        "config": name,
        "profile": "quick" if meta["quick"] else "full",
        "task": meta["task"],
        "dataset": meta["dataset"],
        "stand_in": meta["stand_in"],
        "metric": summary.get("metric", meta["primary_metric"]),
        "commits": sorted(commits),
        "machine": machine,
        "cells": sum(len(v) for v in groups.values()),
        "cell_seconds": round(cell_seconds, 1),
        "jobs": sorted(j for j in jobs if j is not None),
        "threads": sorted(t for t in threads if t is not None),
        "rows": rows,
    }
    later = [c for c in sorted(commits) if config_added_after(c, name)]
    if later:
        digest["config_added_after"] = later
    if fixed:
        digest["setting_metrics"] = fixed
    digest.update(config_wall_seconds(config_wall_log(results, name, meta["quick"]), digest["cells"], cell_seconds,
                                      max(digest["jobs"], default=1)))
    if summary.get("timing"):
        digest["timing"] = [{k: round_sig(v) if isinstance(v, float) else v for k, v in t.items()}
                            for t in summary["timing"]]
    if summary.get("unavailable"):
        digest["unavailable"] = summary["unavailable"]
    return digest


def dump_digest(digest: dict) -> str:
    """A digest as JSON with one grid row a line: a third of the indented form's size, and a
    rerun's diff names the rows that changed."""
    compact = {"sort_keys": True, "separators": (",", ":")}
    lines = []
    for key in sorted(digest):
        if key == "rows":
            rows = ",\n".join("  " + json.dumps(r, **compact) for r in digest[key])
            lines.append(f' "rows": [\n{rows}\n ]' if rows else ' "rows": []')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(digest[key], **compact)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_atomically(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for secrets; these are published files
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def pending_cells(experiment, name, results: Path, quick: bool) -> int:
    """Cells of configs/NAME.json not yet in the results, by the runner's own plan (0 when the
    runner or the config is absent)."""
    config = results.resolve().parent / "configs" / f"{name}.json"  # the run's own checkout
    if not config.is_file():
        config = REPO / "configs" / f"{name}.json"
    if not experiment or not Path(experiment).is_file() or not config.is_file():
        return 0
    cmd = [experiment, str(config), "--plan", "--out", str(results)] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
    for line in out:
        fields = line.split("\t")
        if fields and fields[0] in (name, name + "-quick") and len(fields) > 3 and fields[3].isdigit():
            return int(fields[3])
    return 0


def cmd_digest(args):
    results = Path(args.results)
    if not results.is_dir():
        raise SystemExit(f"report.py digest: {results}: not a directory")
    out = Path(args.out)
    machine = args.machine or machine_description()
    made = 0
    for jsonl in sorted(results.glob("*.jsonl")):
        stem = jsonl.name[:-len(".jsonl")]
        if stem.endswith(".unavailable"):
            continue
        quick = stem.endswith("-quick")
        if quick != args.quick:
            continue
        pending = pending_cells(args.experiment, stem[:-6] if quick else stem, results, quick)
        if pending:
            print(f"{stem}: {pending} cells still to run; not digested (a part of a grid would read as the result)")
            continue
        digest = make_digest(results, stem, machine)
        if args.note:
            digest["note"] = args.note
        write_atomically(out / f"{stem}.json", dump_digest(digest))
        made += 1
        print(f"{out / (stem + '.json')}: {digest['cells']} cells, {len(digest['rows'])} rows")
    if made == 0:
        raise SystemExit(f"report.py digest: no {'quick' if args.quick else 'full'} records in {results}")


# ----------------------------------------------------------------------------------- claims

def load_claims(path: Path) -> dict:
    if path.is_dir():
        merged = {"claims": [], "beyond": [], "deviations": []}
        for part in sorted(path.glob("*.json")):
            data = json.loads(part.read_text())
            for k in merged:
                merged[k].extend(data.get(k, []))
        return merged
    data = json.loads(path.read_text())
    for k in ("claims", "beyond", "deviations"):
        data.setdefault(k, [])
    return data


class Digests:
    def __init__(self, folder: Path, profile: str = "full"):
        self.folder = folder
        self.profile = profile
        self.cache = {}

    def get(self, config: str) -> dict | None:
        if config not in self.cache:
            stem = config + ("-quick" if self.profile == "quick" else "")
            path = self.folder / f"{stem}.json"
            self.cache[config] = json.loads(path.read_text()) if path.is_file() else None
        return self.cache[config]

    def all(self):
        out = []
        for path in sorted(self.folder.glob("*.json")):
            quick = path.stem.endswith("-quick")
            if quick == (self.profile == "quick"):
                out.append(self.get(path.stem[:-6] if quick else path.stem))
        return [d for d in out if d]


class NotRun(Exception):
    pass


class NoValue(NotRun):
    """Records exist at the epsilon, but none holds the metric: the cells were refused (an
    epsilon whose noise the sampler cannot draw records NaN metrics and its reason)."""


def eps_selected(spec, available):
    """The epsilons a check covers among those the records have (None = no privacy)."""
    finite = sorted(e for e in available if e is not None)
    if not finite and None in available:  # methods without privacy only: one value, any epsilon
        return [None]
    if spec in (None, "all"):
        return finite
    if isinstance(spec, (int, float)):
        spec = [spec]
    if isinstance(spec, list):
        chosen = []
        for want in spec:
            hit = [e for e in finite if math.isclose(e, want, rel_tol=1e-6)]
            if not hit:
                raise NotRun(f"eps = {sig(want)} not in the records")
            chosen.append(hit[0])
        return chosen
    if isinstance(spec, dict):
        lo, hi = spec.get("min", -math.inf), spec.get("max", math.inf)
        return [e for e in finite if lo * (1 - 1e-9) <= e <= hi * (1 + 1e-9)]
    raise ClaimError(f"bad eps {spec!r}")


class View:
    """One config's digest as a function (label, eps) -> value of a metric."""

    def __init__(self, digest: dict, metric: str, where: dict | None = None):
        self.d = digest
        self.metric = metric
        self.where = where or {}
        self.hib = higher_is_better(metric)

    def rows(self, label, extra=None):
        rows = [r for r in self.d["rows"] if r["label"] == label]
        if not rows:
            raise NotRun(f"no records of '{label}'")
        where = {**self.where, **(extra or {})}
        if where:
            rows = [r for r in rows if all(r["params"].get(k) == v for k, v in where.items())]
            if not rows:
                raise NotRun(f"'{label}' has no grid point {where}")
        return rows

    def value(self, label, eps, extra=None):
        """The label's value at eps: its best-over-grid row, or with `where` the best of the
        rows matching it (parameters `where` leaves open are chosen best)."""
        rows = self.rows(label, extra)
        private = [r for r in rows if r["eps"] is not None]
        if not private:  # without privacy: one value at every epsilon
            cands = rows
        else:
            cands = [r for r in private if math.isclose(r["eps"], eps, rel_tol=1e-6)]
            if not cands:
                raise NotRun(f"'{label}' has no record at eps = {sig(eps)}")
        if not self.where and not extra:
            best = [r for r in cands if r["best"]]
            cands = best or cands
        vals = [r["metrics"][self.metric][0] for r in cands if self.metric in r["metrics"]]
        if not vals:
            raise NoValue(f"'{label}' has no value of '{self.metric}' at eps = {sig(eps)} (its cells were refused)")
        return max(vals) if self.hib else min(vals)

    def epsilons(self, labels):
        eps = set()
        for label in labels:
            for r in self.rows(label):
                eps.add(r["eps"])
        return eps

    def better(self, a, b):
        return a > b if self.hib else a < b


def as_list(x):
    return x if isinstance(x, list) else [x]


def evaluate_check(check: dict, claim_config: str | None, digests: Digests):
    """(verdict, measured text) of one check."""
    kind = check.get("type")
    if kind not in CHECK_TYPES:
        raise ClaimError(f"unknown check type {kind!r}")
    if kind == "not_run":
        return NOT_RUN, check["reason"]
    if kind == "not_comparable":
        return NOT_COMPARABLE, check["reason"]
    if kind == "all":
        parts = [evaluate_check(c, claim_config, digests) for c in check["checks"]]
        verdicts = [v for v, _ in parts]
        text = "; ".join(dict.fromkeys(t for _, t in parts))
        for v in (REFUTED, NOT_COMPARABLE, NOT_RUN):
            if v in verdicts:
                if v == REFUTED:
                    text = "; ".join(dict.fromkeys(t for vv, t in parts if vv == REFUTED))
                return v, text
        return CONFIRMED, text
    if kind == "size_needed":
        try:
            return check_size_needed(check, digests)
        except NotRun as e:
            return NOT_RUN, str(e)
    config = check.get("config", claim_config)
    digest = digests.get(config)
    if digest is None:
        return NOT_RUN, f"{config}: no {digests.profile}-profile records"
    tag = f"{config}: " if check.get("config") else ""
    try:
        verdict, text = CHECKERS[kind](check, digest)
    except NotRun as e:
        return NOT_RUN, f"{tag}{e}"
    except NotComparable as e:
        return NOT_COMPARABLE, f"{tag}{e}"
    return verdict, tag + text


def check_better(c, d):
    v = View(d, c["metric"], c.get("where"))
    a, bs = c["a"], as_list(c["b"])
    wa, wb = c.get("where_a"), c.get("where_b")
    eps = eps_selected(c.get("eps"), v.epsilons([a] + bs))
    if not eps:
        raise NotRun("no epsilon in range")
    wins, worst, compared, refused = 0, None, [], 0
    for e in eps:
        # A side whose cells at e were refused has no value there: that competitor is left out
        # at e, and e itself when A or every competitor has none (the text counts them).
        try:
            va = v.value(a, e, wa)
        except NoValue:
            refused += 1
            continue
        vbs = {}
        for b in bs:
            try:
                vbs[b] = v.value(b, e, wb)
            except NoValue:
                pass
        if not vbs:
            refused += 1
            continue
        compared.append(e)
        best_b = max(vbs, key=vbs.get) if v.hib else min(vbs, key=vbs.get)
        ok = v.better(va, vbs[best_b])
        wins += ok
        # the epsilon where a fares worst against its best competitor
        margin = (va - vbs[best_b]) * (1 if v.hib else -1) / (abs(vbs[best_b]) or 1.0)
        if worst is None or margin < worst[0]:
            worst = (margin, e, va, best_b, vbs[best_b])
    if not compared:
        raise NotRun(f"every cell refused at the {len(eps)} eps selected")
    need = len(compared) if c.get("need", "all") == "all" else len(compared) // 2 + 1
    _, e, va, b, vb = worst
    name_a = a + (f" ({fmt_where(wa)})" if wa else "")
    name_b = b + (f" ({fmt_where(wb)})" if wb else "")
    text = f"{name_a} {sig(va)} vs {name_b} {sig(vb)} at eps {eps_text(e)}; better at {wins}/{len(compared)} eps"
    if refused:
        text += f" ({refused} eps refused)"
    return (CONFIRMED if wins >= need else REFUTED), text


def check_threshold(c, d):
    v = View(d, c["metric"], c.get("where"))
    m = c["method"]
    eps = eps_selected(c.get("eps"), v.epsilons([m]))
    if not eps:
        raise NotRun("no epsilon in range")
    vals = [(e, v.value(m, e)) for e in eps]
    ge = c["op"] == ">="
    bad = [(e, x) for e, x in vals if not (x >= c["value"] if ge else x <= c["value"])]
    worst = (min if ge else max)(vals, key=lambda t: t[1])
    text = f"{m} {sig(worst[1])} at eps {eps_text(worst[0])} (worst of {len(vals)}); needs {c['op']} {sig(c['value'])}"
    return (REFUTED if bad else CONFIRMED), text


def check_close(c, d):
    v = View(d, c["metric"], c.get("where"))
    a, b = c["a"], c["b"]
    eps = eps_selected(c.get("eps"), v.epsilons([a, b]))
    if not eps:
        raise NotRun("no epsilon in range")
    worst = None
    for e in eps:
        va, vb = v.value(a, e, c.get("where_a")), v.value(b, e, c.get("where_b"))
        gap = abs(va - vb)
        tol = c["abs"] if "abs" in c else c["rel"] * abs(vb)
        excess = gap - tol
        if worst is None or excess > worst[0]:
            worst = (excess, e, va, vb)
    excess, e, va, vb = worst
    tol_text = f"abs {sig(c['abs'])}" if "abs" in c else f"rel {sig(c['rel'])}"
    text = f"{a} {sig(va)} vs {b} {sig(vb)} at eps {eps_text(e)} (widest gap; tolerance {tol_text})"
    return (CONFIRMED if excess <= 0 else REFUTED), text


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else 0.0


def check_trend(c, d):
    v = View(d, c["metric"], c.get("where"))
    m = c["method"]
    eps = eps_selected(c.get("eps"), v.epsilons([m]))
    if len(eps) < 3:
        raise NotRun("fewer than 3 epsilons")
    vals = [v.value(m, e) for e in eps]
    rho = spearman(eps, vals)
    improving = rho if v.hib else -rho
    want_improve = c.get("direction", "improves") == "improves"
    ok = improving >= 0.8 if want_improve else improving <= -0.8
    text = (f"{m} {sig(vals[0])} at eps {eps_text(eps[0])} -> {sig(vals[-1])} at eps {eps_text(eps[-1])}; "
            f"rank correlation {sig(improving, 2)} (improving)")
    return (CONFIRMED if ok else REFUTED), text


def check_value(c, d):
    v = View(d, c["metric"], c.get("where"))
    m = c["method"]
    eps = eps_selected(c.get("eps"), v.epsilons([m]))
    if len(eps) != 1:
        raise ClaimError("a value check needs exactly one epsilon")
    ours = v.value(m, eps[0])
    if "factor" in c:  # within a factor either way: for values over orders of magnitude
        ok = ours > 0 and c["paper"] > 0 and 1 / c["factor"] <= ours / c["paper"] <= c["factor"]
    else:
        tol = c["abs"] if "abs" in c else c["rel"] * abs(c["paper"])
        ok = abs(ours - c["paper"]) <= tol
    return (CONFIRMED if ok else REFUTED), f"{m} {sig(ours)} at eps {eps_text(eps[0])} (paper {sig(c['paper'])})"


def check_grid_stable(c, d):
    v = View(d, c["metric"])
    m, param = c["method"], c["param"]
    lo, hi = c["range"]
    rows = [r for r in v.rows(m) if isinstance(r["params"].get(param), (int, float))
            and lo <= r["params"][param] <= hi and all(r["params"].get(k) == x for k, x in c.get("where", {}).items())]
    if not rows:
        raise NotRun(f"'{m}' has no grid point with {param} in [{lo}, {hi}]")
    eps = eps_selected(c.get("eps"), {r["eps"] for r in rows})
    worst = None
    for e in eps:
        at = [r for r in rows if r["eps"] is not None and math.isclose(r["eps"], e, rel_tol=1e-6)]
        vals = [(r["metrics"][v.metric][0], r["params"]) for r in at if v.metric in r["metrics"]]
        if len(vals) < 2:
            continue
        best = (max if v.hib else min)(vals, key=lambda t: t[0])
        worst_pt = (min if v.hib else max)(vals, key=lambda t: t[0])
        if "within_abs" in c:
            spread = abs(best[0] - worst_pt[0]) / c["within_abs"]
        else:
            spread = (worst_pt[0] / best[0] if not v.hib else best[0] / worst_pt[0]) / c["within"] if best[0] and worst_pt[0] else math.inf
        if worst is None or spread > worst[0]:
            worst = (spread, e, best, worst_pt, len(vals))
    if worst is None:
        raise NotRun("fewer than 2 grid points at every epsilon")
    spread, e, best, bad, n = worst
    pnames = [k for k in best[1] if k in (param, "rows", "width")] or [param]
    fmt = lambda p: ",".join(f"{k}={p[1].get(k)}" for k in pnames)
    text = f"at eps {eps_text(e)}: best {sig(best[0])} ({fmt(best)}), worst {sig(bad[0])} ({fmt(bad)}) of {n} points"
    return (CONFIRMED if spread <= 1.0 else REFUTED), text


def smallest_within(values: dict, rel: float, higher_is_better: bool):
    """The smallest size whose value is within rel of the best value ({size: value}): the size a
    task needs (check size_needed; plots/plot_race_rw.py draws it)."""
    best = (max if higher_is_better else min)(values.values())
    return min(x for x, val in values.items() if abs(val - best) <= rel * abs(best))


def size_needed_at(entry, digest, default_param):
    """{eps: the smallest grid value of the entry's parameter whose mean is within `rel` of the
    best grid point's at that epsilon}; a parameter's value at a grid value is the best over the
    other parameters. `exp2`: the parameter is an exponent p and the size is 2^p."""
    v = View(digest, digest["metric"])
    param = entry.get("param", default_param)
    rel = entry.get("rel", 0.1)
    by_eps = {}
    for r in v.rows(entry["method"]):
        x = r["params"].get(param)
        if r["eps"] is None or not isinstance(x, (int, float)) or v.metric not in r["metrics"]:
            continue
        size = 2 ** x if entry.get("exp2") else x
        val = r["metrics"][v.metric][0]
        at = by_eps.setdefault(r["eps"], {})
        at[size] = val if size not in at else (max if v.hib else min)(at[size], val)
    out = {}
    for e, at in by_eps.items():
        if len(at) < 2:
            continue
        out[e] = smallest_within(at, rel, v.hib)
    if not out:
        raise NotRun(f"{entry['config']}: '{entry['method']}' has fewer than 2 values of {param} at every epsilon")
    return out


def check_size_needed(c, digests):
    """Every config of `larger` needs a larger size (grid parameter) than every config of
    `smaller`, at all (or most) of the epsilons they share: the size needed is the smallest grid
    value within `rel` of the best (size_needed_at)."""
    sides = {}
    for side in ("larger", "smaller"):
        sides[side] = []
        for entry in c[side]:
            d = digests.get(entry["config"])
            if d is None:
                raise NotRun(f"{entry['config']}: no {digests.profile}-profile records")
            name = entry.get("name", entry["config"])
            sides[side].append((name, size_needed_at(entry, d, c["param"])))
    common = set.intersection(*(set(n) for _, n in sides["larger"] + sides["smaller"]))
    eps = eps_selected(c.get("eps"), common)
    if not eps:
        raise NotRun("the configs share no epsilon in range")
    wins, pairs = 0, 0
    for e in eps:
        for _, big in sides["larger"]:
            for _, small in sides["smaller"]:
                pairs += 1
                wins += big[e] > small[e]
    need = pairs if c.get("need", "all") == "all" else pairs // 2 + 1

    def med(n):
        xs = sorted(n[e] for e in eps)
        return sig(xs[len(xs) // 2]) if len(xs) % 2 else sig(math.sqrt(xs[len(xs) // 2 - 1] * xs[len(xs) // 2]))

    text = (f"needed {c['param']} (median of {len(eps)} eps): "
            + ", ".join(f"{n} {med(x)}" for n, x in sides["larger"]) + " vs "
            + ", ".join(f"{n} {med(x)}" for n, x in sides["smaller"])
            + f"; larger at {wins}/{pairs}")
    return (CONFIRMED if wins >= need else REFUTED), text


def fmt_where(w):
    return ", ".join(f"{k}={v}" for k, v in w.items())


def check_slope(c, d):
    """Least-squares slope of log(value) against log(param) at every epsilon: a rate in n."""
    v = View(d, c["metric"], c.get("where"))
    methods, param = as_list(c["method"]), c["param"]
    rows = [r for m in methods for r in v.rows(m) if isinstance(r["params"].get(param), (int, float))
            and v.metric in r["metrics"]]
    if not rows:
        raise NotRun(f"no grid point with a numeric {param}")
    eps = eps_selected(c.get("eps"), {r["eps"] for r in rows})
    worst = None
    for e in eps:
        at = {}
        for r in rows:
            if r["eps"] is None or not math.isclose(r["eps"], e, rel_tol=1e-6):
                continue
            x, y = r["params"][param], r["metrics"][v.metric][0]
            if x > 0 and y > 0:
                at[x] = (max if v.hib else min)(at.get(x, y), y)
        if len(at) < 3:
            continue
        xs = [math.log(x) for x in sorted(at)]
        ys = [math.log(at[x]) for x in sorted(at)]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)
        excess = max(slope - c["max"] if "max" in c else -math.inf, c["min"] - slope if "min" in c else -math.inf)
        if worst is None or excess > worst[0]:
            worst = (excess, e, slope, min(at), max(at), len(at))
    if worst is None:
        raise NotRun(f"fewer than 3 values of {param} at every epsilon")
    excess, e, slope, lo, hi, n = worst
    bound = " and ".join(x for x in (f"<= {sig(c['max'])}" if "max" in c else "",
                                     f">= {sig(c['min'])}" if "min" in c else "") if x)
    text = (f"slope of log {v.metric} in log {param} {sig(slope, 2)} at eps {eps_text(e)} "
            f"({n} points, {param} {sig(lo)}..{sig(hi)}; needs {bound}, worst of {len(eps)} eps)")
    return (CONFIRMED if excess <= 0 else REFUTED), text


def useful_cost(d, label, what, at):
    """The cheapest grid point of `label` whose mean `at.metric` at `at.eps` is within
    `at.within` times the best method's there: the cost of a useful release."""
    v = View(d, at["metric"])
    e = at.get("eps", 1.0)
    best_all = None
    for r in d["rows"]:
        if v.metric in r["metrics"] and (r["eps"] is None or math.isclose(r["eps"], e, rel_tol=1e-6)):
            x = r["metrics"][v.metric][0]
            best_all = x if best_all is None else (max if v.hib else min)(best_all, x)
    if best_all is None:
        raise NotRun(f"no {v.metric} at eps {eps_text(e)}")
    ok = []
    for r in v.rows(label):
        if v.metric not in r["metrics"] or not (r["eps"] is None or math.isclose(r["eps"], e, rel_tol=1e-6)):
            continue
        x = r["metrics"][v.metric][0]
        useful = x >= best_all / at["within"] if v.hib else x <= best_all * at["within"]
        cost = r.get("cost", {}).get(what)
        if useful and cost is not None:
            ok.append((cost, r))
    if not ok:
        raise NotComparable(f"'{label}' never within x{sig(at['within'])} of the best {v.metric} "
                            f"({sig(best_all)}) at eps {eps_text(e)}: no useful release to time")
    return min(ok, key=lambda t: t[0])[0]


class NotComparable(Exception):
    pass


def timing_of(d, label, what, at=None):
    if at:
        return useful_cost(d, label, what, at)
    for t in d.get("timing", []):
        if t.get("label") == label:
            if t.get(what) is None:
                raise NotRun(f"'{label}' has no {what} ({t.get('note') or t.get('refused') or 'refused'})")
            return t[what]
    raise NotRun(f"no timing of '{label}'")


def check_faster(c, d):
    what, at = c["what"], c.get("at")
    a = timing_of(d, c["a"], what, at)
    bs = {b: timing_of(d, b, what, at) for b in as_list(c["b"])}
    fastest = min(bs, key=bs.get)
    unit = "s" if what.endswith("seconds") else "ms"
    text = f"{what}: {c['a']} {sig(a)} {unit} vs {fastest} {sig(bs[fastest])} {unit}"
    return (CONFIRMED if a < bs[fastest] else REFUTED), text


def check_time(c, d):
    what = c["what"]
    ours = timing_of(d, c["method"], what, c.get("at"))
    unit = "s" if what.endswith("seconds") else "ms"
    if "max" in c or "min" in c:  # a bound the paper states ("under 2 minutes", "at least 12 hours")
        ok = ours <= c.get("max", math.inf) and ours >= c.get("min", -math.inf)
        bound = " and ".join(x for x in (f"<= {sig(c['max'])}" if "max" in c else "",
                                         f">= {sig(c['min'])}" if "min" in c else "") if x)
        return (CONFIRMED if ok else REFUTED), f"{c['method']} {sig(ours)} {unit} (paper: {bound} {unit})"
    ratio = ours / c["paper"] if c["paper"] else math.inf
    ok = 1 / c["factor"] <= ratio <= c["factor"]
    return (CONFIRMED if ok else REFUTED), f"{c['method']} {sig(ours)} {unit} (paper {sig(c['paper'])} {unit}; x{sig(ratio, 2)})"


CHECKERS = {"better": check_better, "threshold": check_threshold, "close": check_close,
            "trend": check_trend, "value": check_value, "grid_stable": check_grid_stable, "slope": check_slope,
            "faster": check_faster, "time": check_time}


def evaluate(claim: dict, digests: Digests):
    try:
        return evaluate_check(claim["check"], claim.get("config"), digests)
    except (ClaimError, KeyError, TypeError) as e:
        raise SystemExit(f"claim {claim.get('id', '?')}: {type(e).__name__}: {e}")


# ----------------------------------------------------------------------------------- report

def cell(text: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL - 1].rstrip() + "…"
    return text


def figure_link(stem, docs_to_figures="figures"):
    """A link to the published figure, or its name while none is published."""
    if not stem:
        return ""
    if not (REPO / "docs" / "figures" / f"{stem}.png").is_file():
        return stem
    return f"[{stem}]({docs_to_figures}/{stem}.png)"


def duration(seconds):
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def verdict_text(v):
    return {CONFIRMED: "**confirmed**", REFUTED: "**refuted**", NOT_RUN: "not run",
            NOT_COMPARABLE: "not comparable"}[v]


def render_claim_table(claims, digests, out, counts):
    out.append("| claim | paper says | we measured | verdict | figure |")
    out.append("|---|---|---|---|---|")
    for c in claims:
        verdict, measured = evaluate(c, digests)
        counts[verdict] += 1
        name = f"{c['place']}: {c.get('quote', '')}"
        out.append(f"| {cell(name)} | {cell(c.get('paper_says', ''))} | {cell(measured)} | "
                   f"{verdict_text(verdict)} | {figure_link(c.get('figure'))} |")


def place_key(place: str):
    head = place.split(",")[0].split(":")[0].strip()
    return head


def render_report(data, digests: Digests, configs_dir: Path):
    out = ["# Reproduction: the papers' claims against the records", "",
           "Written by `python3 reproduction/report.py write` from `reproduction/claims.json` (every",
           "quantitative claim of the papers' experiment sections, with its check) and",
           "`reproduction/digests/` (summaries of the records); do not edit by hand. Each row: the paper's",
           "place and words, what the paper says, what the records give, the verdict. A claim about a",
           "method the paper did not run is under \"Beyond the papers\" and decides no verdict. Schema and",
           "check types: [reproduction/README.md](../reproduction/README.md); per-config numbers: the",
           "pages linked under [Configs](#configs).", ""]
    present = digests.all()
    commits = sorted({c for d in present for c in d["commits"]})
    machines = sorted({d["machine"] for d in present})
    total = sum(d.get("wall_seconds") or 0 for d in present)
    estimated = sum(d.get("wall_estimated_seconds") or 0 for d in present)
    if present:
        out.append(f"Records: {len(present)} configs, {digests.profile} profiles, "
                   f"commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}; "
                   f"machine {'; '.join(machines)}; wall time {duration(total)} in all "
                   + (f"({duration(estimated)} of it estimated from cell times where a run was cut off before "
                      "its log line; " if estimated else "(")
                   + "`./run_all.sh --no-fetch`, resumed).")
        notes = sorted({d["note"] for d in present if d.get("note")})
        if notes:
            out.append("")
            out.append("Run conditions: " + "; ".join(notes) + ".")
        if len(commits) > 1:
            out.append("")
            out.append(f"**The records come from {len(commits)} commits**: the per-config pages say which.")
        added = sorted(d["config"] for d in present if d.get("config_added_after"))
        if added:
            out.append("")
            out.append(f"The config{'s' if len(added) > 1 else ''} {', '.join(f'`{a}`' for a in added)} "
                       f"{'were' if len(added) > 1 else 'was'} written after that commit and ran on its code "
                       "(the config files are not in it; `git log configs/` has them).")
    else:
        out.append(f"Records: none yet at the {digests.profile} profile; every check reads \"not run\".")
    out.append("")

    sections = []
    totals = {p: defaultdict(int) for p in PAPER_ORDER}
    for paper in PAPER_ORDER:
        claims = [c for c in data["claims"] if c["paper"] == paper]
        if not claims:
            continue
        body = [f"## {PAPERS[paper]}", ""]
        groups = defaultdict(list)
        order = []
        for c in claims:
            k = place_key(c["place"])
            if k not in groups:
                order.append(k)
            groups[k].append(c)
        for k in order:
            body.append(f"### {k}")
            body.append("")
            render_claim_table(groups[k], digests, body, totals[paper])
            body.append("")
        sections.append(body)

    out.append("## Verdicts")
    out.append("")
    out.append("| paper | claims | confirmed | refuted | not run | not comparable |")
    out.append("|---|---|---|---|---|---|")
    for paper in PAPER_ORDER:
        t = totals[paper]
        n = sum(t.values())
        if n:
            out.append(f"| {paper} | {n} | {t[CONFIRMED]} | {t[REFUTED]} | {t[NOT_RUN]} | {t[NOT_COMPARABLE]} |")
    out.append("")
    for s in sections:
        out.extend(s)

    if data["beyond"]:
        out.append("## Beyond the papers")
        out.append("")
        out.append("Methods or settings the papers did not run; these decide no paper claim.")
        out.append("")
        render_claim_table(data["beyond"], digests, out, defaultdict(int))
        out.append("")
    if data["deviations"]:
        out.append("## Deviations from the papers")
        out.append("")
        out.append("| paper | what | the paper | here | configs |")
        out.append("|---|---|---|---|---|")
        for dv in data["deviations"]:
            configs = config_list(as_list(dv.get("configs", [])))
            paper = dv["id"].split("-")[0].replace("ldp", "ldp-erm")
            out.append(f"| {paper} | {cell(dv['what'])} | {cell(dv.get('paper', ''))} | "
                       f"{cell(dv.get('here', ''))} | {configs} |")
        out.append("")
    out.append("## Configs")
    out.append("")
    out.append("| config | profile | cells | wall time | commit | numbers |")
    out.append("|---|---|---|---|---|---|")
    by_name = {d["config"]: d for d in present}
    names = sorted(set(by_name) | {p.stem for p in configs_dir.glob("*.json") if not p.stem.startswith("scaling")})
    for name in names:
        d = by_name.get(name)
        if d is None:
            out.append(f"| {name} | not run yet | | | | |")
            continue
        out.append(f"| {d['config']} | {d['profile']}{' (stand-in data)' if d.get('stand_in') else ''} | "
                   f"{d['cells']} | {duration(d.get('wall_seconds'))} | {', '.join(d['commits'])} | "
                   f"[{d['config']}.md](results/{d['config']}.md) |")
    out.append("")
    return "\n".join(out)


def config_list(names):
    """kde_{skin, sf}, graph_enron: configs grouped by their family prefix, in first-seen order."""
    fam = {}
    for n in names:
        head, _, tail = n.partition("_")
        fam.setdefault(head if tail else n, []).append(tail)
    parts = []
    for head, tails in fam.items():
        tails = [t for t in tails if t]
        if not tails:
            parts.append(head)
        elif len(tails) == 1:
            parts.append(f"{head}_{tails[0]}")
        else:
            parts.append(f"{head}_{{{', '.join(tails)}}}")
    return ", ".join(parts)


def fmt_params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("delta", "mechanism", "neighbors")
                     or v not in (0.0, "discrete_laplace", "add-remove")) or "-"


def render_config_page(d: dict, config: dict | None):
    name = d["config"]
    out = [f"# {name}", "",
           f"Written by `python3 reproduction/report.py write` from `reproduction/digests/{name}"
           f"{'-quick' if d['profile'] == 'quick' else ''}.json`; do not edit by hand.", ""]
    if config and config.get("description"):
        out += [config["description"], ""]
    out.append(f"* config: [configs/{name}.json](../../configs/{name}.json); task `{d['task']}`, data "
               f"`{d['dataset']}`{' (**synthetic stand-in**)' if d.get('stand_in') else ''}")
    estimated = ""
    if d.get("wall_estimated_seconds"):
        estimated = (f", of which {duration(d['wall_estimated_seconds'])} estimated for {d['wall_estimated_cells']} cells "
                     "of runs cut off before their log line, as their summed time over the jobs")
    out.append(f"* profile: {d['profile']}; {d['cells']} cells; wall time {duration(d.get('wall_seconds'))}{estimated} "
               f"(cells {duration(d.get('cell_seconds'))} summed); jobs {d.get('jobs')}, threads {d.get('threads')}")
    out.append(f"* records: commit {', '.join(d['commits'])}"
               + (" (the code; this config was written after it)" if d.get("config_added_after") else "")
               + f"; machine {d['machine']}" + (f"; {d['note']}" if d.get("note") else ""))
    out.append(f"* reproduce: `./run_all.sh --no-fetch {name}` then `python3 reproduction/report.py digest results/`")
    if config:
        out.append(f"* repetitions {config.get('repetitions')}; epsilons {json.dumps(config.get('epsilons'))}")
        out.append("")
        out.append("| method | grid | fixed |")
        out.append("|---|---|---|")
        for m in config.get("methods", []):
            out.append(f"| {m.get('label', m['name'])} (`{m['name']}`) | {cell(json.dumps(m.get('grid', {})))} | "
                       f"{cell(json.dumps(m.get('fixed', {})))} |")
    if d.get("setting_metrics"):
        out.append("")
        out.append("Not tabulated (no repetition moves them in any row: quantities of the setting, in the records): "
                   + ", ".join(f"`{m}`" for m in d["setting_metrics"]) + ".")
    out.append("")
    metrics = sorted({m for r in d["rows"] for m in r["metrics"]})
    primary = d.get("metric")
    metrics.sort(key=lambda m: (m != primary, m))
    labels = list(dict.fromkeys(r["label"] for r in d["rows"]))
    eps_all = sorted({r["eps"] for r in d["rows"] if r["eps"] is not None})
    for metric in metrics:
        hib = higher_is_better(metric)
        out.append(f"## {metric} ({'higher' if hib else 'lower'} is better; best grid point per epsilon, mean ± sd over n)")
        out.append("")
        show_eps = eps_all if len(eps_all) <= 12 else eps_all[:: max(1, len(eps_all) // 12)]
        out.append("| method | " + " | ".join(f"eps {eps_text(e)}" for e in show_eps) + " | no privacy |")
        out.append("|---|" + "---|" * (len(show_eps) + 1))
        for label in labels:
            rows = [r for r in d["rows"] if r["label"] == label and metric in r["metrics"]]
            if not rows:
                continue
            cells = []
            for e in show_eps:
                at = [r for r in rows if r["eps"] is not None and math.isclose(r["eps"], e, rel_tol=1e-6)]
                best = [r for r in at if r["best"]] or at
                if best:
                    r = (max if hib else min)(best, key=lambda r: r["metrics"][metric][0])
                    mean, sd, n = r["metrics"][metric]
                    cells.append(f"{sig(mean)} ± {sig(sd, 2)}")
                else:
                    cells.append("")
            nonpriv = [r for r in rows if r["eps"] is None]
            if nonpriv:
                r = nonpriv[0]
                mean, sd, n = r["metrics"][metric]
                cells.append(f"{sig(mean)} ± {sig(sd, 2)}")
            else:
                cells.append("")
            out.append(f"| {cell(label)} | " + " | ".join(cells) + " |")
        out.append("")
    if d.get("timing"):
        out.append("## Timing (each method at its best setting)")
        out.append("")
        out.append("| method | setting | build (s) | query (ms) | note |")
        out.append("|---|---|---|---|---|")
        for t in d["timing"]:
            out.append(f"| {cell(t.get('label', ''))} | {cell(t.get('setting') or fmt_params(t.get('params', {})))} | "
                       f"{sig(t.get('build_seconds'))} | {sig(t.get('query_ms'))} | {cell(t.get('note') or t.get('selected_by', ''))} |")
        out.append("")
    grid_rows = [r for r in d["rows"] if primary in r["metrics"]]
    if len(grid_rows) <= 400 and len({params_key(r['params']) for r in grid_rows}) > len(labels):
        out.append(f"## Every grid point ({primary})")
        out.append("")
        out.append("| method | parameters | eps | mean | sd | n |")
        out.append("|---|---|---|---|---|---|")
        for r in grid_rows:
            mean, sd, n = r["metrics"][primary]
            out.append(f"| {cell(r['label'])} | {cell(fmt_params(r['params']))} | {eps_text(r['eps'])} | "
                       f"{sig(mean)} | {sig(sd, 2)} | {n} |")
        out.append("")
    return "\n".join(out)


def render_all(args):
    data = load_claims(Path(args.claims))
    digests = Digests(Path(args.digests), args.profile)
    docs = Path(args.docs)
    files = {docs / "reproduction.md": render_report(data, digests, Path(args.configs))}
    for d in digests.all():
        cfg_path = Path(args.configs) / f"{d['config']}.json"
        config = json.loads(cfg_path.read_text()) if cfg_path.is_file() else None
        files[docs / "results" / f"{d['config']}.md"] = render_config_page(d, config)
    return {p: t.rstrip("\n") + "\n" for p, t in files.items()}


def cmd_write(args):
    for path, text in render_all(args).items():
        write_atomically(path, text)
        print(path)


def cmd_check(args):
    files = render_all(args)
    stale = []
    for path, text in files.items():
        if not path.is_file() or path.read_text() != text:
            stale.append(str(path))
    results_dir = Path(args.docs) / "results"
    if results_dir.is_dir():
        for page in results_dir.glob("*.md"):
            if page not in files:
                stale.append(f"{page} (no digest)")
    if stale:
        print("report.py check: these files differ from what `report.py write` makes:\n  " + "\n  ".join(stale),
              file=sys.stderr)
        return 1
    print(f"report.py check: {len(files)} files up to date")
    return 0


# ----------------------------------------------------------------------------------- lint

REQUIRED = ("id", "paper", "place", "quote", "paper_says", "setting", "check")


def config_labels(config: dict) -> set:
    labels = {m.get("label", m["name"]) for m in config.get("methods", [])}
    quick = config.get("quick", {})
    for m in quick.get("methods", []) if isinstance(quick, dict) else []:
        labels.add(m.get("label", m["name"]))
    return labels


def lint_check(check, claim_config, configs, where, problems):
    kind = check.get("type")
    if kind not in CHECK_TYPES:
        problems.append(f"{where}: unknown check type {kind!r}")
        return
    if kind in ("not_run", "not_comparable"):
        for k in check:
            if k not in COMMON_KEYS | CHECK_KEYS[kind]:
                problems.append(f"{where}: {kind} has no key '{k}'")
        if not check.get("reason"):
            problems.append(f"{where}: {kind} needs a reason")
        return
    if kind == "all":
        if not check.get("checks"):
            problems.append(f"{where}: 'all' needs checks")
        for i, c in enumerate(check.get("checks", [])):
            lint_check(c, check.get("config", claim_config), configs, f"{where}.checks[{i}]", problems)
        return
    if kind == "size_needed":
        for k in check:
            if k not in COMMON_KEYS | CHECK_KEYS[kind]:
                problems.append(f"{where}: size_needed has no key '{k}'")
        if "param" not in check:
            problems.append(f"{where}: size_needed needs 'param'")
        for side in ("larger", "smaller"):
            if not check.get(side):
                problems.append(f"{where}: size_needed needs a non-empty '{side}'")
            for i, e in enumerate(check.get(side, [])):
                for k in e:
                    if k not in SIZE_ENTRY_KEYS:
                        problems.append(f"{where}.{side}[{i}]: no key '{k}' (expected {', '.join(sorted(SIZE_ENTRY_KEYS))})")
                if e.get("config") not in configs:
                    problems.append(f"{where}.{side}[{i}]: unknown config {e.get('config')!r}")
                elif e.get("method") not in config_labels(configs[e["config"]]):
                    problems.append(f"{where}.{side}[{i}]: config {e['config']} has no method labelled {e.get('method')!r}")
        return
    config = check.get("config", claim_config)
    if config not in configs:
        problems.append(f"{where}: unknown config {config!r}")
        return
    labels = config_labels(configs[config])
    for key in ("a", "b", "method"):
        for label in as_list(check.get(key, [])):
            if label not in labels:
                problems.append(f"{where}: config {config} has no method labelled {label!r}")
    for k in check:
        if k not in COMMON_KEYS | CHECK_KEYS[kind]:
            problems.append(f"{where}: {kind} has no key '{k}' (expected {', '.join(sorted(COMMON_KEYS | CHECK_KEYS[kind]))})")
    needs = {"better": ("metric", "a", "b"), "slope": ("metric", "method", "param"), "threshold": ("metric", "method", "op", "value"),
             "close": ("metric", "a", "b"), "trend": ("metric", "method"),
             "value": ("metric", "method", "eps", "paper"), "grid_stable": ("metric", "method", "param", "range"),
             "faster": ("a", "b", "what"), "time": ("method", "what")}[kind]
    for k in needs:
        if k not in check:
            problems.append(f"{where}: {kind} needs '{k}'")
    if kind == "close" and not ("rel" in check or "abs" in check):
        problems.append(f"{where}: close needs 'rel' or 'abs'")
    if kind == "value" and not ("rel" in check or "abs" in check or "factor" in check):
        problems.append(f"{where}: value needs 'rel', 'abs' or 'factor'")
    if kind == "slope" and not ("max" in check or "min" in check):
        problems.append(f"{where}: slope needs 'max' or 'min'")
    if kind == "time" and not (("paper" in check and "factor" in check) or "max" in check or "min" in check):
        problems.append(f"{where}: time needs 'paper' and 'factor', or a bound 'max'/'min'")
    if kind in ("faster", "time") and "at" in check and not {"metric", "within"} <= set(check["at"]):
        problems.append(f"{where}: 'at' needs metric and within (and eps, default 1)")
    if kind == "grid_stable" and not ("within" in check or "within_abs" in check):
        problems.append(f"{where}: grid_stable needs 'within' or 'within_abs'")
    if kind == "threshold" and check.get("op") not in (">=", "<="):
        problems.append(f"{where}: op must be '>=' or '<='")
    if kind in ("faster", "time") and check.get("what") not in ("build_seconds", "query_ms"):
        problems.append(f"{where}: what must be build_seconds or query_ms")


def lint(data, configs_dir: Path):
    configs = {}
    for path in configs_dir.glob("*.json"):
        configs[path.stem] = json.loads(path.read_text())
    problems, ids = [], set()
    for section in ("claims", "beyond"):
        for i, c in enumerate(data[section]):
            where = f"{section}[{i}] {c.get('id', '?')}"
            for k in REQUIRED:
                if not c.get(k):
                    problems.append(f"{where}: missing '{k}'")
            if c.get("id") in ids:
                problems.append(f"{where}: duplicate id")
            ids.add(c.get("id"))
            if c.get("paper") not in PAPERS:
                problems.append(f"{where}: paper must be one of {', '.join(PAPERS)}")
            if len(c.get("paper_says", "")) > 100:
                problems.append(f"{where}: paper_says over 100 characters")
            if len(c.get("quote", "")) > 200:
                problems.append(f"{where}: quote over 200 characters")
            if c.get("figure") and not (REPO / "docs" / "figures" / f"{c['figure']}.png").exists() \
                    and not any((REPO / "plots").glob("*.py")):
                problems.append(f"{where}: no figure {c['figure']}")
            if "check" in c:
                lint_check(c["check"], c.get("config"), configs, where, problems)
    for i, dv in enumerate(data["deviations"]):
        for k in ("id", "what", "paper", "here"):
            if not dv.get(k):
                problems.append(f"deviations[{i}]: missing '{k}'")
        for cfg in as_list(dv.get("configs", [])):
            if cfg not in configs:
                problems.append(f"deviations[{i}] {dv.get('id')}: unknown config {cfg!r}")
    return problems


def cmd_lint(args):
    data = load_claims(Path(args.claims))
    problems = lint(data, Path(args.configs))
    for p in problems:
        print(p, file=sys.stderr)
    n = len(data["claims"])
    print(f"report.py lint: {n} claims, {len(data['beyond'])} beyond the papers, "
          f"{len(data['deviations'])} deviations; {len(problems)} problems")
    return 1 if problems else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    default_claims = REPO / "reproduction" / "claims.json"
    if not default_claims.exists():
        default_claims = REPO / "reproduction" / "claims"

    def common(p):
        p.add_argument("--claims", default=str(default_claims))
        p.add_argument("--digests", default=str(REPO / "reproduction" / "digests"))
        p.add_argument("--docs", default=str(REPO / "docs"))
        p.add_argument("--configs", default=str(REPO / "configs"))
        p.add_argument("--profile", choices=["full", "quick"], default="full",
                       help="which digests decide the verdicts (the published report: full)")

    d = sub.add_parser("digest")
    d.add_argument("results")
    d.add_argument("--out", default=str(REPO / "reproduction" / "digests"))
    d.add_argument("--machine", default=None)
    d.add_argument("--note", default=None, help="how the run was made, e.g. on a machine shared with builds")
    d.add_argument("--quick", action="store_true", help="digest the quick-profile records instead")
    d.add_argument("--experiment", default=str(REPO / "build" / "privrace-experiment"),
                   help="the runner, asked for each config's pending cells (configs not finished are skipped)")
    for name in ("write", "check", "lint"):
        common(sub.add_parser(name))
    args = ap.parse_args(argv)
    if args.cmd == "digest":
        return cmd_digest(args) or 0
    if args.cmd == "write":
        return cmd_write(args) or 0
    if args.cmd == "check":
        return cmd_check(args)
    return cmd_lint(args)


if __name__ == "__main__":
    sys.exit(main())
