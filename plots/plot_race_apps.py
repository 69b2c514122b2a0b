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
from common import best_over_grid, result_sets, save, style, substitute_label  # noqa: E402
import style as fig_style  # noqa: E402  (the shared figure style)

import numpy as np  # noqa: E402

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


def draw(ax, records, metric, lower_is_better, ylabel):
    curves = best_over_grid(records, metric, lower_is_better)
    for label, pts in sorted(curves.items(), key=lambda kv: fig_style.legend_rank(kv[0])):
        if all(p[0] is None for p in pts):
            vals = [v for p in pts for v in p[1]]
            if vals:
                fig_style.hline(ax, float(np.mean(vals)), label)
            continue
        e = [p[0] for p in pts if p[0] is not None]
        m = [float(np.mean(p[1])) for p in pts if p[0] is not None]
        s = [float(np.std(p[1])) for p in pts if p[0] is not None]
        fig_style.line(ax, e, m, label, band=([a - b for a, b in zip(m, s)], [a + b for a, b in zip(m, s)]))
    fig_style.log_eps(ax, logy=False)
    ax.set_ylabel(ylabel)


def figure(sets, names, rows, out_dir, fig_name, suptitle):
    """One panel per (config, metric): configs across, metrics down (at most 4 panels a row)."""
    found = [n for n in names if n in sets]
    if not found:
        print(f"plot_race_apps.py: no results for {', '.join(names)}; {fig_name} skipped", file=sys.stderr)
        return
    cells = [(name, row) for row in rows for name in found]
    fig, axes = fig_style.panels(len(cells), ncols=min(len(found), fig_style.MAX_COLS) if len(found) > 1 else None)
    for ax, (name, (metric, lower, ylabel)) in zip(axes, cells):
        records, _ = sets[name]
        draw(ax, records, metric, lower, ylabel)
        ax.set_title(f"{name}: {data_note(records)}")
    fig_style.finish(fig, axes, title=suptitle,
                     note="Private methods: mean ± one standard deviation over repetitions at the best grid point per ε; "
                          "horizontal lines: methods without ε.")
    for p in save(fig, out_dir, fig_name):
        print(p)


def neighbors_figure(sets, out_dir):
    if "neighbors" not in sets:
        print("plot_race_apps.py: no neighbors results; neighbors skipped", file=sys.stderr)
        return
    records, _ = sets["neighbors"]
    fig, (ax,) = fig_style.panels(1, panel=(4.2, 3.3))
    metrics = [("recall_weighted", "private counts x collisions"),
               ("recall_collisions", "collisions only (public hashes, not private)"),
               ("recall_density", "private density at the candidate"),
               ("recall_random", "random top-k")]
    private = [r for r in records if r.get("epsilon") is not None]
    ref = [r for r in records if r.get("epsilon") is None]
    for i, (metric, name) in enumerate(metrics):
        st = fig_style.sequence_style(i) if metric != "recall_random" else {"color": "gray", "marker": "x", "linestyle": "-"}
        curves = best_over_grid(private, metric, lower_is_better=False)
        for label, pts in curves.items():
            e = [p[0] for p in pts]
            m = [float(np.mean(p[1])) for p in pts]
            ax.plot(e, m, label=name, **st)
        vals = [r["metrics"].get(metric) for r in ref]
        vals = [v for v in vals if v is not None and math.isfinite(v)]
        if vals:
            ax.axhline(float(np.mean(vals)), color=st["color"], linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.2)
    ax.set_xlabel(fig_style.EPS_LABEL)
    ax.set_ylabel("recall@k")
    ax.set_title(f"Near-neighbour search from the sketch:\n{data_note(records)}")
    fig_style.finish(fig, [ax], where="right", order=None,
                     note="Candidate rankings from the private sketch, best grid point per ε; dashed: the same "
                          "ranking on RACE's exact counts (no noise).")
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
           [("mean_distance_bw", True, "distance to nearest\ntrue mode (bandwidths)"),
            ("recovered_fraction", False, "true modes recovered")],
           a.out, "modes", "Mode finding from the private KDE (NLopt Subplex, multi-start)")
    figure(sets, ["anomaly", "anomaly_pulsar", "anomaly_covtype"], [("auc", False, "ROC AUC")], a.out, "anomaly",
           "Anomaly detection by low private density")
    figure(sets, ["diversity"], [("coverage", False, "components hit in k draws"),
                                 ("minor_share", False, "share of draws outside\nthe largest component")],
           a.out, "diversity", "Diversity sampling: P ~ 1 / private density")
    neighbors_figure(sets, a.out)


if __name__ == "__main__":
    main()
