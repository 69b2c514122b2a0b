#!/usr/bin/env python3
"""Private classification (private-race paper Figure 4 / CCS'21 Figure 4): test accuracy vs
epsilon, one panel per data set, from results/classify_*.summary.json.

Each method's curve is its best grid point at each epsilon (the runner's best_over_grid flag),
mean +- one standard deviation over the repetitions; methods without epsilon (majority class)
are horizontal reference lines. A panel computed on a synthetic stand-in says so in its title.

usage: plot_classify.py [--results DIR] [--out FILE] [--datasets occupancy pulsar nomao nursery]
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
except ImportError:  # some machines put a python3 without matplotlib first on PATH
    sys.exit("plot_classify.py needs matplotlib: run it with /usr/bin/python3 (Debian's python3-matplotlib)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import style  # noqa: E402  (the shared figure style; a method's colour and marker are style.METHODS')


def curves(summary):
    """label -> sorted [(eps, mean, sd)] of the best grid point, or a float for reference lines."""
    out = {}
    for row in summary["rows"]:
        label, eps, mean = row["label"], row["epsilon"], row["mean"]
        if mean is None:
            continue
        if eps is None:
            out[label] = mean
        elif row.get("best_over_grid"):
            out.setdefault(label, []).append((eps, mean, row.get("sd") or 0.0))
    for label, pts in out.items():
        if isinstance(pts, list):
            pts.sort()
    return out


def not_run(summary):
    """Grid points with no value at any epsilon (a setting the method refused, e.g. PrivBayes
    at degree 3 on gas's 128 features), as "label" or "label (k=v)" with the grid keys that
    vary: named in the panel instead of silently missing."""
    points, varying = {}, {}
    for row in summary["rows"]:
        params = row.get("params") or {}
        key = (row["label"], json.dumps(params, sort_keys=True))
        points[key] = points.get(key, False) or row["mean"] is not None
        for k, v in params.items():
            varying.setdefault(row["label"], {}).setdefault(k, set()).add(json.dumps(v))
    out = []
    for (label, params), valued in sorted(points.items()):
        if valued:
            continue
        if all(not v for (lab, _), v in points.items() if lab == label):
            name = label
        else:
            keys = [k for k, vals in varying.get(label, {}).items() if len(vals) > 1]
            p = json.loads(params)
            name = f"{label} ({', '.join(f'{k}={p[k]}' for k in keys)})"
        if name not in out:
            out.append(name)
    return out


def plot(prefix, datasets, metric_label, title_word, results, out, logy=False, clip_to="Trivial"):
    """One panel per data set (at most four a row), one legend below. logy: the error on a log
    axis, its range set by the informative methods (those at most twice the `clip_to`
    reference): a method far worse (SSP at small epsilon) is marked at the panel's edge instead
    of stretching the range until the others share one band."""
    found = []
    for d in datasets:  # the full run if present, else its --quick run
        for stem in (f"{prefix}_{d}", f"{prefix}_{d}-quick"):
            path = os.path.join(results, stem + ".summary.json")
            if os.path.exists(path):
                found.append((d, path))
                break
    if not found:
        sys.exit(f"no {prefix}_*.summary.json under {results}: run the configs first")
    style.apply()
    fig, axes = style.panels(len(found))
    notes = []
    quick = False
    for ax, (name, path) in zip(axes, found):
        with open(path) as f:
            summary = json.load(f)
        quick |= bool(summary.get("quick"))
        values, refs = {}, []
        for label, pts in sorted(curves(summary).items(), key=lambda kv: style.legend_rank(kv[0])):
            if isinstance(pts, list):
                e = [p[0] for p in pts]
                m = [p[1] for p in pts]
                sd = [p[2] for p in pts]
                # On a log axis a band reaching 0 would swamp the panel: clip it at mean / 3.
                lo = [max(a - b, a / 3) if logy else a - b for a, b in zip(m, sd)]
                hi = [a + b for a, b in zip(m, sd)]
                style.line(ax, e, m, label, band=(lo, hi))
                values[label] = m + lo + hi
            else:
                style.hline(ax, pts, label)
                refs.append(pts)
        style.log_eps(ax, logy=logy)
        if logy:
            cap = [v for l, v in curves(summary).items() if l == clip_to and not isinstance(v, list)]
            style.informative_ylim(ax, values, references=refs, cap=2 * cap[0] if cap else None)
        ax.set_ylabel(metric_label)
        data = summary.get("data") or {}
        n = data.get("train_rows") or data.get("rows")
        title = name + (f" (d = {data['dim']}, N = {n / 1000:.3g}k)" if data.get("dim") and n else "")
        if summary.get("stand_in"):
            title += "\n(SYNTHETIC STAND-IN)"
        elif data.get("substitute"):  # real data of another version than the paper's
            sub = data["substitute"]
            title += f"\n({sub.get('label', 'substitute data') if isinstance(sub, dict) else sub})"
        ax.set_title(title)
        missing = not_run(summary)
        if missing:
            notes.append(f"{name}: refused as too slow: " + ", ".join(missing) + ".")
    notes.insert(0, "Line: mean over repetitions at the best grid point per ε; band: ± one standard deviation"
                 + (" (on the log axis, at least mean / 3)" if logy else "") + ". Horizontal lines: methods without ε.")
    style.finish(fig, axes, title=title_word + (" [quick]" if quick else ""), note="\n".join(notes))
    out = os.path.abspath(out)
    base, ext = os.path.splitext(out)
    paths = style.save(fig, os.path.dirname(out), os.path.basename(base))
    print(*paths, sep="\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "..", "results"))
    ap.add_argument("--out", default=os.path.join(here, "classify.png"))
    ap.add_argument("--datasets", nargs="+", default=["occupancy", "pulsar", "nomao", "nursery"])
    a = ap.parse_args()
    plot("classify", a.datasets, "test accuracy", "Private classification: accuracy vs privacy budget",
         a.results, a.out)


if __name__ == "__main__":
    main()
