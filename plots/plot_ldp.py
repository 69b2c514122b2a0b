#!/usr/bin/env python3
"""Local-DP ERM (Wang, Gaboardi & Xu 2018), from results/ldp_*.jsonl (a full run wins over
--quick). Every figure is drawn through plots/style.py (at most four panels a row, one legend).

ERM (NAME_SOURCE_pP.png, e.g. ldp_erm_linear_real_p1.png: one figure per config, player source
and dimension p): top row, excess empirical risk against the number of simulated players n
(log x, symlog y), one panel per epsilon; bottom row, the fraction of repetitions that hit
theta* exactly. Per cell (source, p, eps, method, n) the players are fixed and only the
privacy noise repeats. The excess risk is clamped at 0 (tiny negatives are summation order).
Drawn: the mean with a bootstrap 95% interval (band) and the median with its IQR (hollow
markers); the y axis is symlog, so cells whose excess is exactly 0 are shown at 0 and never
fitted. Slopes are least-squares log-log fits over the cells with a positive mean only
(fit_loglog_slope refuses a non-positive mean), with a bootstrap 95% interval (repetitions
resampled within each cell); they are printed and written to RESULTS/NAME_slopes.csv (no
longer in the legend). Theorem 3's rate is drawn as a bound, b (eps sqrt n)^(-h/(h+p))
(constant 1, logs dropped, b the loss bound; h = p: slope -1/4 in n), not anchored to a point.
Bernstein cells whose grid-value noise SD exceeds the loss range over the box
(noise_dominated) are ringed in gray.

Also results/ldp_marginals*.jsonl (Section 6): max |error| over all k-way conjunctions against
d, one panel per (k, epsilon), one figure per player source (ldp_marginals_SOURCE.png).

And results/ldp_highdim*.jsonl (Section 7): excess empirical risk against the Gaussian width of
the constraint set (L1 ball: filled markers and solid lines, simplex: hollow markers and dashed
lines, radius r scales the width), one figure per number of players (ldp_highdim_n1e6.png),
one panel per epsilon, one colour per projection dimension m of Algorithm 7 and one for
full-dimension LDP-SGD, with the excess risk of predicting 0 in gray.

And results/ldp_smooth*.jsonl (Section 6.2), one figure per player source
(ldp_smooth_queries_SOURCE.png): max |error| over the Gaussian-kernel query family against n
per epsilon (trigonometric Algorithm 5 at its best degree t, per-query LDP averaging), and the
error per bandwidth at the largest n with the polynomial's approximation error dotted.

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
import style  # noqa: E402

# method -> legend name; colour, marker and line style are style.METHODS' (one look per method
# in every figure).
STYLE = {
    "ldp_bernstein": "Bernstein (Alg. 2)",
    "ldp_bernstein_1bit": "Bernstein 1-bit (Alg. 3)",
    "ldp_input_perturbation": "Input perturbation",
    "ldp_sgd": "LDP-SGD (DJW, interactive)",
    "ldp_sgd_pm": "LDP-SGD (PM, interactive)",
    "ldp_sgd_hm": "LDP-SGD (HM, interactive)",
    "ldp_sgd_privunit": "LDP-SGD (PrivUnit, interactive)",
}
BOUND = "Theorem 3 bound (constant 1)"
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
    """One figure per (player source, dimension p): excess risk against n (top row, one panel
    per epsilon) and the fraction of exact hits of theta* (bottom row, drawn only where some
    repetition hit it); returns the fitted
    slopes as (name, source, p, eps, method, slope, lo, hi, cells fitted, cells)."""
    cells = load_erm_cells(records)
    slopes = []
    data = records[0].get("data", {}) if records else {}
    for source in sorted({k[0] for k in cells}):
        ps = sorted({k[1] for k in cells if k[0] == source})
        epss = sorted({k[2] for k in cells if k[0] == source})
        src = "generated players" if source == "generated" else f"{data.get('name', 'real')} rows"
        stand_in = " (STAND-IN data)" if source == "real" and data.get("stand_in") else ""
        if source == "real" and not stand_in and data.get("substitute"):
            stand_in = f" ({common.substitute_label([{'data': data}])})"
        for p in ps:
            # The exact-hit row only where some repetition hit theta* exactly: a row of zeros
            # says nothing the note cannot.
            show_hits = any(c["hit"] > 0 for key, by_n in cells.items() if key[:2] == (source, p)
                            for reps_at_n in by_n.values() for c in reps_at_n)
            fig, axes = style.panels((2 if show_hits else 1) * len(epss), ncols=min(len(epss), style.MAX_COLS))
            reps_seen = set()
            any_nd = False
            for j, eps in enumerate(epss):
                ax, hax = axes[j], (axes[len(epss) + j] if show_hits else None)
                positive = []
                all_ns = set()
                bound_b = None
                for method, label in STYLE.items():
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
                    s_fit, lo, hi, used = slope_with_interval(vals)
                    slopes.append((name, source, p, eps, method, s_fit, lo, hi, len(used), len(ns)))
                    st = style.line(ax, ns, means, label, band=([x["lo"] for x in sm], [x["hi"] for x in sm]))
                    color = st.get_color()
                    med = np.array([x["median"] for x in sm])
                    iqr = np.array([[x["median"] - x["q25"] for x in sm], [x["q75"] - x["median"] for x in sm]])
                    ax.errorbar([n * 1.12 for n in ns], med, yerr=iqr, color=color, marker=st.get_marker(), mfc="none",
                                ls="none", ms=3.5, lw=0.7, capsize=1.5, label="_median")
                    nd = [n for n in ns if any(c["noise_dominated"] > 0 for c in by_n[n])]
                    if nd:
                        any_nd = True
                        ax.plot(nd, [means[ns.index(n)] for n in nd], "o", ms=11, mfc="none", mec="gray", mew=1.0,
                                label="_nd")
                    hits = [float(np.mean([c["hit"] for c in by_n[n]])) for n in ns]
                    if hax is not None:
                        style.line(hax, ns, hits, label, lw=1.0)
                    if bound_b is None:
                        bound_b = next((c["loss_bound"] for n in ns for c in by_n[n] if c["loss_bound"]), None)
                    print(f"{name} {source} p={p} eps={eps:g} {method}: slope {s_fit:.3f} [{lo:.3f}, {hi:.3f}] over "
                          f"{len(used)}/{len(ns)} cells; "
                          + " ".join(f"{n}:{x['mean']:.2e}(hits {h:.2f}{', noise-dominated' if n in nd else ''})"
                                     for n, x, h in zip(ns, sm, hits)))
                if all_ns and bound_b:
                    h = p  # Corollary 1
                    xs = sorted(all_ns)
                    style.line(ax, xs, [bound_b * (eps * math.sqrt(n)) ** (-h / (h + p)) for n in xs], BOUND, lw=1)
                ax.set_xscale("log")
                floor = 10 ** math.floor(math.log10(min(positive))) if positive else 1e-6
                ax.set_yscale("symlog", linthresh=floor, linscale=0.3)
                ax.axhline(floor, color="gray", lw=0.5, ls=":")
                ax.set_ylim(bottom=0)
                # Ticks: 0 and the decades from the linear threshold up (every other one when many);
                # symlog's own ticks inside the linear part overprint the 0.
                top = ax.get_ylim()[1]
                decades = list(range(int(round(math.log10(floor))), int(math.ceil(math.log10(max(top, floor * 10)))) + 1))
                if len(decades) > 6:
                    decades = decades[::-2][::-1]
                ax.yaxis.set_major_locator(style.FixedLocator([0.0] + [10.0 ** k for k in decades]))
                ax.yaxis.set_minor_locator(style.NullLocator())
                ax.set_title(f"excess risk, ε = {eps:g}")
                ax.set_xlabel("players n")
                if j == 0:
                    ax.set_ylabel("excess empirical risk (symlog)")
                if hax is not None:
                    hax.set_xscale("log")
                    hax.set_ylim(-0.02, 1.02)
                    hax.set_title(f"exact hits θ = θ*, ε = {eps:g}")
                    hax.set_xlabel("players n")
                    if j == 0:
                        hax.set_ylabel("fraction of repetitions")
            handles, labels = style._dedupe_handles(axes, order="style")
            handles.append(style.Line2D([], [], color="gray", marker="o", mfc="none", ls="none", ms=4.5))
            labels.append("median and IQR (hollow, drawn right of n)")
            if any_nd:
                handles.append(style.Line2D([], [], color="none", marker="o", mfc="none", mec="gray", ms=10, ls="none"))
                labels.append("noise-dominated cell (grid-value noise SD > loss range)")
            reps = "/".join(str(r) for r in sorted(reps_seen))
            rate = -p / (2.0 * (p + p))
            note = (f"Players fixed per (source, n, p); only the privacy noise repeats ({reps} repetitions per cell). "
                    "Line and band: mean and bootstrap 95% interval. Excess clamped at 0; symlog axis (linear below the "
                    "dotted line), so zeros are shown. Theorem 3's bound b (ε √n)^(-h/(h+p)) with h = p "
                    f"(slope {rate:.2f} in n) is drawn, not fitted. Fitted log-log slopes with bootstrap intervals: "
                    f"{name}{'-quick' if quick else ''}_slopes.csv in the results directory, and printed."
                    + ("" if show_hits else " No repetition hit θ* exactly, so the exact-hit row is not drawn."))
            style.finish(fig, axes, handles=handles, labels=labels, note=note,
                         title=f"{name}{' (quick)' if quick else ''}: {src}{stand_in}, p = {p}")
            common.save(fig, out_dir, f"{name}_{source}_p{p}")
    return slopes


def write_slopes(slopes, path):
    """The fitted slopes of plot_erm as CSV (one row per source, p, epsilon and method)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("config,source,p,epsilon,method,slope,lo95,hi95,cells_fitted,cells\n")
        for row in slopes:
            f.write(",".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + "\n")


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
        slopes = plot_erm(name, common.dedupe(records), quick, a.out_dir)
        write_slopes(slopes, os.path.join(a.results, f"{name}{'-quick' if quick else ''}_slopes.csv"))


MARGINALS = ["Chebyshev (Alg. 4, t = k)", "Chebyshev (Alg. 4, t = 2)", "Per-query RR", "Central histogram"]


def plot_marginals(results, out_dir):
    """Section 6: max |error| over the k-way marginals against d, one figure per player source,
    one panel per (k, epsilon) (at most four a row), one legend."""
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
            fig, axes = style.panels(len(ks) * len(epss), ncols=min(len(epss), style.MAX_COLS))
            for i, k in enumerate(ks):
                for j, eps in enumerate(epss):
                    ax = axes[i * len(epss) + j]
                    labels = MARGINALS + sorted({c[3] for c in cells if c[3] not in MARGINALS})
                    for label in labels:
                        by_d = cells.get((source, k, eps, label))
                        if not by_d:
                            continue
                        ds = sorted(by_d)
                        means = [sum(by_d[d]) / len(by_d[d]) for d in ds]
                        style.line(ax, ds, [max(m, FLOOR) for m in means], label)
                        print(f"{name} {source} k={k} eps={eps} {label}: " + " ".join(f"d={d}:{m:.3e}" for d, m in zip(ds, means)))
                    ax.set_yscale("log")
                    ax.set_title(f"k = {k}, ε = {eps:g}")
                    ax.set_xlabel("attributes d")
                    if j == 0:
                        ax.set_ylabel("max |error| over k-way marginals")
            style.finish(fig, axes, title=f"{name}{' (quick)' if quick else ''}: {source} players",
                         note=f"Mean over repetitions of the largest absolute error over all k-way conjunctions; "
                              f"values below {FLOOR:g} drawn at {FLOOR:g}.")
            common.save(fig, out_dir, f"{name}_{source}")


def _highdim_curve(pr):
    return f"Compressed (Alg. 7), m = {pr['m']}" if "m" in pr else "LDP-SGD, full d"


def plot_highdim(results, out_dir):
    """Section 7: excess risk against the Gaussian width of the constraint set, one figure per
    number of players (panels: epsilon), colour = curve (projection dimension m, or full-d
    LDP-SGD), filled markers and solid lines = L1 ball, hollow and dashed = simplex."""
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
            cells[(pr["players"], r["epsilon"])][(pr["set"], _highdim_curve(pr))][width].append(v)
            if mt.get("zero_excess_risk") is not None:
                zero[(pr["players"], pr["set"])][width] = mt["zero_excess_risk"]
        if not cells:
            continue
        curves = sorted({c[1] for p in cells.values() for c in p},
                        key=lambda c: (c.startswith("LDP"), int(c.rsplit("= ", 1)[1]) if "m = " in c else 0))
        looks = {c: (style.method_style(c) if c in style.METHODS else style.sequence_style(i)) for i, c in enumerate(curves)}
        for n in sorted({p[0] for p in cells}):
            epss = sorted({p[1] for p in cells if p[0] == n})
            fig, axes = style.panels(len(epss))
            for ax, eps in zip(axes, epss):
                for (cset, curve), by_w in sorted(cells.get((n, eps), {}).items()):
                    ws = sorted(by_w)
                    means = [sum(by_w[w]) / len(by_w[w]) for w in ws]
                    st = dict(looks[curve])
                    filled = cset == "l1_ball"
                    st["linestyle"] = "-" if filled else "--"
                    ax.plot(ws, [max(m, FLOOR) for m in means], mfc=st["color"] if filled else "none",
                            label=curve if filled else "_" + curve, **st)
                    print(f"{name} n={n} eps={eps:g} {cset} {curve}: " + " ".join(f"w={w:.2f}:{m:.3e}" for w, m in zip(ws, means)))
                for cset, ls in (("l1_ball", "-"), ("simplex", "--")):
                    z = zero.get((n, cset))
                    if z:
                        ws = sorted(z)
                        ax.plot(ws, [max(z[w], FLOOR) for w in ws], color="gray", ls=ls, lw=1,
                                label=f"predict 0, {cset.replace('_', ' ')}")
                ax.set_yscale("log")
                ax.set_title(f"ε = {eps:g}")
                ax.set_xlabel("Gaussian width of C (r w(B))")
                ax.set_ylabel("excess empirical risk")
            handles, labels = style._dedupe_handles(axes, order=lambda l: (l.startswith("predict"), curves.index(l) if l in curves else 0))
            handles += [style.Line2D([], [], color="dimgray", marker="o", ls="-"),
                        style.Line2D([], [], color="dimgray", marker="o", mfc="none", ls="--")]
            labels += ["set C: L1 ball (filled markers, solid)", "set C: simplex (hollow markers, dashed)"]
            style.finish(fig, axes, handles=handles, labels=labels,
                         title=f"{name}{' (quick)' if quick else ''}: sparse regression, d = 1000, n = {n:,} players "
                               "(Section 7)",
                         note="Mean excess empirical risk over repetitions against the Gaussian width of the "
                              "constraint set (radius r scales the width).")
            common.save(fig, out_dir, f"{name}_n{n:.0e}".replace("+0", "").replace("+", ""))


SMOOTH = ["Trigonometric (Alg. 5, 1 bit)", "Trigonometric (Alg. 5, PM)", "Trigonometric (Alg. 5, HM)",
          "Trigonometric (Alg. 5, Laplace)", "Per-query LDP average"]


def plot_smooth(results, out_dir):
    """Section 6.2, one figure per player source: max |error| over the kernel-query family
    against n (top row, one panel per epsilon) and the error per bandwidth at the largest n
    (bottom row; the polynomial's approximation error dotted). Each method at its degree t with
    the smallest mean error at the largest n it ran, per panel (the note lists the t chosen)."""
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
        for source in sources:
            epss = sorted({c[1] for c in cells if c[0] == source})
            # One curve a method and panel: its degree t with the smallest mean error at the largest
            # n it ran (a fixed t per curve, so every point of a curve is the same estimator).
            chosen = {}
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
                chosen[eps] = sorted((c for _, c in best.values()),
                                     key=lambda c: style.legend_rank(c.split(", t = ")[0]))
            fig, axes = style.panels(2 * len(epss), ncols=min(len(epss), style.MAX_COLS))
            t_notes = []
            for j, eps in enumerate(epss):
                ax = axes[j]
                curves = chosen[eps]
                ts = [c.split(", t = ")[0].replace("Trigonometric (Alg. 5, ", "").rstrip(")") + " t = " + c.split(", t = ")[1]
                      for c in curves if ", t = " in c]
                if ts:
                    t_notes.append(f"ε = {eps:g}: " + ", ".join(ts))
                for curve in curves:
                    by_n = cells.get((source, eps, curve))
                    if not by_n:
                        continue
                    method = curve.split(", t = ")[0]
                    ns = sorted(by_n)
                    means = [sum(by_n[n]) / len(by_n[n]) for n in ns]
                    s_fit, lo, hi, _ = slope_with_interval(by_n)
                    style.line(ax, ns, [max(m, FLOOR) for m in means], method)
                    print(f"{name} {source} eps={eps:g} {curve}: slope {s_fit:.3f} [{lo:.3f}, {hi:.3f}]; "
                          + " ".join(f"{n}:{m:.3e}" for n, m in zip(ns, means)))
                style.log_eps(ax, label="players n")
                ax.set_title(f"error against n, ε = {eps:g}")
                if j == 0:
                    ax.set_ylabel("max |error| over the queries")
                ax = axes[len(epss) + j]
                n_max = max((k[3] for k in by_bw if k[0] == source and k[1] == eps), default=None)
                for curve in curves:
                    row = by_bw.get((source, eps, curve, n_max))
                    if not row:
                        continue
                    method = curve.split(", t = ")[0]
                    bws = sorted(row)
                    style.line(ax, bws, [max(sum(row[b]) / len(row[b]), FLOOR) for b in bws], method)
                    if curve in approx and method == "Trigonometric (Alg. 5, 1 bit)":
                        ax.plot(bws, [max(approx[curve][b], FLOOR) for b in bws], ls=":", lw=1.2, color="dimgray",
                                label="approximation error of the degree-t polynomial (1 bit's t)")
                ax.set_xscale("log")
                ax.set_yscale("log")
                style.plain_ticks(ax.xaxis, sorted({b for k, row in by_bw.items() if k[0] == source for b in row}))
                ax.set_title(f"per bandwidth, ε = {eps:g}, n = {n_max:.0e}" if n_max else f"per bandwidth, ε = {eps:g}")
                ax.set_xlabel("kernel bandwidth σ")
                if j == 0:
                    ax.set_ylabel("max |error| per bandwidth")
            style.finish(fig, axes,
                         title=f"{name}{' (quick)' if quick else ''}: Gaussian-kernel queries on [-1, 1]^2 (Section 6.2), "
                               f"{source} players",
                         note="Mean over repetitions; each method at its degree t with the smallest error at the largest "
                              "n, per panel. t chosen: " + "; ".join(t_notes) + ".")
            common.save(fig, out_dir, f"{name}_{source}")

if __name__ == "__main__":
    main()
