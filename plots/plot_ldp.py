#!/usr/bin/env python3
"""Local-DP ERM (Wang, Gaboardi & Xu 2018): excess empirical risk vs the number of simulated
players n (log-log), one panel per epsilon, one row per dimension p, one figure per config and
player source (generated / real), from results/ldp_erm_*.jsonl (a full run wins over --quick).

Curves: mean over repetitions (error bars: sd) of Algorithm 2 (ldp_bernstein), Algorithm 3
(ldp_bernstein_1bit), input perturbation and the interactive LDP-SGD; the non-private optimum
has excess risk 0 and is not drawn. Next to the measured Bernstein curve, a dashed line of the
paper's slope: Theorem 3 with h = p gives excess risk ~ (eps sqrt n)^(-h/(h+p)), i.e. slope
-h/(2(h+p)) = -1/4 in n; the legend gives the least-squares slope measured over the points.
Values below 1e-7 (exact hits of the optimum on the box boundary) are drawn at 1e-7.

Also results/ldp_marginals*.jsonl (Section 6): max |error| over all k-way conjunctions against
d, one panel per (k, epsilon), one figure per player source.

And results/ldp_highdim*.jsonl (Section 7): excess empirical risk against the Gaussian width of
the constraint set (L1 ball: filled markers, simplex: open markers, radius r scales the width),
one panel per (players, epsilon), one curve per projection dimension m of Algorithm 7 and one
for full-dimension LDP-SGD, with the excess risk of predicting 0 in gray.

And results/ldp_smooth*.jsonl (Section 6.2): max |error| over the Gaussian-kernel query family
against n per source and epsilon (trigonometric Algorithm 5 per degree t, per-query LDP
averaging), and the error per bandwidth at the largest n with the polynomial's approximation
error dotted.

usage: plot_ldp.py [--results DIR] [--out-dir DIR]
"""
import argparse
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STYLE = {
    "ldp_bernstein": ("tab:blue", "o", "-", "Bernstein (Alg. 2)"),
    "ldp_bernstein_1bit": ("tab:orange", "s", "-", "Bernstein 1-bit (Alg. 3)"),
    "ldp_input_perturbation": ("tab:green", "^", "-.", "Input perturbation"),
    "ldp_sgd": ("tab:red", "v", ":", "LDP-SGD (DJW, interactive)"),
}
FLOOR = 1e-7


def slope(ns, ys):
    xs = [math.log(n) for n in ns]
    ls = [math.log(max(y, FLOOR)) for y in ys]
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ls) / len(ls)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ls)) / den if den else float("nan")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "..", "results"))
    ap.add_argument("--out-dir", default=here)
    a = ap.parse_args()
    common.style()
    plot_marginals(a.results, a.out_dir)
    plot_highdim(a.results, a.out_dir)
    plot_smooth(a.results, a.out_dir)
    sets = common.result_sets(a.results, "ldp_erm")
    if not sets:
        print("plot_ldp.py: no ldp_erm results in " + a.results + "; nothing to plot", file=sys.stderr)
        return
    plt = common.plt
    for name, (records, quick) in sorted(sets.items()):
        records = common.dedupe(records)
        # (source, p, eps, method) -> n -> [excess risk]
        cells = defaultdict(lambda: defaultdict(list))
        for r in records:
            v = r.get("metrics", {}).get("excess_risk")
            if v is None or r["method"] not in STYLE:
                continue
            pr = r["params"]
            cells[(pr["source"], pr["p"], r["epsilon"], r["method"])][pr["players"]].append(v)
        for source in sorted({k[0] for k in cells}):
            ps = sorted({k[1] for k in cells if k[0] == source})
            epss = sorted({k[2] for k in cells if k[0] == source})
            fig, axes = plt.subplots(len(ps), len(epss), figsize=(3.6 * len(epss), 2.9 * len(ps)), squeeze=False,
                                     sharex=True)
            for i, p in enumerate(ps):
                for j, eps in enumerate(epss):
                    ax = axes[i][j]
                    for method, (color, marker, ls, label) in STYLE.items():
                        by_n = cells.get((source, p, eps, method))
                        if not by_n:
                            continue
                        ns = sorted(by_n)
                        means = [sum(by_n[n]) / len(by_n[n]) for n in ns]
                        sds = [(sum((v - m) ** 2 for v in by_n[n]) / max(1, len(by_n[n]) - 1)) ** 0.5
                               for n, m in zip(ns, means)]
                        s = slope(ns, means)
                        ax.errorbar(ns, [max(m, FLOOR) for m in means], yerr=sds, color=color, marker=marker, ls=ls,
                                    ms=4, lw=1.2, capsize=2, label=f"{label} (slope {s:.2f})")
                        print(f"{name} {source} p={p} eps={eps} {method}: measured slope {s:.3f} "
                              + " ".join(f"{n}:{m:.2e}" for n, m in zip(ns, means)))
                        if method == "ldp_bernstein" and means:
                            h = p  # Corollary 1
                            paper = -h / (2.0 * (h + p))
                            y0 = max(means[0], FLOOR)
                            ax.plot(ns, [y0 * (n / ns[0]) ** paper for n in ns], color="gray", ls="--", lw=1,
                                    label=f"paper's rate for Alg. 2 (slope {paper:.2f})")
                    ax.set_xscale("log")
                    ax.set_yscale("log")
                    ax.set_title(f"p = {p}, eps = {eps:g}", fontsize=9)
                    if i == len(ps) - 1:
                        ax.set_xlabel("players n")
                    if j == 0:
                        ax.set_ylabel("excess empirical risk")
                    ax.legend(fontsize=6, loc="lower left")
            data = records[0].get("data", {}) if records else {}
            src = "generated players" if source == "generated" else f"{data.get('name', 'real')} rows"
            stand_in = " (STAND-IN data)" if source == "real" and data.get("stand_in") else ""
            if source == "real" and not stand_in and data.get("substitute"):
                stand_in = f" ({common.substitute_label([{'data': data}])})"
            fig.suptitle(f"{name}{' (quick)' if quick else ''}: {src}{stand_in}", fontsize=10)
            fig.tight_layout()
            common.save(fig, a.out_dir, f"{name}_{source}")


MARGINAL_STYLE = {
    "Chebyshev (Alg. 4, t = k)": ("tab:blue", "o", "-"),
    "Chebyshev (Alg. 4, t = 2)": ("tab:cyan", "s", "--"),
    "Per-query RR": ("tab:red", "v", ":"),
    "Central histogram": ("black", "D", "-."),
}


def plot_marginals(results, out_dir):
    plt = common.plt
    for name, (records, quick) in sorted(common.result_sets(results, "ldp_marginals").items()):
        records = common.dedupe(records)
        cells = defaultdict(lambda: defaultdict(list))  # (source, k, eps, label) -> d -> [max err]
        for r in records:
            v = r.get("metrics", {}).get("max_abs_error")
            if v is None:
                continue
            pr = r["params"]
            cells[(pr["source"], pr["k"], r["epsilon"], r["label"])][pr["d"]].append(v)
        for source in sorted({c[0] for c in cells}):
            ks = sorted({c[1] for c in cells if c[0] == source})
            epss = sorted({c[2] for c in cells if c[0] == source})
            fig, axes = plt.subplots(len(ks), len(epss), figsize=(3.4 * len(epss), 2.8 * len(ks)), squeeze=False)
            for i, k in enumerate(ks):
                for j, eps in enumerate(epss):
                    ax = axes[i][j]
                    for label, (color, marker, ls) in MARGINAL_STYLE.items():
                        by_d = cells.get((source, k, eps, label))
                        if not by_d:
                            continue
                        ds = sorted(by_d)
                        means = [sum(by_d[d]) / len(by_d[d]) for d in ds]
                        ax.plot(ds, [max(m, FLOOR) for m in means], color=color, marker=marker, ls=ls, label=label)
                        print(f"{name} {source} k={k} eps={eps} {label}: " + " ".join(f"d={d}:{m:.3e}" for d, m in zip(ds, means)))
                    ax.set_yscale("log")
                    ax.set_title(f"k = {k}, eps = {eps:g}", fontsize=9)
                    ax.set_xlabel("attributes d")
                    if j == 0:
                        ax.set_ylabel("max |error| over k-way marginals")
                    ax.legend(fontsize=6)
            fig.suptitle(f"{name}{' (quick)' if quick else ''}: {source} players", fontsize=10)
            fig.tight_layout()
            common.save(fig, out_dir, f"{name}_{source}")


def plot_highdim(results, out_dir):
    plt = common.plt
    for name, (records, quick) in sorted(common.result_sets(results, "ldp_highdim").items()):
        records = common.dedupe(records)
        # (players, eps) -> (set, curve) -> width -> [excess risk]; zero predictor per (players, set, width)
        cells = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
        zero = defaultdict(dict)
        for r in records:
            mt = r.get("metrics", {})
            v, width = mt.get("excess_risk"), mt.get("gaussian_width")
            if v is None or width is None:
                continue
            pr = r["params"]
            curve = f"compressed m = {pr['m']}" if "m" in pr else "LDP-SGD, full d"
            cells[(pr["players"], r["epsilon"])][(pr["set"], curve)][width].append(v)
            if mt.get("zero_excess_risk") is not None:
                zero[(pr["players"], pr["set"])][width] = mt["zero_excess_risk"]
        panels = sorted(cells)
        if not panels:
            continue
        ns = sorted({p[0] for p in panels})
        epss = sorted({p[1] for p in panels})
        fig, axes = plt.subplots(len(ns), len(epss), figsize=(3.8 * len(epss), 3.1 * len(ns)), squeeze=False)
        curves = sorted({c[1] for p in cells.values() for c in p})
        colors = dict(zip(curves, ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:red"]))
        for i, n in enumerate(ns):
            for j, eps in enumerate(epss):
                ax = axes[i][j]
                for (cset, curve), by_w in sorted(cells.get((n, eps), {}).items()):
                    ws = sorted(by_w)
                    means = [sum(by_w[w]) / len(by_w[w]) for w in ws]
                    marker, ls = ("o", "-") if cset == "l1_ball" else ("s", "--")
                    ax.plot(ws, [max(m, FLOOR) for m in means], marker=marker, ls=ls, color=colors[curve],
                            mfc=colors[curve] if cset == "l1_ball" else "none", label=f"{curve}, {cset.replace('_', ' ')}")
                    print(f"{name} n={n} eps={eps:g} {cset} {curve}: " + " ".join(f"w={w:.2f}:{m:.3e}" for w, m in zip(ws, means)))
                for cset, ls in (("l1_ball", "-"), ("simplex", "--")):
                    z = zero.get((n, cset))
                    if z:
                        ws = sorted(z)
                        ax.plot(ws, [max(z[w], FLOOR) for w in ws], color="gray", ls=ls, lw=1,
                                label=f"predict 0, {cset.replace('_', ' ')}")
                ax.set_yscale("log")
                ax.set_title(f"n = {n:,}, eps = {eps:g}", fontsize=9)
                if i == len(ns) - 1:
                    ax.set_xlabel("Gaussian width of C (r w(B))")
                if j == 0:
                    ax.set_ylabel("excess empirical risk")
                ax.legend(fontsize=5)
        fig.suptitle(f"{name}{' (quick)' if quick else ''}: sparse regression, d = 1000, error against the Gaussian width "
                     "(Section 7)", fontsize=10)
        fig.tight_layout()
        common.save(fig, out_dir, name)


SMOOTH_STYLE = {"Trigonometric (Alg. 5, 1 bit)": "-", "Trigonometric (Alg. 5, Laplace)": "-.", "Per-query LDP average": ":"}


def plot_smooth(results, out_dir):
    """Section 6.2: max |error| over the kernel-query family against n (one panel per source and
    epsilon), and the error per bandwidth at the largest n next to the polynomial's approximation error."""
    plt = common.plt
    for name, (records, quick) in sorted(common.result_sets(results, "ldp_smooth").items()):
        records = common.dedupe(records)
        cells = defaultdict(lambda: defaultdict(list))  # (source, eps, curve) -> n -> [max err]
        by_bw = defaultdict(lambda: defaultdict(list))  # (source, eps, curve, n) -> bw -> [err]
        approx = {}  # (curve) -> bw -> approximation error
        for r in records:
            v = r.get("metrics", {}).get("max_abs_error")
            if v is None:
                continue
            pr = r["params"]
            curve = r["label"] + (f", t = {pr['t']}" if "t" in pr else "")
            cells[(pr["source"], r["epsilon"], curve)][pr["players"]].append(v)
            for row in r.get("details", {}).get("by_bandwidth", []):
                by_bw[(pr["source"], r["epsilon"], curve, pr["players"])][row["bandwidth"]].append(row["max_abs_error"])
                if "approximation_error" in row:
                    approx.setdefault(curve, {})[row["bandwidth"]] = row["approximation_error"]
        sources = sorted({c[0] for c in cells})
        epss = sorted({c[1] for c in cells})
        curves = sorted({c[2] for c in cells})
        if not sources:
            continue
        cmap = plt.get_cmap("viridis")
        trig = [c for c in curves if c.startswith("Trigonometric (Alg. 5, 1 bit)")]
        colors = {c: cmap(k / max(1, len(trig) - 1) * 0.85) for k, c in enumerate(trig)}
        for c in curves:
            colors.setdefault(c, "tab:red" if c.startswith("Per-query") else "tab:orange")
        fig, axes = plt.subplots(2 * len(sources), len(epss), figsize=(3.8 * len(epss), 3.0 * 2 * len(sources)),
                                 squeeze=False)
        for i, source in enumerate(sources):
            for j, eps in enumerate(epss):
                ax = axes[2 * i][j]
                for curve in curves:
                    by_n = cells.get((source, eps, curve))
                    if not by_n:
                        continue
                    ns = sorted(by_n)
                    means = [sum(by_n[n]) / len(by_n[n]) for n in ns]
                    ls = next((v for k, v in SMOOTH_STYLE.items() if curve.startswith(k)), "-")
                    ax.plot(ns, [max(m, FLOOR) for m in means], marker="o", ms=3, ls=ls, color=colors[curve],
                            label=f"{curve} (slope {slope(ns, means):.2f})")
                    print(f"{name} {source} eps={eps:g} {curve}: " + " ".join(f"{n}:{m:.3e}" for n, m in zip(ns, means)))
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{source} players, eps = {eps:g}", fontsize=9)
                ax.set_xlabel("players n")
                if j == 0:
                    ax.set_ylabel("max |error| over the queries")
                ax.legend(fontsize=5)
                ax = axes[2 * i + 1][j]
                n_max = max((k[3] for k in by_bw if k[0] == source and k[1] == eps), default=None)
                for curve in curves:
                    row = by_bw.get((source, eps, curve, n_max))
                    if not row:
                        continue
                    bws = sorted(row)
                    ls = next((v for k, v in SMOOTH_STYLE.items() if curve.startswith(k)), "-")
                    ax.plot(bws, [max(sum(row[b]) / len(row[b]), FLOOR) for b in bws], marker="o", ms=3, ls=ls,
                            color=colors[curve], label=curve)
                    if curve in approx and curve.startswith("Trigonometric (Alg. 5, 1 bit)"):
                        ax.plot(bws, [max(approx[curve][b], FLOOR) for b in bws], ls=":", lw=1, color=colors[curve])
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{source}, eps = {eps:g}, n = {n_max:,} (dotted: approximation error)", fontsize=8)
                ax.set_xlabel("kernel bandwidth sigma")
                if j == 0:
                    ax.set_ylabel("max |error| per bandwidth")
                ax.legend(fontsize=5)
        fig.suptitle(f"{name}{' (quick)' if quick else ''}: Gaussian-kernel queries on [-1, 1]^2 (Section 6.2)", fontsize=10)
        fig.tight_layout()
        common.save(fig, out_dir, name)


if __name__ == "__main__":
    main()
