"""plots/plot_ldp.py never fits a slope through a non-positive mean: on a small
results file with a cell whose repetitions are all 0 the slope is fitted on the positive means
only, and the fit itself refuses a zero."""
import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "plots"))
plot_ldp = pytest.importorskip("plot_ldp")  # needs numpy and matplotlib


def record(n, rep, excess, method="ldp_bernstein"):
    return {"config": "ldp_erm_tiny", "task": "ldp_erm", "method": method, "label": method, "epsilon": 1.0,
            "key": f"{method}|{n}|{rep}", "params": {"source": "generated", "p": 1, "players": n},
            "metrics": {"excess_risk": excess, "exact_hit": 1.0 if excess == 0 else 0.0, "noise_dominated": 0.0},
            "details": {"loss_bound": 3.05}, "data": {"name": "generated"}}


def write_results(path):
    rows = []
    for rep in range(5):
        rows.append(record(1000, rep, 0.0))            # an all-zero cell: mean 0
        rows.append(record(10000, rep, 1e-2 * (1 + 0.1 * rep)))
        rows.append(record(100000, rep, 1e-3 * (1 + 0.1 * rep)))
        rows.append(record(1000000, rep, -1e-16 if rep == 0 else 1e-4))  # a summation-order negative
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def test_fit_refuses_a_non_positive_mean():
    with pytest.raises(ValueError):
        plot_ldp.fit_loglog_slope([1e3, 1e4, 1e5], [0.0, 1e-2, 1e-3])
    with pytest.raises(ValueError):
        plot_ldp.fit_loglog_slope([1e3, 1e4], [-1e-16, 1e-2])
    assert plot_ldp.fit_loglog_slope([1e3, 1e4, 1e5], [1e-1, 1e-2, 1e-3]) == pytest.approx(-1.0)


def test_zero_mean_cell_is_left_out_of_the_slope(tmp_path):
    path = tmp_path / "ldp_erm_tiny.jsonl"
    write_results(path)
    records = plot_ldp.common.read_jsonl(str(path))
    cells = plot_ldp.load_erm_cells(records)
    by_n = cells[("generated", 1, 1.0, "ldp_bernstein")]
    assert min(c["excess"] for n in by_n for c in by_n[n]) == 0.0  # -1e-16 clamped at 0
    vals = {n: [c["excess"] for c in by_n[n]] for n in by_n}
    s, lo, hi, used = plot_ldp.slope_with_interval(vals, boot=200)
    assert 1000 not in used and used == [10000, 100000, 1000000]
    assert s < 0 and lo <= s <= hi
    # The whole figure: the slope reported is the one over the positive means.
    slopes = plot_ldp.plot_erm("ldp_erm_tiny", records, True, str(tmp_path / "fig"))
    (row,) = [r for r in slopes if r[4] == "ldp_bernstein"]
    assert row[5] == pytest.approx(s) and row[8] == 3 and row[9] == 4
    # One figure per (source, p): excess risk and exact hits of theta* in one.
    assert (tmp_path / "fig" / "ldp_erm_tiny_generated_p1.png").exists()


def test_each_sgd_randomiser_is_its_own_curve(tmp_path):
    # DJW, PM, HM and PrivUnit are separate methods: each gets its own cells and slope, none is
    # dropped or pooled with another.
    methods = ["ldp_sgd", "ldp_sgd_pm", "ldp_sgd_hm", "ldp_sgd_privunit"]
    records = [record(n, rep, scale / n * (1 + 0.1 * rep), method=m)
               for i, m in enumerate(methods) for scale in [10.0 ** i] for n in (1000, 10000, 100000) for rep in range(3)]
    cells = plot_ldp.load_erm_cells(records)
    assert {k[3] for k in cells} == set(methods)
    slopes = plot_ldp.plot_erm("ldp_erm_tiny", records, True, str(tmp_path / "fig"))
    assert sorted(r[4] for r in slopes) == sorted(methods)
    assert all(r[5] == pytest.approx(-1.0, abs=0.05) for r in slopes)
