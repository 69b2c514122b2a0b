#!/usr/bin/env python3
"""M2M paper, Figure 3, Figure 4 and Table 1, from results/m2m_*.jsonl.

Figure 3, one figure per data set (m2m_fig3_random10.png: the paper's top row,
m2m_fig3_lifesci.png: its bottom row, on the LifeSci stand-in): 5 panels, one per task (mean
MRE, 2nd-moment MRE, CDF EMD, covariance Frobenius, counting-query MAE), error against epsilon,
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
    import numpy as np
except ImportError:
    sys.exit("plot_m2m.py needs matplotlib and numpy: run it with /usr/bin/python3 (Debian's python3-matplotlib)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import style  # noqa: E402

# method (or map for m2m_nonprivate) -> legend name; its colour and marker are style.METHODS'
LEGEND = {
    "m2m_rff": "M2M RFF",
    "m2m_race": "M2M RACE",
    "m2m_hist": "M2M HIST",
    "m2m_rff+intercept": "M2M RFF + intercept",
    "m2m_hist+intercept": "M2M HIST + intercept",
    "dp_erm": "DP-ERM",
    "dp_copula": "DP-Copula",
    "privbayes": "PrivBayes",
    "privbayes_m2m": "PrivBayes",
    "dp_wgan": "DP-WGAN ((eps, 1e-5)-DP)",
    "mst_m2m": "MST ((eps, 1e-9)-DP)",
    "aim_m2m": "AIM ((eps, 1e-9)-DP)",
    "logistic_nonprivate": "Non-private",
}
# Legend order of the M2M figures: the sketches, their eps = inf lines, then the other methods.
ORDER = ["M2M RFF", "M2M RACE", "M2M HIST", "M2M RFF + intercept", "M2M HIST + intercept", "M2M RFF eps=inf",
         "M2M RACE eps=inf", "M2M HIST eps=inf", "DP-ERM", "DP-Copula", "PrivBayes", "DP-WGAN ((eps, 1e-5)-DP)",
         "MST ((eps, 1e-9)-DP)", "AIM ((eps, 1e-9)-DP)", "Non-private"]


def legend_order(label):
    return (ORDER.index(label), "") if label in ORDER else (len(ORDER), label)


NONPRIVATE_MAP = {"rff": "m2m_rff", "race": "m2m_race", "hist": "m2m_hist"}
TASKS = [("mean_mre", "mean", "MRE"), ("moment2_mre", "2nd moment", "MRE"), ("cdf_emd", "CDF", "EMD"),
         ("cov_frobenius", "covariance", "Frobenius distance"), ("count_mae", "counting queries", "MAE")]
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
    for (skey, label, private), cells in sorted(series(records, metric).items(),
                                               key=lambda t: style.legend_rank(LEGEND.get(t[0][0], t[0][1]))):
        legend = LEGEND.get(skey, label)
        if not private:
            v = float(np.mean(cells[None]))
            if skey == "logistic_nonprivate":
                style.hline(ax, v, legend)
            else:  # the same map without noise: dotted, in the map's colour
                style.hline(ax, v, legend + " eps=inf")
            continue
        eps = sorted(cells)
        mean = [float(np.mean(cells[e])) for e in eps]
        style.line(ax, eps, mean, legend)
    style.log_eps(ax, logy=logy)


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
    for name in ("m2m_random10", "m2m_lifesci"):
        if name not in sets:
            continue
        records, quick = sets[name]
        records = common.dedupe(records)
        dname, note = data_name(records)
        if "lifesci" in name:
            dname += " (LifeSci stand-in)"
        fig, axes = style.panels(len(TASKS))
        for ax, (metric, title, ylabel) in zip(axes, TASKS):
            draw(ax, records, metric)
            ax.set_title(title)
            ax.set_ylabel(ylabel)
        notes = ["Mean over repetitions; dotted horizontal lines: the same map without noise (eps = inf)."]
        if note:
            notes.append(f"{dname}: {note}")
        style.finish(fig, axes, title=f"M2M Figure 3: {dname}{common.title_suffix(records)}", note="\n".join(notes),
                     order=legend_order)
        print("wrote", *common.save(fig, args.out, "m2m_fig3_" + name.split("_", 1)[1]))
    if any(n in sets for n in ("m2m_random10", "m2m_lifesci")):
        text, table = table1(sets)
        print(text, end="")
        with open(os.path.join(args.results, "m2m_table1.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    if "m2m_logistic_occupancy" in sets:
        records, quick = sets["m2m_logistic_occupancy"]
        records = common.dedupe(records)
        fig, (ax,) = style.panels(1, panel=(4.2, 3.3))
        draw(ax, records, "auc", logy=False)
        ax.set_ylabel("AUC (held-out 10%)")
        ax.set_title("Occupancy: logistic regression" + common.title_suffix(records))
        style.finish(fig, [ax], order=legend_order, note="Mean over repetitions; DP-ERM at its best regularisation per ε.")
        print("wrote", *common.save(fig, args.out, "m2m_logistic"))


if __name__ == "__main__":
    main()
