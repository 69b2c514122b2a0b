#!/usr/bin/env python3
"""M2M paper, Figure 3, Figure 4 and Table 1, from results/m2m_*.jsonl.

Figure 3 (m2m_fig3.png): 5 tasks (mean MRE, 2nd-moment MRE, CDF EMD, covariance Frobenius,
counting-query MAE) x 2 data sets (Random10, the LifeSci stand-in), error against epsilon,
log-log; mean over the repetitions. The same maps without noise (eps = inf) are dotted
horizontal lines in the map's colour. Figure 4 (m2m_logistic.png, the config's figure name): AUC of the logistic regression
against epsilon (implicit M2M from each sketch, DP-ERM best Lambda per epsilon, synthetic-data
methods when present) with the non-private model as a reference line. Table 1 (m2m_table1.txt
beside the results, and printed): MRE of the mean at eps = inf and eps = 1 for RFF and HIST
(and RACE), both data sets, next to the paper's values.

Synthetic-data methods (dp_copula, privbayes, dp_wgan, mst_m2m, aim_m2m) are drawn when their
records exist; the DP-WGAN, MST and AIM legends say (eps, delta)-DP because their guarantee is
weaker than the sketches' eps-DP.

usage: plot_m2m.py [--results DIR] [--out DIR]
"""
import argparse
import math
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError:
    sys.exit("plot_m2m.py needs matplotlib and numpy: run it with /usr/bin/python3 (Debian's python3-matplotlib)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# method (or map for m2m_nonprivate) -> (colour, marker, legend)
STYLE = {
    "m2m_rff": ("tab:blue", "o", "M2M RFF"),
    "m2m_race": ("tab:orange", "s", "M2M RACE"),
    "m2m_hist": ("tab:green", "^", "M2M HIST"),
    "m2m_rff+intercept": ("navy", "o", "M2M RFF + intercept"),
    "m2m_hist+intercept": ("darkgreen", "^", "M2M HIST + intercept"),
    "dp_erm": ("tab:red", "v", "DP-ERM"),
    "dp_copula": ("tab:purple", "D", "DP-Copula"),
    "privbayes": ("tab:brown", "P", "PrivBayes"),
    "privbayes_m2m": ("tab:brown", "P", "PrivBayes"),
    "dp_wgan": ("tab:pink", "X", "DP-WGAN ((eps, 1e-5)-DP)"),
    "mst_m2m": ("tab:olive", "h", "MST ((eps, 1e-9)-DP)"),
    "aim_m2m": ("tab:cyan", "*", "AIM ((eps, 1e-9)-DP)"),
    "logistic_nonprivate": ("black", None, "non-private"),
}
NONPRIVATE_MAP = {"rff": "m2m_rff", "race": "m2m_race", "hist": "m2m_hist"}
TASKS = [("mean_mre", "mean (MRE)"), ("moment2_mre", "2nd moment (MRE)"), ("cdf_emd", "CDF (EMD)"),
         ("cov_frobenius", "covariance (Frobenius)"), ("count_mae", "counting queries (MAE)")]
PAPER_TABLE1 = {"random10": {"rff": (6.25e-8, 9.55e-3), "hist": (1.87e-5, 9.10e-4)},
                "lifesci": {"rff": (1.67e-6, 4.20e-2), "hist": (5.91e-5, 3.8e-3)}}


def style_key(r):
    if r["method"] == "m2m_nonprivate":
        return NONPRIVATE_MAP.get(r["params"].get("map"), "m2m_rff")
    if r["params"].get("intercept"):  # the improved estimator on the same release
        return r["method"] + "+intercept"
    return r["method"]


def series(records, metric):
    """{(style key, label, private?): {eps or None: [values]}}, best Lambda per eps for dp_erm."""
    by = {}
    for r in records:
        v = (r.get("metrics") or {}).get(metric)
        if v is None or not math.isfinite(v):
            continue
        key = (style_key(r), r["label"], r.get("epsilon") is not None)
        by.setdefault(key, {}).setdefault((r.get("epsilon"), str(sorted(r["params"].items()))), []).append(v)
    out = {}
    for key, cells in by.items():
        best = {}
        for (eps, _), values in cells.items():
            mean = float(np.mean(values))
            better = metric == "auc" and (eps not in best or mean > best[eps][0])
            if eps not in best or better:
                best[eps] = (mean, values)
        out[key] = {eps: vals for eps, (_, vals) in best.items()}
    return out


def data_name(records):
    d = records[0].get("data", {})
    return d.get("name", records[0].get("dataset", "?")), d.get("note", "")


def draw(ax, records, metric, logy=True):
    for (skey, label, private), cells in sorted(series(records, metric).items(), key=lambda t: t[0][1]):
        colour, marker, legend = STYLE.get(skey, ("gray", "x", label))
        if not private:
            v = float(np.mean(cells[None]))
            ax.axhline(v, color=colour, linestyle=":", linewidth=1.2, label=(legend + " eps=inf") if skey != "logistic_nonprivate" else legend)
            continue
        eps = sorted(cells)
        mean = [float(np.mean(cells[e])) for e in eps]
        name = legend if skey in STYLE else label
        ax.plot(eps, mean, color=colour, marker=marker, label=name)
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("epsilon")


def table1(sets):
    """Mean MRE of the mean per estimator: the paper's (eq. 5, labels RFF / HIST / RACE) and,
    where run, the intercept with the noise-matched lambda (labels "... + intercept"). Records
    are told apart by label: one method name serves both estimators."""
    lines = ["Table 1 (M2M paper): MRE of the mean estimated by M2M, mean over repetitions (n = repetitions)",
             f"{'data set':<34} {'budget':<10} {'RFF':>10} {'HIST':>10} {'RACE':>10} {'RFF+int':>10} {'HIST+int':>10}"
             f" {'paper RFF':>10} {'paper HIST':>10} {'n':>4}"]
    table = {}
    columns = (("rff", "RFF"), ("hist", "HIST"), ("race", "RACE"), ("rff_intercept", "RFF + intercept"),
               ("hist_intercept", "HIST + intercept"))
    for name in ("m2m_random10", "m2m_lifesci"):
        if name not in sets:
            continue
        records, quick = sets[name]
        dname, note = data_name(records)
        paper = PAPER_TABLE1["random10" if "random" in name else "lifesci"]
        for budget in ("inf", "1"):
            row, counts = {}, []
            for key, label in columns:
                if budget == "inf":
                    want = label + " (eps=inf)"
                    vals = [r["metrics"]["mean_mre"] for r in records
                            if r.get("label") == want and r["metrics"].get("mean_mre") is not None]
                else:
                    vals = [r["metrics"]["mean_mre"] for r in records
                            if r.get("label") == label and r["metrics"].get("mean_mre") is not None
                            and r.get("epsilon") is not None and abs(r["epsilon"] - 1) < 1e-12]
                row[key] = float(np.mean(vals)) if vals else None
                if vals:
                    counts.append(len(vals))
            p = paper["rff"][0 if budget == "inf" else 1], paper["hist"][0 if budget == "inf" else 1]
            table[f"{dname} eps={budget}"] = row
            fmt = lambda v: f"{v:10.3e}" if v is not None else f"{'-':>10}"  # noqa: E731
            label = dname + (" (LifeSci stand-in)" if "lifesci" in name else "") + (" [quick]" if quick else "")
            n = f"{min(counts)}" if counts and min(counts) == max(counts) else (f"{min(counts)}-{max(counts)}" if counts else "-")
            lines.append(f"{label:<34} {'eps=' + budget:<10} {fmt(row['rff'])} {fmt(row['hist'])} {fmt(row['race'])} "
                         f"{fmt(row['rff_intercept'])} {fmt(row['hist_intercept'])} {fmt(p[0])} {fmt(p[1])} {n:>4}")
    return "\n".join(lines) + "\n", table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(common.REPO, "results"))
    ap.add_argument("--out", default=os.path.join(common.REPO, "plots"))
    args = ap.parse_args()
    sets = common.result_sets(args.results, "m2m")
    if not sets:
        print("plot_m2m.py: no m2m results in", args.results)
        return
    common.style()
    stats = [n for n in ("m2m_random10", "m2m_lifesci") if n in sets]
    if stats:
        fig, axes = plt.subplots(len(stats), len(TASKS), figsize=(3.2 * len(TASKS), 2.9 * len(stats)), squeeze=False)
        notes = []
        for row, name in enumerate(stats):
            records, quick = sets[name]
            records = common.dedupe(records)
            dname, note = data_name(records)
            if "lifesci" in name:
                dname += " (LifeSci stand-in)"
            for col, (metric, title) in enumerate(TASKS):
                ax = axes[row][col]
                draw(ax, records, metric)
                ax.set_title(f"{dname}\n{title}" + common.title_suffix(records), fontsize=8)
                if col == 0:
                    ax.set_ylabel(dname.split(" ")[0] + " error")
            if note:
                notes.append(f"{dname}: {note}")
        handles, labels = axes[0][0].get_legend_handles_labels()
        # Legend and notes take a fixed height, so a larger share of a one-row figure.
        share = 0.13 * 2 / len(stats)
        fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8,
                   bbox_to_anchor=(0.5, 0.045 * 2 / len(stats)))
        # The data notes under the legend (on an axes they squeeze the panels).
        fig.text(0.01, 0.0, "\n".join(notes), fontsize=7, ha="left", va="bottom")
        fig.tight_layout(rect=(0, share, 1, 1))
        print("wrote", *common.save(fig, args.out, "m2m_fig3"))
        text, table = table1(sets)
        print(text, end="")
        with open(os.path.join(args.results, "m2m_table1.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    if "m2m_logistic_occupancy" in sets:
        records, quick = sets["m2m_logistic_occupancy"]
        records = common.dedupe(records)
        fig, ax = plt.subplots(figsize=(5, 3.6))
        draw(ax, records, "auc", logy=False)
        ax.set_ylabel("AUC (held-out 10%)")
        ax.set_title("Occupancy: logistic regression" + common.title_suffix(records))
        ax.legend(fontsize=7)
        print("wrote", *common.save(fig, args.out, "m2m_logistic"))


if __name__ == "__main__":
    main()
