#!/usr/bin/env python3
"""Graph figures (CCS'21 Figure 6 and Table 4 style).

- plots/graph.png|pdf: mean relative error of f(q) = sum_u J(N(u), N(q)) vs epsilon, log-log,
  one line per graph (and per R when a config sweeps R), band = min..max over repetitions;
- plots/scaling_graph.png|pdf (from scaling_graph results): speedup vs threads, and build
  time per edge vs threads (one line per graph size in both panels: one legend);
- results/table4_graph.md and .csv: graph, nodes, edges, sketch (build) time, query time,
  sketch size, error at epsilon = 1; also printed.

usage: plot_graph.py [--results DIR] [--out DIR]   (defaults: <repo>/results, <repo>/plots)
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import style  # noqa: E402
import numpy as np  # noqa: E402


def graph_name(records):
    d = records[0].get("data", {})
    name = d.get("name", records[0].get("config"))
    if any(r.get("stand_in") for r in records) and d.get("source") != "rmat":
        return f"{name} (synthetic R-MAT stand-in)"  # the real file was missing
    if d.get("source") == "rmat":
        return f"{name} (R-MAT)"
    sub = common.substitute_label(records)
    return f"{name} ({sub})" if sub else name


def error_records(records):
    return [r for r in records if r.get("method") == "race_graph"]


def plot_errors(sets, out_dir, metric="mre"):
    fig, (ax,) = style.panels(1, panel=(4.2, 3.3))
    any_line = False
    n_lines = 0
    quick = False
    for name, (records, is_quick) in sorted(sets.items()):
        recs = error_records(records)
        if not recs:
            continue
        quick |= is_quick
        rows = sorted({r["params"]["rows"] for r in recs})
        for R in rows:
            by_eps = {}
            for r in recs:
                v = r.get("metrics", {}).get(metric)
                if r["params"]["rows"] != R or v is None or r.get("epsilon") is None:
                    continue
                by_eps.setdefault(r["epsilon"], []).append(v)
            if not by_eps:
                continue
            eps = np.array(sorted(by_eps))
            vals = [by_eps[e] for e in eps]
            mean = np.array([np.mean(v) for v in vals])
            label = graph_name(recs) + (f", R = {R}" if len(rows) > 1 else "")
            st = style.sequence_style(n_lines)
            ax.plot(eps, mean, label=label, **st)
            ax.fill_between(eps, [np.min(v) for v in vals], [np.max(v) for v in vals],
                            color=st["color"], alpha=0.15, linewidth=0)
            any_line = True
            n_lines += 1
    if not any_line:
        style.plt.close(fig)
        return []
    style.log_eps(ax)
    ax.set_ylabel("Mean relative error of f(q)")
    ax.set_title("Jaccard kernel sums on graphs" + (" [quick]" if quick else ""))
    style.finish(fig, [ax], where="right", note="Line: mean over repetitions; band: min-max.")
    return common.save(fig, out_dir, "graph")


def table4(sets, results_dir):
    """One row per graph config (R = the largest in the config)."""
    rows = []
    for name, (records, is_quick) in sorted(sets.items()):
        recs = error_records(records)
        if not recs:
            continue
        R = max(r["params"]["rows"] for r in recs)
        recs = [r for r in recs if r["params"]["rows"] == R]
        d = recs[0]["data"]
        det = [r.get("details", {}) for r in recs]
        # Build time = hashing into the exact counts (once per group), as the paper's sketch time.
        hash_s = [x.get("hash_seconds") for x in det if x.get("hash_seconds") is not None]
        eps1 = [r["metrics"]["mre"] for r in recs
                if r.get("epsilon") is not None and abs(r["epsilon"] - 1) < 1e-9 and r["metrics"].get("mre") is not None]
        files = [x.get("sketch_file_bytes") for x in det if x.get("sketch_file_bytes")]
        floor = [x.get("mre_nonprivate") for x in det if x.get("mre_nonprivate") is not None]
        floor_d = [x.get("mre_nonprivate_debiased") for x in det if x.get("mre_nonprivate_debiased") is not None]
        rows.append({
            "graph": graph_name(recs) + (" [quick]" if is_quick else ""),
            "nodes": d.get("nodes"),
            "edges": d.get("edges"),
            "R": R,
            "W": recs[0]["params"]["width"],
            "threads": recs[0].get("threads"),
            "sketch_s": float(np.mean(hash_s)) if hash_s else None,
            "query_us": float(np.mean([r["query_seconds_per_query"] for r in recs])) * 1e6,
            "file_MB": float(np.mean(files)) / 1e6 if files else None,
            "mre_eps1": float(np.mean(eps1)) if eps1 else None,
            "mre_nonprivate": float(np.mean(floor)) if floor else None,
            "mre_nonprivate_debiased": float(np.mean(floor_d)) if floor_d else None,
            "truth_s": d.get("truth_seconds") if not d.get("truth_cache_hit") else None,
        })
    if not rows:
        return None
    cols = list(rows[0].keys())

    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v)

    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    text = "\n".join(md) + "\n"
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "table4_graph.md"), "w", encoding="utf-8") as f:
        f.write("Table 4 (CCS'21) style: sketch = build time of the exact counts (s), query = µs per query node,\n"
                "mre_eps1 = mean relative error of f(q) at ε = 1, mre_nonprivate(_debiased) = MinHash error without noise,\n"
                "truth_s = exact ground truth time (when computed in that run).\n\n" + text)
    with open(os.path.join(results_dir, "table4_graph.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return text


def plot_scaling(sets, out_dir):
    recs = [r for records, _ in sets.values() for r in records if r.get("method") == "race_graph_scaling"]
    if not recs:
        return []
    quick = any(r.get("quick") for r in recs)
    cells = {}  # (edges, threads) -> build seconds over reps
    for r in recs:
        key = (r["details"]["edges"], r["details"]["build_threads"])
        cells.setdefault(key, []).append(r["build_seconds"])
    edges = sorted({e for e, _ in cells})
    threads = sorted({t for _, t in cells})
    fig, (a1, a2) = style.panels(2)
    for i, e in enumerate(edges):
        st = style.sequence_style(i)
        ts = [t for t in threads if (e, t) in cells]
        if (e, 1) in cells:
            t1 = np.median(cells[(e, 1)])
            a1.plot(ts, [t1 / np.median(cells[(e, t)]) for t in ts], label=f"{e / 1e6:.1f}M edges", **st)
        a2.plot(ts, [np.median(cells[(e, t)]) / e * 1e9 for t in ts], label=f"{e / 1e6:.1f}M edges", **st)
    a1.plot(threads, threads, linestyle="--", color="gray", label="linear speedup")
    a1.set_xlabel("threads")
    a1.set_ylabel("speedup over 1 thread")
    a1.set_title("Speedup of the sketch build")
    a2.set_xlabel("threads")
    a2.set_ylabel("build ns per edge")
    a2.set_title("Build time per edge (equal: linear in edges)")
    for ax in (a1, a2):
        ax.set_xticks(threads)
    R = recs[0]["params"]["rows"]
    style.finish(fig, [a1, a2], order=None,
                 title=f"Parallel Jaccard sketch build, R-MAT graphs (R = {R}, W = {recs[0]['params']['width']})"
                 + (" [quick]" if quick else ""),
                 note="Median build time over repetitions.")
    print("scaling: edges, threads, median build s, ns/edge")
    for (e, t), v in sorted(cells.items()):
        print(f"  {e:>12} {t:>3} {np.median(v):9.3f} {np.median(v) / e * 1e9:8.1f}")
    return common.save(fig, out_dir, "scaling_graph")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(common.REPO, "results"))
    ap.add_argument("--out", default=os.path.join(common.REPO, "plots"))
    args = ap.parse_args()
    common.style()
    sets = common.result_sets(args.results, "graph")
    if not sets:
        print(f"plot_graph: no graph results in {args.results}", file=sys.stderr)
        return 0
    for p in plot_errors(sets, args.out) + plot_scaling(sets, args.out):
        print(p)
    text = table4(sets, args.results)
    if text:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
