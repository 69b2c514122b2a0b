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
import textwrap

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # some machines put a python3 without matplotlib first on PATH
    sys.exit("plot_classify.py needs matplotlib: run it with /usr/bin/python3 (Debian's python3-matplotlib)")

STYLE = {"RACE": ("tab:blue", "o", "-"), "RACE-MAP": ("tab:cyan", "s", "--"),
         "ObjPert": ("tab:red", "^", "-"), "ObjPert (wider lambda)": ("tab:orange", "v", "-."), "Majority": ("black", None, ":"),
         "ObjPert (one-vs-rest)": ("tab:red", "^", "-")}


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


def plot(prefix, datasets, metric_label, title_word, results, out, logy=False):
    found = []
    for d in datasets:  # the full run if present, else its --quick run
        for stem in (f"{prefix}_{d}", f"{prefix}_{d}-quick"):
            path = os.path.join(results, stem + ".summary.json")
            if os.path.exists(path):
                found.append((d, path))
                break
    if not found:
        sys.exit(f"no {prefix}_*.summary.json under {results}: run the configs first")
    fig, axes = plt.subplots(1, len(found), figsize=(4.2 * len(found), 3.6), squeeze=False)
    for ax, (name, path) in zip(axes[0], found):
        with open(path) as f:
            summary = json.load(f)
        for label, pts in curves(summary).items():
            color, marker, ls = STYLE.get(label, (None, "d", "-"))
            if isinstance(pts, list):
                e = [p[0] for p in pts]
                m = [p[1] for p in pts]
                s = [p[2] for p in pts]
                ax.plot(e, m, marker=marker, linestyle=ls, color=color, label=label, markersize=4)
                # On a log axis a band reaching 0 would swamp the panel: clip it at mean / 3.
                lo = [max(a - b, a / 3) if logy else a - b for a, b in zip(m, s)]
                ax.fill_between(e, lo, [a + b for a, b in zip(m, s)], color=color, alpha=0.15, linewidth=0)
            else:
                ax.axhline(pts, color=color or "gray", linestyle=ls, label=label)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(r"$\epsilon$")
        ax.set_ylabel(metric_label)
        title = name
        if summary.get("stand_in"):
            title += " (SYNTHETIC STAND-IN)"
        elif (summary.get("data") or {}).get("substitute"):  # real data of another version than the paper's
            title += f"\n({summary['data']['substitute'].get('label', 'substitute data')})"
        if summary.get("quick"):
            title += " [quick]"
        missing = not_run(summary)
        if missing:
            title += "\n" + textwrap.fill("refused as too slow: " + ", ".join(missing), 48)  # a panel's width
        ax.set_title(title, fontsize=10 if "\n" not in title else 9)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title_word, fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=150)
    print(out)


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
