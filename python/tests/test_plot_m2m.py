"""plots/plot_m2m.py's Table 1 tells the paper's estimator from the intercept variant by label:
both are method m2m_rff (or m2m_hist), so a filter on the method name alone would average them."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "plots"))
plot_m2m = pytest.importorskip("plot_m2m")  # needs numpy and matplotlib


def record(method, label, mre, epsilon=1.0, params=None):
    return {"config": "m2m_random10", "method": method, "label": label, "epsilon": epsilon,
            "params": params or {}, "metrics": {"mean_mre": mre}, "data": {"name": "random10"}}


def test_table1_keeps_the_paper_estimator_and_the_intercept_apart():
    records = []
    for rep in range(4):
        records.append(record("m2m_rff", "RFF", 4e-2))
        records.append(record("m2m_rff", "RFF + intercept", 2e-3))
        records.append(record("m2m_hist", "HIST", 7e-2))
        records.append(record("m2m_hist", "HIST + intercept", 1e-3))
        records.append(record("m2m_rff", "RFF", 9.0, epsilon=0.1))  # another budget: not in the table
        records.append(record("m2m_nonprivate", "RFF (eps=inf)", 3e-4, epsilon=None, params={"map": "rff"}))
    text, table = plot_m2m.table1({"m2m_random10": (records, False)})
    assert table["random10 eps=1"]["rff"] == pytest.approx(4e-2)
    assert table["random10 eps=1"]["rff_intercept"] == pytest.approx(2e-3)
    assert table["random10 eps=1"]["hist"] == pytest.approx(7e-2)
    assert table["random10 eps=1"]["hist_intercept"] == pytest.approx(1e-3)
    assert table["random10 eps=1"]["race"] is None
    assert table["random10 eps=inf"]["rff"] == pytest.approx(3e-4)
    assert table["random10 eps=inf"]["rff_intercept"] is None
    assert "RFF+int" in text and text.rstrip().endswith("4")  # the repetition count
