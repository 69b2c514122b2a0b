#!/usr/bin/env python3
"""The private RACE paper's section-4 applications against epsilon, from results/*.jsonl:

  modes.png      mode finding: distance of the found modes to the nearest true mode (in
                 bandwidths) and the share of true modes recovered (configs modes, modes_skin)
  anomaly.png    ROC AUC of -density against labelled anomalies (anomaly, anomaly_pulsar,
                 anomaly_covtype)
  diversity.png  share of mixture components hit by k inverse-density draws vs uniform draws
  neighbors.png  recall@k of the sketch-based candidate rankings against exact neighbours

Private methods: the best grid point per epsilon (mean +- sd over repetitions). Methods without
epsilon (exact KDE, RACE on exact counts, uniform) are horizontal lines. Panels say when the data
is a substitute (the covtype 10k sample) or generated, and when the run was --quick.

usage: plot_race_apps.py [--results DIR] [--out DIR]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_over_grid, plt, result_sets, save, style, substitute_label  # noqa: E402

import numpy as np  # noqa: E402

COLORS = {"RACE": "tab:blue", "Histogram": "tab:green", "Exact KDE": "black", "RACE (eps=inf)": "tab:purple",
          "Uniform": "tab:red"}


def data_note(records):
    d = records[0].get("data") or records[0].get("data_summary") or {}
    name = d.get("name", records[0].get("dataset", "?"))
    note = name
    if d.get("generated"):
        note = "generated mixture"
    if substitute_label(records):
        note += f" ({substitute_label(records)})"
    elif name == "covtype":  # records written before the registry's substitute notes
        note += " (10k SAMPLE, not the 581k set)"
    if any(r.get("stand_in") for r in records):
        note += " (SYNTHETIC STAND-IN)"
    if any(r.get("quick") for r in records):
        note += " [quick]"
    return note


def draw(ax, records, metric, lower_is_better, ylabel, private_labels=("RACE", "Histogram")):
    curves = best_over_grid(records, metric, lower_is_better)
    for label, pts in curves.items():
        color = COLORS.get(label)
        if all(p[0] is None for p in pts):
            vals = [v for p in pts for v in p[1]]
            if vals:
                ax.axhline(float(np.mean(vals)), color=color or "gray", linestyle="--", label=label)
            continue
        e = [p[0] for p in pts if p[0] is not None]
        m = [float(np.mean(p[1])) for p in pts if p[0] is not None]
        s = [float(np.std(p[1])) for p in pts if p[0] is not None]
        ax.plot(e, m, marker="o", color=color, label=label + (" (best grid point)" if label in private_labels else ""))
        ax.fill_between(e, [a - b for a, b in zip(m, s)], [a + b for a, b in zip(m, s)], color=color, alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\epsilon$")
    ax.set_ylabel(ylabel)


def figure(sets, names, rows, out_dir, fig_name, suptitle):
    found = [n for n in names if n in sets]
    if not found:
        print(f"plot_race_apps.py: no results for {', '.join(names)}; {fig_name} skipped", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(rows), len(found), figsize=(4.4 * len(found), 3.3 * len(rows)), squeeze=False)
    for j, name in enumerate(found):
        records, _ = sets[name]
        for i, (metric, lower, ylabel) in enumerate(rows):
            ax = axes[i][j]
            draw(ax, records, metric, lower, ylabel)
            if i == 0:
                ax.set_title(f"{name}: {data_note(records)}", fontsize=9)
        axes[0][j].legend(fontsize=7)
    fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    for p in save(fig, out_dir, fig_name):
        print(p)


def neighbors_figure(sets, out_dir):
    if "neighbors" not in sets:
        print("plot_race_apps.py: no neighbors results; neighbors skipped", file=sys.stderr)
        return
    records, _ = sets["neighbors"]
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    metrics = [("recall_weighted", "private counts x collisions", "tab:blue"),
               ("recall_collisions", "collisions only (public hashes, not private)", "tab:orange"),
               ("recall_density", "private density at the candidate", "tab:green"),
               ("recall_random", "random top-k", "gray")]
    private = [r for r in records if r.get("epsilon") is not None]
    ref = [r for r in records if r.get("epsilon") is None]
    for metric, name, color in metrics:
        curves = best_over_grid(private, metric, lower_is_better=False)
        for label, pts in curves.items():
            e = [p[0] for p in pts]
            m = [float(np.mean(p[1])) for p in pts]
            ax.plot(e, m, marker="o", color=color, label=f"{name}")
        vals = [r["metrics"].get(metric) for r in ref]
        vals = [v for v in vals if v is not None and math.isfinite(v)]
        if vals:
            ax.axhline(float(np.mean(vals)), color=color, linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.2)
    ax.set_xlabel(r"$\epsilon$")
    ax.set_ylabel("recall@k")
    ax.set_title(f"Near-neighbour search from the sketch: {data_note(records)}\n(dashed: RACE on exact counts)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    for p in save(fig, out_dir, "neighbors"):
        print(p)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "..", "results"))
    ap.add_argument("--out", default=here)
    a = ap.parse_args()
    style()
    sets = {}
    for task in ("modes", "anomaly", "diversity", "neighbors"):
        sets.update(result_sets(a.results, task))
    figure(sets, ["modes", "modes_skin"],
           [("mean_distance_bw", True, "distance to nearest true mode (bandwidths)"),
            ("recovered_fraction", False, "true modes recovered")],
           a.out, "modes", "Mode finding from the private KDE (NLopt Subplex, multi-start)")
    figure(sets, ["anomaly", "anomaly_pulsar", "anomaly_covtype"], [("auc", False, "ROC AUC")], a.out, "anomaly",
           "Anomaly detection by low private density")
    figure(sets, ["diversity"], [("coverage", False, "components hit in k draws"),
                                 ("minor_share", False, "share of draws outside the largest component")],
           a.out, "diversity", "Diversity sampling: P ~ 1 / private density")
    neighbors_figure(sets, a.out)


if __name__ == "__main__":
    main()
