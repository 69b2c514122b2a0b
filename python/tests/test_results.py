"""privrace.results.load: results/NAME.jsonl as a DataFrame, or a list of dicts."""
import json

import pytest

import privrace.results as results

RECORDS = [
    {"config": "kde_x", "task": "kde", "label": "RACE", "epsilon": 1.0, "params": {"rows": 100},
     "metrics": {"mre": 0.25}, "rep": 0},
    {"config": "kde_x", "task": "kde", "label": "RACE", "epsilon": 0.5, "params": {"rows": 200},
     "metrics": {"mre": 0.5}, "rep": 1},
]


@pytest.fixture()
def path(tmp_path):
    p = tmp_path / "kde_x.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return p


def test_list_of_dicts(path):
    assert results.load(str(path), as_frame=False) == RECORDS


def test_dataframe(path):
    pd = pytest.importorskip("pandas")
    df = results.load(str(path))
    assert isinstance(df, pd.DataFrame)
    assert list(df["metrics.mre"]) == [0.25, 0.5]
    assert list(df["params.rows"]) == [100, 200]
    assert df.groupby("epsilon")["metrics.mre"].mean().to_dict() == {0.5: 0.5, 1.0: 0.25}


def test_partial_last_line_is_skipped(path):
    with open(path, "a") as f:
        f.write('{"config": "kde_x", "metr')
    with pytest.warns(UserWarning, match=r"kde_x.jsonl:3: not a complete record; skipped"):
        assert len(results.load(str(path), as_frame=False)) == 2


def test_several_files_and_errors(path, tmp_path):
    assert len(results.load([path, path], as_frame=False)) == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: expected a JSON object"):
        results.load(str(bad), as_frame=False)
    with pytest.raises(OSError):
        results.load(str(tmp_path / "missing.jsonl"))
