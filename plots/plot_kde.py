#!/usr/bin/env python3
"""KDE figures (private-race Figure 2 / CCS'21 Figure 3 style): error vs epsilon, log-log,
one line per method (best grid point at each epsilon), shaded band = min..max over repetitions.
RACE appears twice: "RACE (best R over grid)" (the paper's selection) and "RACE (R by Corollary 1)"
(R = ceil(N eps / sqrt 2), capped; dashed), so the cost of tuning R is visible.

usage: plot_kde.py [--results DIR] [--out DIR] [--quick]   (defaults: <repo>/results, <repo>/plots)
A full run's results win over the same config's -quick ones; --quick plots only the -quick
results, as FIGURE-quick.png/pdf (so the full figures are not overwritten).
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import style  # noqa: E402
import numpy as np  # noqa: E402

LABELS = {"mre": "Relative Error", "mre_debiased": "Relative Error (debiased)",
          "l2_error": "L2 Function Error", "l2_error_debiased": "L2 Function Error (debiased)"}


def plot_config(name, records, out_dir, suffix=""):
    metric = records[0].get("primary_metric", "mre")
    data = records[0].get("data", {})
    series = common.best_over_grid(records, metric)
    fig, (ax,) = style.panels(1, panel=(4.2, 3.3))
    for label, points in sorted(series.items(), key=lambda kv: style.legend_rank(common.display(kv[0]))):
        eps = np.array([p[0] for p in points if p[0] is not None], dtype=float)
        vals = [p[1] for p in points if p[0] is not None]
        if len(eps) == 0:  # a non-private reference: a horizontal line
            style.hline(ax, np.mean(points[0][1]), common.display(label))
            continue
        mean = np.array([np.mean(v) for v in vals])
        lo = np.array([np.min(v) for v in vals])
        hi = np.array([np.max(v) for v in vals])
        style.line(ax, eps, mean, common.display(label), band=(lo, hi))
    style.log_eps(ax)
    ax.set_ylabel(LABELS.get(metric, metric))
    n = data.get("train_rows", data.get("rows"))
    pca = data.get("pca") or {}
    dim = f"{data.get('dim')} PCs of {pca['input_dim']}" if pca.get("input_dim") else data.get("dim")
    shape = f" (d = {dim}, N = {n / 1000:.0f}k)" if n else ""
    ax.set_title(f"{data.get('name', name)}{shape}{common.title_suffix(records, substitute_sep=chr(10))}")
    style.finish(fig, [ax], note="Line: mean over repetitions at the best grid point per ε; band: min-max.")
    figure = records[0].get("figure", name)
    return common.save(fig, out_dir, figure + suffix)


def plot_rw_sweep(name, records, out_dir, suffix=""):
    """The R x W sweep (kde_skin_rw): one panel per width W, one line per R, MRE against eps,
    for "any R and W in [100, 1k] give good results" (private RACE, Discussion)."""
    metric = records[0].get("primary_metric", "mre")
    by = {}
    for r in records:
        p = r.get("params", {})
        if r.get("epsilon") is None or metric not in r.get("metrics", {}):
            continue
        by.setdefault((p.get("width"), p.get("rows")), {}).setdefault(r["epsilon"], []).append(r["metrics"][metric])
    widths = sorted({w for w, _ in by})
    rows = sorted({R for _, R in by})
    fig, axes = style.panels(len(widths), sharey=True)
    for ax, w in zip(axes, widths):
        for i, R in enumerate(rows):
            pts = sorted(by.get((w, R), {}).items())
            if not pts:
                continue
            eps = np.array([e for e, _ in pts])
            mean = np.array([np.mean(v) for _, v in pts])
            style.line(ax, eps, mean, f"R = {R}", **style.sequence_style(i))
        ax.set_title(f"W = {w}")
        style.log_eps(ax)
        ax.set_ylabel(LABELS.get(metric, metric))
    style.finish(fig, axes, title="RACE on skin: every (R, W) in [100, 1000]" + (" [quick]" if suffix else ""),
                 note="Mean over repetitions; one panel per width W, one line per number of rows R.",
                 order=lambda label: int(label.split("=")[1]))
    return common.save(fig, out_dir, name + suffix)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(common.REPO, "results"))
    ap.add_argument("--out", default=os.path.join(common.REPO, "plots"))
    ap.add_argument("--quick", action="store_true", help="plot the -quick results only (FIGURE-quick.png)")
    args = ap.parse_args()
    common.style()
    sets = common.result_sets(args.results, "kde")
    if args.quick:
        sets = {}
        for path in sorted(glob.glob(os.path.join(args.results, "*-quick.jsonl"))):
            records = [r for r in common.read_jsonl(path) if r.get("task") == "kde"]
            if records:
                sets[records[0]["config"]] = (records, True)
    if not sets:
        print(f"plot_kde: no KDE results in {args.results}", file=sys.stderr)
        return 0
    for name, (records, _quick) in sorted(sets.items()):
        if name.startswith("race_rw_"):  # the size sweeps: plots/plot_race_rw.py
            continue
        draw = plot_rw_sweep if name == "kde_skin_rw" else plot_config
        for p in draw(name, records, args.out, "-quick" if args.quick else ""):
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
