"""Shared helpers for the figure scripts: read results/*.jsonl, aggregate over repetitions,
pick the best grid point per epsilon. The look of every figure (fonts, panel grid, one legend,
a fixed style per method) is plots/style.py's; style() and save() here defer to it.

Needs numpy and matplotlib (Debian: python3-numpy python3-matplotlib for /usr/bin/python3).
"""
import glob
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402,F401  (common.plt, for scripts that draw by hand)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import style as _style  # noqa: E402  (the one figure style: plots/style.py)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# privrace.results reads the records (pure Python: the compiled module is not needed). An
# installed privrace package comes first; the checkout's python/ otherwise.
sys.path.append(os.path.join(REPO, "python"))
from privrace.results import read_records  # noqa: E402


def read_jsonl(path):
    """Records of one results file; a partial last line (killed run) is skipped with a warning."""
    return read_records(path)


def result_sets(results_dir, task):
    """{config name: (records, quick)} for every results file of `task`; a full run's file
    wins over the same config's -quick file."""
    sets = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.jsonl"))):
        if path.endswith(".unavailable.jsonl"):  # cells a missing module could not run: no results
            continue
        records = [r for r in read_jsonl(path) if r.get("task") == task]
        if not records:
            continue
        name = records[0]["config"]
        quick = bool(records[0].get("quick"))
        if name in sets and not sets[name][1] and quick:
            continue
        sets[name] = (records, quick)
    return sets


def best_over_grid(records, metric, lower_is_better=True):
    """{label: [(epsilon, values over reps, params)]}: at each epsilon the grid point with the
    best mean (the paper's "best over the grid"); non-finite values are dropped."""
    cells = {}
    for r in records:
        v = r.get("metrics", {}).get(metric)
        if v is None or not math.isfinite(v):
            continue
        key = (r["label"], json.dumps(r["params"], sort_keys=True), r.get("epsilon"))
        cells.setdefault(key, []).append(v)
    best = {}
    for (label, params, eps), values in cells.items():
        mean = float(np.mean(values))
        cur = best.get((label, eps))
        if cur is None or (mean < cur[0] if lower_is_better else mean > cur[0]):
            best[(label, eps)] = (mean, values, json.loads(params))
    out = {}
    for (label, eps), (_, values, params) in best.items():
        out.setdefault(label, []).append((eps, values, params))
    for label in out:
        out[label].sort(key=lambda t: (t[0] is None, t[0] or 0))
    return out


# Config labels -> legend names. The RACE entry keeps the label "RACE" in configs and records
# (so existing results resume) but is drawn as what it is: the best R of the grid per epsilon,
# next to "RACE (R by Corollary 1)" whose R is fixed by the paper's rule without tuning.
DISPLAY = {"RACE": "RACE (best R over grid)"}


def display(label):
    return DISPLAY.get(label, label)


def dedupe(records):
    """Drop records whose cell key repeats (kde_skin and kde_skin_baselines share the RACE cells:
    same seed, query set and key, so the second copy would count every repetition twice)."""
    seen, out = set(), []
    for r in records:
        k = (r.get("label"), r.get("key"))
        if r.get("key") is not None and k in seen:
            continue
        seen.add(k)
        out.append(r)
    return out


def style():
    """The shared figure style (plots/style.py): every script calls it before drawing."""
    _style.apply()


def save(fig, out_dir, name):
    """Check the figure against the shared rules and write out_dir/name.png and .pdf (plots/style.py)."""
    return _style.save(fig, out_dir, name)


def substitute_label(records):
    """The short label of real data of another version than the paper's ("NYC FY2016 slice, not
    FY2018"), from the records' data.substitute (datasets/registry.json); "" when none says so."""
    for r in records:
        sub = (r.get("data") or {}).get("substitute")
        if sub:
            return sub.get("label", "substitute data") if isinstance(sub, dict) else str(sub)
    return ""


def title_suffix(records, substitute_sep=" "):
    """What a title must say about the data and the run: a synthetic stand-in, real data of
    another version than the paper's (after substitute_sep: "\n" puts it on a line of its
    own), a quick profile."""
    s = ""
    if any(r.get("stand_in") for r in records):
        s += " (synthetic stand-in)"
    elif substitute_label(records):
        s += f"{substitute_sep}({substitute_label(records)})"
    if any(r.get("quick") for r in records):
        s += " [quick]"
    return s
