#!/usr/bin/env python3
"""Local-DP ERM (Wang, Gaboardi & Xu 2018): excess empirical risk vs the number of simulated
players n (log-log), one panel per epsilon, one row per dimension p, one figure per config and
player source (generated / real), from results/ldp_erm_*.jsonl (a full run wins over --quick).

Curves: per cell (source, p, eps, method, n) the players are fixed and only the
privacy noise repeats. The excess risk is clamped at 0 (tiny negatives are summation order).
Drawn: the mean with a bootstrap 95% interval (band) and the median with its IQR (hollow
markers); the y axis is symlog, so cells whose excess is exactly 0 are shown at 0 and never
fitted. The fraction of exact hits of theta* is reported separately (its own figure and the
printed table). Slopes are least-squares log-log fits over the cells with a positive mean only
(fit_loglog_slope refuses a non-positive mean), with a bootstrap 95% interval (repetitions
resampled within each cell). Theorem 3's rate is drawn as a bound, b (eps sqrt n)^(-h/(h+p))
(constant 1, logs dropped, b the loss bound; h = p: slope -1/4 in n), not anchored to a point.
Bernstein cells whose grid-value noise SD exceeds the loss range over the box
(noise_dominated) are ringed in gray.

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

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STYLE = {
    "ldp_bernstein": ("tab:blue", "o", "-", "Bernstein (Alg. 2)"),
    "ldp_bernstein_1bit": ("tab:orange", "s", "-", "Bernstein 1-bit (Alg. 3)"),
    "ldp_input_perturbation": ("tab:green", "^", "-.", "Input perturbation"),
    "ldp_sgd": ("tab:red", "v", ":", "LDP-SGD (DJW, interactive)"),
    "ldp_sgd_pm": ("tab:purple", "D", ":", "LDP-SGD (PM, interactive)"),
    "ldp_sgd_hm": ("tab:brown", "P", ":", "LDP-SGD (HM, interactive)"),
    "ldp_sgd_privunit": ("tab:pink", "X", ":", "LDP-SGD (PrivUnit, interactive)"),
}
FLOOR = 1e-7  # display floor of the marginals, high-dimension and smooth-query figures (not the ERM ones)
BOOT = 2000


def fit_loglog_slope(ns, means):
    """Least-squares slope of log(mean) on log(n). Refuses (ValueError) a non-positive mean:
    a zero or negative mean has no logarithm and must be left out by the caller, never floored."""
    ns, means = np.asarray(ns, float), np.asarray(means, float)
    if np.any(~(means > 0)):
        raise ValueError(f"fit_loglog_slope: non-positive mean in {means.tolist()}: fit positive means only")
    if len(ns) < 2:
        return float("nan")
    x, y = np.log(ns), np.log(means)
    den = np.sum((x - x.mean()) ** 2)
    return float(np.sum((x - x.mean()) * (y - y.mean())) / den) if den > 0 else float("nan")


def slope_with_interval(by_n, seed=0, boot=BOOT):
    """{n: [values]} -> (slope, lo, hi, ns used): fit on the cells whose mean is positive, with a
    bootstrap 95% interval (each cell's repetitions resampled; a resample whose mean is 0 drops
    that cell from that resample's fit)."""
    ns = [n for n in sorted(by_n) if len(by_n[n]) and np.mean(by_n[n]) > 0]
    if len(ns) < 2:
        return float("nan"), float("nan"), float("nan"), ns
    s = fit_loglog_slope(ns, [np.mean(by_n[n]) for n in ns])
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(boot):
        xs, ys = [], []
        for n in ns:
            v = np.asarray(by_n[n], float)
            m = v[rng.integers(0, len(v), len(v))].mean()
            if m > 0:
                xs.append(n)
                ys.append(m)
        if len(xs) >= 2:
            draws.append(fit_loglog_slope(xs, ys))
    if not draws:
        return s, float("nan"), float("nan"), ns
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return s, float(lo), float(hi), ns


def summarize(values, seed=0, boot=BOOT):
    """Mean with a bootstrap 95% interval, median and IQR of one cell's repetitions."""
    v = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    if len(v) > 1:
        means = v[rng.integers(0, len(v), (boot, len(v)))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
    else:
        lo = hi = float(v.mean())
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return {"mean": float(v.mean()), "lo": float(lo), "hi": float(hi), "median": float(med), "q25": float(q25),
            "q75": float(q75), "reps": len(v)}


def load_erm_cells(records):
    """(source, p, eps, method) -> n -> list of per-repetition dicts (excess clamped at 0)."""
    cells = defaultdict(lambda: defaultdict(list))
    for r in records:
        m = r.get("metrics", {})
        v = m.get("excess_risk")
        if v is None or r["method"] not in STYLE:
            continue
        pr = r["params"]
        cells[(pr["source"], pr["p"], r["epsilon"], r["method"])][pr["players"]].append({
            "excess": max(0.0, float(v)),
            "hit": float(m.get("exact_hit", 1.0 if float(v) <= 0 else 0.0)),
            "noise_dominated": float(m.get("noise_dominated", 0.0)),
            "loss_bound": r.get("details", {}).get("loss_bound"),
            "boundary": m.get("optimum_boundary_distance"),
        })
    return cells


def plot_erm(name, records, quick, out_dir):
    """The excess-risk figure and the exact-hit figure per source; returns the fitted slopes
    as (name, source, p, eps, method, slope, lo, hi, cells fitted, cells)."""
    plt = common.plt
    cells = load_erm_cells(records)
    slopes = []
    for source in sorted({k[0] for k in cells}):
        ps = sorted({k[1] for k in cells if k[0] == source})
        epss = sorted({k[2] for k in cells if k[0] == source})
        fig, axes = plt.subplots(len(ps), len(epss), figsize=(3.8 * len(epss), 3.0 * len(ps)), squeeze=False,
                                 sharex=True)
        hfig, haxes = plt.subplots(len(ps), len(epss), figsize=(3.4 * len(epss), 2.4 * len(ps)), squeeze=False,
                                   sharex=True, sharey=True)
        reps_seen = set()
        for i, p in enumerate(ps):
            for j, eps in enumerate(epss):
                ax, hax = axes[i][j], haxes[i][j]
                positive = []
                all_ns = set()
                bound_b = None
                for method, (color, marker, ls, label) in STYLE.items():
                    by_n = cells.get((source, p, eps, method))
                    if not by_n:
                        continue
                    ns = sorted(by_n)
                    all_ns.update(ns)
                    vals = {n: [c["excess"] for c in by_n[n]] for n in ns}
                    sm = [summarize(vals[n], seed=n) for n in ns]
                    reps_seen.update(x["reps"] for x in sm)
                    means = [x["mean"] for x in sm]
                    positive += [x["lo"] for x in sm if x["lo"] > 0] + [x["mean"] for x in sm if x["mean"] > 0]
                    s, lo, hi, used = slope_with_interval(vals)
                    slopes.append((name, source, p, eps, method, s, lo, hi, len(used), len(ns)))
                    tag = f"slope {s:.2f} [{lo:.2f}, {hi:.2f}]" if np.isfinite(s) else "slope: < 2 positive means"
                    if np.isfinite(s) and len(used) < len(ns):
                        tag += f", {len(ns) - len(used)} zero mean(s) not fitted"
                    ax.plot(ns, means, color=color, marker=marker, ls=ls, ms=4, lw=1.2, label=f"{label}: {tag}")
                    ax.fill_between(ns, [x["lo"] for x in sm], [x["hi"] for x in sm], color=color, alpha=0.15, lw=0)
                    med = np.array([x["median"] for x in sm])
                    iqr = np.array([[x["median"] - x["q25"] for x in sm], [x["q75"] - x["median"] for x in sm]])
                    ax.errorbar([n * 1.12 for n in ns], med, yerr=iqr, color=color, marker=marker, mfc="none", ls="none",
                                ms=3.5, lw=0.7, capsize=1.5)
                    nd = [n for n in ns if any(c["noise_dominated"] > 0 for c in by_n[n])]
                    if nd:
                        ax.plot(nd, [means[ns.index(n)] for n in nd], "o", ms=11, mfc="none", mec="gray", mew=1.0)
                    hits = [float(np.mean([c["hit"] for c in by_n[n]])) for n in ns]
                    hax.plot(ns, hits, color=color, marker=marker, ls=ls, ms=4, lw=1.0, label=label)
                    if bound_b is None:
                        bound_b = next((c["loss_bound"] for n in ns for c in by_n[n] if c["loss_bound"]), None)
                    print(f"{name} {source} p={p} eps={eps:g} {method}: slope {s:.3f} [{lo:.3f}, {hi:.3f}] over "
                          f"{len(used)}/{len(ns)} cells; "
                          + " ".join(f"{n}:{x['mean']:.2e}(hits {h:.2f}{', noise-dominated' if n in nd else ''})"
                                     for n, x, h in zip(ns, sm, hits)))
                if all_ns and bound_b:
                    h = p  # Corollary 1
                    rate = -h / (2.0 * (h + p))
                    xs = sorted(all_ns)
                    ax.plot(xs, [bound_b * (eps * math.sqrt(n)) ** (-h / (h + p)) for n in xs], color="gray", ls="--",
                            lw=1, label=f"Thm 3 bound b (eps sqrt n)^(-h/(h+p)), const. 1 (slope {rate:.2f})")
                ax.set_xscale("log")
                floor = 10 ** math.floor(math.log10(min(positive))) if positive else 1e-6
                ax.set_yscale("symlog", linthresh=floor, linscale=0.3)
                ax.axhline(floor, color="gray", lw=0.5, ls=":")
                ax.set_ylim(bottom=0)
                ax.set_title(f"p = {p}, eps = {eps:g}", fontsize=9)
                hax.set_xscale("log")
                hax.set_ylim(-0.02, 1.02)
                hax.set_title(f"p = {p}, eps = {eps:g}", fontsize=9)
                if i == len(ps) - 1:
                    ax.set_xlabel("players n")
                    hax.set_xlabel("players n")
                if j == 0:
                    ax.set_ylabel("excess empirical risk (symlog)")
                    hax.set_ylabel("fraction of exact hits")
                ax.legend(fontsize=5.5, loc="lower left")
                if i == 0 and j == 0:
                    hax.legend(fontsize=6)
        data = records[0].get("data", {}) if records else {}
        src = "generated players" if source == "generated" else f"{data.get('name', 'real')} rows"
        stand_in = " (STAND-IN data)" if source == "real" and data.get("stand_in") else ""
        if source == "real" and not stand_in and data.get("substitute"):
            stand_in = f" ({common.substitute_label([{'data': data}])})"
        reps = "/".join(str(r) for r in sorted(reps_seen))
        caption = (f"Players fixed per (source, n, p); only the privacy noise repeats ({reps} repetitions per cell). "
                   "Line and band: mean and bootstrap 95% interval; hollow markers: median and IQR.\n"
                   "Excess clamped at 0; symlog axis (linear below the dotted line), so zeros are shown; slopes "
                   "fitted on positive means only, with a 95% bootstrap interval.\nGray rings: noise-dominated "
                   "cells (grid-value noise SD > loss range over the box). Dashed: Theorem 3's bound, not fitted.")
        fig.suptitle(f"{name}{' (quick)' if quick else ''}: {src}{stand_in}", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        fig.text(0.5, 0.005, caption, ha="center", va="bottom", fontsize=6.5)
        common.save(fig, out_dir, f"{name}_{source}")
        hfig.suptitle(f"{name}{' (quick)' if quick else ''}: {src}{stand_in}: fraction of repetitions with "
                      f"theta = theta* exactly", fontsize=9)
        hfig.tight_layout()
        common.save(hfig, out_dir, f"{name}_{source}_exact_hits")
    return slopes


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
    for name, (records, quick) in sorted(sets.items()):
        plot_erm(name, common.dedupe(records), quick, a.out_dir)


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
        if not sources:
            continue
        # One curve a method and panel: its degree t with the smallest mean error at the largest
        # n it ran (a fixed t per curve, so every point of a curve is the same estimator).
        chosen = {}  # (source, eps) -> [curve]
        for source in sources:
            for eps in epss:
                best = {}
                for (s_, e_, curve), by_n in cells.items():
                    if s_ != source or e_ != eps:
                        continue
                    method = curve.split(", t = ")[0]
                    n_top = max(by_n)
                    score = (-n_top, sum(by_n[n_top]) / len(by_n[n_top]))
                    if method not in best or score < best[method][0]:
                        best[method] = (score, curve)
                chosen[(source, eps)] = sorted(c for _, c in best.values())
        methods = sorted({c.split(", t = ")[0] for cs in chosen.values() for c in cs})
        palette = ["tab:blue", "tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:gray"]
        method_color = {m: ("tab:red" if m.startswith("Per-query") else palette[k % len(palette)]) for k, m in enumerate(methods)}
        colors = {c: method_color[c.split(", t = ")[0]] for cs in chosen.values() for c in cs}
        fig, axes = plt.subplots(2 * len(sources), len(epss), figsize=(3.8 * len(epss), 3.0 * 2 * len(sources)),
                                 squeeze=False)
        for i, source in enumerate(sources):
            for j, eps in enumerate(epss):
                ax = axes[2 * i][j]
                curves = chosen[(source, eps)]
                for curve in curves:
                    by_n = cells.get((source, eps, curve))
                    if not by_n:
                        continue
                    ns = sorted(by_n)
                    means = [sum(by_n[n]) / len(by_n[n]) for n in ns]
                    ls = next((v for k, v in SMOOTH_STYLE.items() if curve.startswith(k)), "-")
                    s_fit, lo, hi, _ = slope_with_interval(by_n)
                    tag = f"slope {s_fit:.2f} [{lo:.2f}, {hi:.2f}]" if np.isfinite(s_fit) else "slope: < 2 positive means"
                    ax.plot(ns, [max(m, FLOOR) for m in means], marker="o", ms=3, ls=ls, color=colors[curve],
                            label=f"{curve} ({tag})")
                    print(f"{name} {source} eps={eps:g} {curve}: " + " ".join(f"{n}:{m:.3e}" for n, m in zip(ns, means)))
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{source} players, eps = {eps:g}", fontsize=9)
                ax.set_xlabel("players n")
                if j == 0:
                    ax.set_ylabel("max |error| over the queries")
                ax.legend(fontsize=5.5, loc="lower left")
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
                    if curve in approx and curve.startswith("Trigonometric (Alg. 5, 1 bit)") and not quick:
                        ax.plot(bws, [max(approx[curve][b], FLOOR) for b in bws], ls=":", lw=1, color=colors[curve])
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{source}, eps = {eps:g}, n = {n_max:.0e} (dotted: kernel approx. error)", fontsize=8)
                ax.set_xlabel("kernel bandwidth sigma")
                if j == 0:
                    ax.set_ylabel("max |error| per bandwidth")
        fig.suptitle(f"{name}{' (quick)' if quick else ''}: Gaussian-kernel queries on [-1, 1]^2 (Section 6.2); "
                     "each method at its best degree t (largest n), mean over repetitions", fontsize=10)
        fig.tight_layout()
        common.save(fig, out_dir, name)


if __name__ == "__main__":
    main()
