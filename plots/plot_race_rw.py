#!/usr/bin/env python3
"""The sketch sizes each task needs (configs/race_rw_*.json): private RACE, Section 6.

Panels: (a) the rows R each task needs against epsilon, (b) the hash range W each task needs,
(c) RACE against the histogram release on codrna (d = 8) and (d) on skin (d = 3, from
kde_skin_baselines), mean relative error against epsilon. "Needed" is the rule of
reproduction/claims.json's size_needed checks: the smallest grid value whose mean is within 10%
of the best grid point's (1% for accuracy), the other size chosen best.

    python3 plots/plot_race_rw.py [--results results] [--out plots]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import style  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "reproduction"))
from report import smallest_within  # noqa: E402  (the rule of the size_needed check)

# (config, curve label, size parameter of W, tolerance)
TASKS = [
    ("race_rw_kde_skin", "KDE, skin (d = 3)", "width", 0.1),
    ("race_rw_kde_codrna", "KDE, codrna (d = 8)", "width", 0.1),
    ("race_rw_kde_covtype", "KDE, covtype (d = 54)", "width", 0.1),
    ("race_rw_classify_occupancy", "classification, occupancy", "width", 0.01),
    ("race_rw_regress_airfoil", "regression, airfoil (W = 2^p)", "power", 0.1),
]


def load(results, name):
    """The config's summary (full run, else its quick run) or None."""
    for stem in (name, name + "-quick"):
        path = os.path.join(results, stem + ".summary.json")
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
    return None


def needed(summary, label, param, rel, exp2=False):
    """[(eps, smallest value of param within rel of the best)], the other sizes chosen best."""
    hib = not summary.get("lower_is_better", True)
    by = {}
    for r in summary["rows"]:
        x = r["params"].get(param)
        if r["label"] != label or r.get("epsilon") is None or x is None or r.get("mean") is None:
            continue
        size = 2 ** x if exp2 else x
        at = by.setdefault(r["epsilon"], {})
        at[size] = r["mean"] if size not in at else (max if hib else min)(at[size], r["mean"])
    out = []
    for e, at in sorted(by.items()):
        if len(at) < 2:
            continue
        out.append((e, smallest_within(at, rel, hib)))
    return out


def best_curve(summary, label):
    pts = sorted((r["epsilon"], r["mean"]) for r in summary["rows"]
                 if r["label"] == label and r.get("best_over_grid") and r.get("epsilon") is not None)
    return [p[0] for p in pts], [p[1] for p in pts]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(common.REPO, "results"))
    ap.add_argument("--out", default=os.path.join(common.REPO, "plots"))
    a = ap.parse_args()
    sums = {name: load(a.results, name) for name, *_ in TASKS}
    if not any(sums.values()):
        print(f"plot_race_rw: no race_rw_* results in {a.results}", file=sys.stderr)
        return 0
    common.style()
    fig, axes = style.panels(4)
    quick = any(s.get("quick") for s in sums.values() if s)
    for ax, param, title in ((axes[0], "rows", "(a) rows R needed"), (axes[1], "width", "(b) hash range W needed")):
        for i, (name, label, wparam, rel) in enumerate(TASKS):
            s = sums[name]
            if not s:
                continue
            p = param if param == "rows" else wparam
            pts = needed(s, "RACE", p, rel, exp2=(p == "power"))
            if pts:  # each task's points a little apart in epsilon, so that equal sizes stay visible
                dodge = 1.12 ** (i - 2)
                style.line(ax, [e * dodge for e, _ in pts], [v for _, v in pts], label, **style.sequence_style(i + 2))
        style.log_eps(ax)
        ax.set_ylabel("R" if param == "rows" else "W")
        ax.set_title(title)
    for ax, summary, title in ((axes[2], sums["race_rw_kde_codrna"], "(c) codrna (d = 8)"),
                               (axes[3], load(a.results, "kde_skin_baselines"), "(d) skin (d = 3)")):
        if summary:
            for label in ("RACE", "Synthetic"):
                e, m = best_curve(summary, label)
                if e:
                    style.line(ax, e, m, label, legend="Histogram release" if label == "Synthetic" else "RACE (best grid point)")
            quick |= bool(summary.get("quick"))
        style.log_eps(ax)
        ax.set_ylabel("mean relative error")
        ax.set_title(title)
    legend_order = [label for _, label, *_ in TASKS] + ["RACE (best grid point)", "Histogram release"]
    style.finish(fig, axes, order=lambda label: legend_order.index(label) if label in legend_order else 99, title="Sketch sizes per task; the histogram release by dimension" + (" [quick]" if quick else ""),
                 note="(a), (b): the smallest grid value within 10% of the best mean (1% of the best accuracy), the other "
                      "size chosen best; grid R 10..2000, W 4..1024; the tasks' points are drawn slightly apart in ε. (c), (d): each method at its best grid point per ε.")
    for p in common.save(fig, a.out, "race_rw" + ("-quick" if quick else "")):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
