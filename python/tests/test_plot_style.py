"""plots/style.py: the one figure style. Every figure it lays out keeps the rules (at most four
panels a row, panels at least 2.5 x 2 in, no text under 8 pt, one legend outside the panels,
no two legend entries alike); a method has one look in every figure; a regression panel's range
is set by the informative methods, with the far-off values marked on its edge; and every plot
script draws its figures from small records without breaking a rule (PRIVRACE_PLOT_STRICT)."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "plots"))
style = pytest.importorskip("style")  # needs numpy and matplotlib
figures = pytest.importorskip("figures")


def test_a_grid_of_many_panels_keeps_the_rules():
    style.apply()
    fig, axes = style.panels(10)
    for i, ax in enumerate(axes):
        for label in ("RACE", "KME", "Bernstein", "PrivBayes", "Synthetic", "Spectral", "PFDA", "MST", "AIM"):
            style.line(ax, [0.1, 1, 10], [i + 1, i + 0.5, i + 0.2], label)
        style.hline(ax, 0.5, "Non-private")
        style.log_eps(ax)
        ax.set_title(f"a panel title long enough to need wrapping in a narrow panel, number {i}")
    style.finish(fig, axes, title="ten panels", note="a note under the legend " * 20)
    assert style.check(fig) == []
    rows = {round(ax.get_position().y0, 2) for ax in axes}
    assert len(rows) == 3  # 10 panels: 4 + 4 + 2
    style.plt.close(fig)


def test_check_finds_each_broken_rule():
    style.apply()
    fig, axes = style.plt.subplots(1, 5, figsize=(8, 2))  # five small panels a row
    for ax in axes:
        ax.plot([1, 2], [1, 2], color="tab:blue", marker="o", label="a")
        ax.plot([1, 2], [2, 1], color="tab:blue", marker="o", label="b")
        ax.legend(fontsize=6)  # one legend per panel, inside it, under 8 pt
    problems = " ".join(style.check(fig))
    for want in ("panels in a row", "(< 2.5 x 2.0)", "pt (< 8.0)", "legends (one per figure)", "overlaps", "look the same"):
        assert want in problems
    style.plt.close(fig)


def test_a_method_has_one_look_and_distinct_methods_differ():
    assert style.method_style("SSP") == style.method_style("SSP")
    assert style.method_style("some new method") == style.method_style("some new method")  # hashed, stable
    looks = {}
    for label, look in style.METHODS.items():
        key = style.ALIASES.get(label, label)
        looks.setdefault(look, set()).add(key)
    # Two labels may share a look only when they are aliases of one method, or never meet in one
    # figure (the check on every saved figure covers those); here: within each group of labels
    # that meet, all looks differ.
    groups = [
        ["RACE (best R over grid)", "RACE (R by Corollary 1)", "Spectral", "KME", "PFDA", "Bernstein", "Synthetic",
         "PrivBayes", "MST", "AIM", "KME (private data-informed points)", "RACE (median of means)"],
        ["RACE", "RACE (insert)", "SSP", "AdaSSP", "ObjPert", "OPS", "AdaOPS", "PrivBayes", "Non-private", "Trivial"],
        ["RACE", "RACE-MAP", "ObjPert", "ObjPert (wider lambda)", "ObjPert (one-vs-rest)", "Majority"],
        ["M2M RFF", "M2M RACE", "M2M HIST", "M2M RFF + intercept", "M2M HIST + intercept", "M2M RFF eps=inf",
         "M2M RACE eps=inf", "M2M HIST eps=inf", "DP-ERM", "DP-Copula", "PrivBayes", "DP-WGAN ((eps, 1e-5)-DP)",
         "MST ((eps, 1e-9)-DP)", "AIM ((eps, 1e-9)-DP)", "Non-private"],
        ["Bernstein (Alg. 2)", "Bernstein 1-bit (Alg. 3)", "Input perturbation", "LDP-SGD (DJW, interactive)",
         "LDP-SGD (PM, interactive)", "LDP-SGD (HM, interactive)", "LDP-SGD (PrivUnit, interactive)",
         "Theorem 3 bound (constant 1)"],
    ]
    for group in groups:
        seen = [style.METHODS[l] for l in group]
        assert len(set(seen)) == len(seen), group


def test_regression_range_is_set_by_the_informative_methods():
    style.apply()
    fig, (ax,) = style.panels(1)
    values = {}
    for label, ys in {"RACE": [0.12, 0.11, 0.10], "AdaSSP": [0.09, 0.06, 0.05], "SSP": [40.0, 8.0, 0.06]}.items():
        style.line(ax, [0.1, 1, 10], ys, label)
        values[label] = ys
    style.hline(ax, 0.1, "Trivial")
    style.hline(ax, 0.05, "Non-private")
    style.log_eps(ax)
    off = style.informative_ylim(ax, values, references=[0.1, 0.05], cap=2 * 0.1)
    assert off == ["SSP"]
    lo, hi = ax.get_ylim()
    assert hi < 1.0 and lo < 0.05
    style.finish(fig, [ax])
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("off scale" in t for t in texts)
    assert style.check(fig) == []
    style.plt.close(fig)


def test_catalogue_names_every_published_figure():
    assert figures.paper_figure("m2m_fig3_random10.png")[2].startswith("M2M Fig. 3")
    assert figures.paper_figure("ldp_erm_linear_real_p2.png")[1] == "plot_ldp.py"
    assert figures.paper_figure("regress.png")[2].startswith("private RACE Fig. 4")
    # The old 10-panel figure is no longer drawn: its published copy is named as an earlier layout.
    assert "earlier" in figures.paper_figure("m2m_fig3.png")[2]
    assert figures.paper_figure("ldp_erm_linear_real_exact_hits.png")[2].startswith("LDP ERM exact hits")
    assert figures.paper_figure("something_else.png") is None


def _write(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def _summary(path, labels, metric_of, logy):
    rows = []
    for label in labels:
        for eps in (0.1, 1.0, 10.0):
            rows.append({"label": label, "epsilon": eps, "mean": metric_of(label, eps), "sd": 0.01, "n": 2,
                         "best_over_grid": True, "params": {}})
    rows.append({"label": "Trivial" if logy else "Majority", "epsilon": None, "mean": 0.3, "sd": 0.0, "n": 2, "params": {}})
    with open(path, "w") as f:
        json.dump({"config": os.path.basename(path).split(".")[0], "quick": True, "stand_in": False,
                   "data": {"name": "x", "dim": 3, "train_rows": 1000}, "rows": rows}, f)


def test_every_plot_script_draws_small_records_within_the_rules(tmp_path):
    res, out = tmp_path / "results", tmp_path / "plots"
    res.mkdir()
    kde = []
    for label in ("RACE", "RACE (R by Corollary 1)", "KME", "Bernstein", "PrivBayes", "MST", "AIM", "Spectral",
                  "PFDA", "Synthetic"):
        for eps in (0.01, 0.1, 1.0, 10.0):
            for rep in range(2):
                kde.append({"config": "kde_sf", "task": "kde", "figure": "kde_sf", "label": label, "method": label,
                            "epsilon": eps, "params": {"r": 1}, "key": f"{label}|{eps}|{rep}", "quick": True,
                            "primary_metric": "l2_error", "metrics": {"l2_error": (1 + rep) / eps},
                            "data": {"name": "sf", "dim": 1, "train_rows": 30000}})
    _write(res / "kde_sf-quick.jsonl", kde)
    regress = ["RACE", "RACE (insert)", "SSP", "AdaSSP", "ObjPert", "OPS", "AdaOPS", "PrivBayes"]
    for d in ("airfoil", "naval", "gas"):
        _summary(res / f"regress_{d}-quick.summary.json", regress,
                 lambda l, e: 50.0 / e if l == "SSP" else 0.2 + 0.01 * regress.index(l), True)
    for d in ("occupancy", "pulsar", "nomao", "nursery"):
        _summary(res / f"classify_{d}-quick.summary.json", ["RACE", "RACE-MAP", "ObjPert"],
                 lambda l, e: 0.5 + 0.04 * e ** 0.5, False)
    m2m = []
    for name in ("m2m_random10", "m2m_lifesci"):
        for method, label in (("m2m_rff", "RFF"), ("m2m_hist", "HIST"), ("dp_copula", "DP-Copula")):
            for eps in (0.1, 1.0, 10.0):
                m2m.append({"config": name, "task": "m2m", "method": method, "label": label, "epsilon": eps,
                            "params": {}, "quick": True, "key": f"{method}|{eps}",
                            "metrics": {m: 0.1 / eps for m in ("mean_mre", "moment2_mre", "cdf_emd", "cov_frobenius",
                                                              "count_mae")}, "data": {"name": name}})
        _write(res / f"{name}-quick.jsonl", [r for r in m2m if r["config"] == name])
    env = dict(os.environ, PRIVRACE_PLOT_STRICT="1")
    calls = [
        ["plot_kde.py", "--results", res, "--out", out],
        ["plot_regress.py", "--results", res, "--out", out / "regress.png"],
        ["plot_classify.py", "--results", res, "--out", out / "classify.png"],
        ["plot_m2m.py", "--results", res, "--out", out],
        ["plot_kde_baselines.py", "--results", res, "--out", out, "--quick"],
        ["plot_graph.py", "--results", res, "--out", out],
        ["plot_race_apps.py", "--results", res, "--out", out],
        ["plot_ldp.py", "--results", res, "--out-dir", out],
    ]
    for script, *args in calls:
        p = subprocess.run([sys.executable, os.path.join(REPO, "plots", script), *map(str, args)], env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, f"{script}: {p.stderr[-2000:]}"
    for png in ("kde_sf.png", "regress.png", "classify.png", "m2m_fig3_random10.png", "m2m_fig3_lifesci.png",
                "kde_baselines-quick.png"):
        assert (out / png).exists(), png
    from PIL import Image
    assert "quick" in Image.open(out / "regress.png").info.get("Description", "")
