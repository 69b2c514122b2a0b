"""Bad input reaches Python as ValueError (OSError for files), with the engine's messages."""
import numpy as np
import pytest

import privrace
from conftest import grid_points, run_cli


def sketch(**kw):
    return privrace.RaceSketch("l2", rows=8, width=16, seed=1, **kw)


def test_not_two_dimensional():
    with pytest.raises(ValueError, match=r"X must be a 2-D array \(records x attributes\), got shape \(5,\)"):
        sketch().fit(np.zeros(5), epsilon=1.0)
    with pytest.raises(ValueError, match=r"got shape \(2, 3, 4\)"):
        sketch().fit(np.zeros((2, 3, 4)), epsilon=1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_non_finite_values_name_row_and_column(dtype, order):
    x = np.zeros((10, 4), dtype=dtype, order=order)
    x[6, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X: row 7: column 3: value nan is not finite$"):
        sketch().fit(x, epsilon=1.0)
    x[6, 2] = 0
    x[3, 0] = -np.inf
    with pytest.raises(ValueError, match=r"^X: row 4: column 1: value -inf is not finite$"):
        sketch().fit(x, epsilon=1.0)


def test_value_outside_single_precision():
    x = np.zeros((3, 2))
    x[1, 1] = 1e300
    with pytest.raises(ValueError, match=r"X: row 2: column 2: value 1e\+300 does not fit in single precision"):
        sketch().fit(x, epsilon=1.0)


def test_object_and_text_arrays():
    with pytest.raises(ValueError, match="X has dtype object; expected a numeric array"):
        sketch().fit(np.array([[1, "a"], [2, None]], dtype=object), epsilon=1.0)
    with pytest.raises(ValueError, match="X has dtype <U1; expected a numeric array"):
        sketch().fit(np.array([["a", "b"]]), epsilon=1.0)


def test_queries_of_the_wrong_dimension():
    sk = sketch().fit(grid_points(50, 3, seed=1), epsilon=1.0)
    with pytest.raises(ValueError, match="Q: queries have 2 columns, the sketch was built on 3-dimensional data"):
        sk.query(np.zeros((4, 2)))
    q = np.zeros((4, 3))
    q[2, 1] = np.nan
    with pytest.raises(ValueError, match="Q: row 3: column 2: value nan is not finite"):
        sk.kernel_sums(q)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("inf"), float("nan")])
def test_epsilon_must_be_positive(eps):
    with pytest.raises(ValueError, match="epsilon must be a positive number, got"):
        sketch().fit(grid_points(20, 2, seed=1), epsilon=eps)


def test_non_private_needs_to_be_asked_for():
    x = grid_points(20, 2, seed=1)
    with pytest.raises(ValueError, match=r"epsilon is required \(or epsilon=None, allow_non_private=True"):
        sketch().fit(x, epsilon=None)
    with pytest.raises(TypeError):
        sketch().fit(x)  # epsilon has no default: forgetting it is an error, never a silent exact sketch
    with pytest.raises(ValueError, match="exclude each other"):
        sketch().fit(x, epsilon=1.0, allow_non_private=True)


def test_files(tmp_path, cli):
    with pytest.raises(OSError, match="cannot open '.*missing.rsk': No such file or directory"):
        privrace.RaceSketch.load(str(tmp_path / "missing.rsk"))
    junk = tmp_path / "junk.rsk"
    junk.write_bytes(b"this is not a sketch file at all, just some bytes")
    with pytest.raises(ValueError) as err:
        privrace.RaceSketch.load(str(junk))
    # The same message as the command's.
    p = run_cli(cli, "info", junk, check=False)
    assert p.returncode == 1 and p.stderr.strip() == f"privrace info: error: {err.value}"
    sk = sketch().fit(grid_points(20, 2, seed=1), epsilon=1.0)
    with pytest.raises(OSError):
        sk.save(str(tmp_path / "no" / "such" / "dir" / "x.rsk"))


def test_merge_refuses_other_parameters():
    x = grid_points(30, 2, seed=1)
    a = sketch().fit(x, epsilon=1.0)
    b = privrace.RaceSketch("l2", rows=8, width=16, seed=2).fit(x, epsilon=1.0)
    with pytest.raises(ValueError, match="cannot merge: different"):
        a.merge(b)
    exact = sketch().fit(x, epsilon=None, allow_non_private=True)
    with pytest.raises(ValueError, match="cannot merge a private sketch with a non-private one"):
        a.merge(exact)


def test_bad_parameters():
    with pytest.raises(ValueError, match="kernel must be"):
        privrace.RaceSketch("gaussian", rows=4, width=4)
    with pytest.raises(ValueError, match="rows must be at least 1"):
        privrace.RaceSketch("l2", rows=0, width=4)
    with pytest.raises(ValueError, match="not fitted"):
        privrace.RaceSketch("l2", rows=4, width=4).query(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="mechanism"):
        sketch().fit(grid_points(20, 2, seed=1), epsilon=1.0, mechanism="laplace-ish")
    with pytest.raises(ValueError, match="fit_sets"):
        privrace.RaceSketch("jaccard", rows=4, width=4).fit(np.zeros((2, 2)), epsilon=1.0)
    with pytest.raises(ValueError, match=r"sets\[1\]: element id -3 is outside"):
        privrace.RaceSketch("jaccard", rows=4, width=4).fit_sets([[1, 2], [-3]], epsilon=1.0)
