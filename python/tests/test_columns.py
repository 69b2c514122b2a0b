"""fit(X, columns=...): the columns of a DataFrame by name, or of any array by position."""
import numpy as np
import pytest

import privrace

pd = pytest.importorskip("pandas")


def frame(n=400, seed=4):
    r = np.random.default_rng(seed)
    return pd.DataFrame({
        "date": pd.date_range("2015-02-04 17:51", periods=n, freq="min").astype(str),  # not a number
        "temp": r.normal(21, 1, n), "light": r.normal(400, 50, n), "label": r.integers(0, 2, n)})


def fitted(x, **kw):
    return privrace.RaceSketch("l2", rows=16, width=32, bandwidth=2.0, hash_seed=9).fit(
        x, epsilon=None, allow_non_private=True, threads=1, **kw)


@pytest.mark.filterwarnings("ignore::privrace.NotFitForReleaseWarning")
def test_columns_by_name_and_position_equal_the_cut_array():
    f = frame()
    want = fitted(f[["light", "temp"]].to_numpy()).counts
    np.testing.assert_array_equal(fitted(f, columns=["light", "temp"]).counts, want)
    np.testing.assert_array_equal(fitted(f, columns=[2, 1]).counts, want)
    np.testing.assert_array_equal(fitted(f[["date", "temp", "light"]].to_numpy(object)[:, 1:].astype(float)[:, ::-1],
                                         columns=[0, 1]).counts, want)


def test_unknown_or_mixed_columns_are_refused_naming_them():
    f = frame()
    with pytest.raises(ValueError, match="no column 'pressure'.*'temp'"):
        fitted(f, columns=["pressure"])
    with pytest.raises(ValueError, match="mixes names and positions"):
        fitted(f, columns=["temp", 2])
    with pytest.raises(ValueError, match="position 7 is outside X's 4 columns"):
        fitted(f, columns=[7])
    with pytest.raises(ValueError, match="needs a pandas DataFrame"):
        fitted(f[["temp"]].to_numpy(), columns=["temp"])
    with pytest.raises(ValueError, match="not one string"):
        fitted(f, columns="temp")
