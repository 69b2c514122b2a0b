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

And results/ldp_highdim*.jsonl (Section 7): excess empirical risk against epsilon, one panel
per (constraint set, players), one curve per projection dimension m of Algorithm 7 and one for
full-dimension LDP-SGD.

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
        cells = defaultdict(lambda: defaultdict(list))  # (set, players, curve) -> eps -> [excess risk]
        for r in records:
            v = r.get("metrics", {}).get("excess_risk")
            if v is None:
                continue
            pr = r["params"]
            curve = f"compressed m = {pr['m']}" if "m" in pr else "LDP-SGD, full d"
            cells[(pr["set"], pr["players"], curve)][r["epsilon"]].append(v)
        panels = sorted({(c[0], c[1]) for c in cells})
        if not panels:
            continue
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.0), squeeze=False)
        curves = sorted({c[2] for c in cells})
        for j, (cset, n) in enumerate(panels):
            ax = axes[0][j]
            for k, curve in enumerate(curves):
                by_eps = cells.get((cset, n, curve))
                if not by_eps:
                    continue
                es = sorted(by_eps)
                means = [sum(by_eps[e]) / len(by_eps[e]) for e in es]
                ls = ":" if curve.startswith("LDP-SGD") else "-"
                ax.plot(es, [max(m, FLOOR) for m in means], marker="os^vD"[k % 5], ls=ls, label=curve)
                print(f"{name} {cset} n={n} {curve}: " + " ".join(f"eps={e:g}:{m:.3e}" for e, m in zip(es, means)))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{cset.replace('_', ' ')}, n = {n:,}", fontsize=9)
            ax.set_xlabel("epsilon")
            if j == 0:
                ax.set_ylabel("excess empirical risk")
            ax.legend(fontsize=6)
        fig.suptitle(f"{name}{' (quick)' if quick else ''}: sparse regression, d = 1000 (Section 7)", fontsize=10)
        fig.tight_layout()
        common.save(fig, out_dir, name)


if __name__ == "__main__":
    main()
