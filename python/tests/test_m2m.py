"""privrace.M2M against `privrace m2m` on the same released feature sketch."""
import numpy as np
import pytest

import privrace
from conftest import run_cli, write_csv

SAMPLES = 3000


@pytest.fixture(scope="module")
def release(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("m2m")
    rng = np.random.default_rng(11)
    x = np.clip(rng.beta(2, 5, size=(4000, 3)), 0, 1)
    x = np.round(x * 1024) / 1024
    csv = write_csv(d / "x.csv", x)
    out = d / "rff.rsk"
    run_cli(cli, "sketch", "-i", csv, "-o", out, "--kernel", "rff", "--features", 60, "--sigma", 0.5,
            "--epsilon", 2.0, "--seed", 5, "-q")
    queries = d / "queries.txt"
    queries.write_text("0 <= 0.3; 1 >= 0.2; 2 <= 0.5\n2 >= 0.1; 0 >= 0.05; 1 <= 0.9\n")
    return out, queries, x


def cli_numbers(cli, path, task, *extra):
    p = run_cli(cli, "m2m", path, "--task", task, "--domain", "0:1", "--samples", SAMPLES, *extra)
    return [line.split() for line in p.stdout.splitlines()]


def test_every_task_matches_the_cli(cli, release):
    path, queries, x = release
    m = privrace.M2M(str(path), domain=(0.0, 1.0), samples=SAMPLES)
    fmt = lambda v: "%.9g" % v  # noqa: E731
    assert [r[0] for r in cli_numbers(cli, path, "mean")] == list(map(fmt, m.mean()))
    assert [r[0] for r in cli_numbers(cli, path, "moment2")] == list(map(fmt, m.moment2()))
    assert [r[2] for r in cli_numbers(cli, path, "cdf")] == list(map(fmt, m.cdf().ravel()))
    assert cli_numbers(cli, path, "cov") == [list(map(fmt, row)) for row in m.cov()]
    frac = m.count([[(0, "<=", 0.3), (1, ">=", 0.2), (2, "<=", 0.5)], [(2, ">=", 0.1), (0, ">=", 0.05), (1, "<=", 0.9)]])
    assert cli_numbers(cli, path, "count", "--queries", queries) == [[fmt(f), fmt(f * m.released_count)] for f in frac]
    # And the estimates are estimates of the data: means within 0.05 of the truth at epsilon = 2.
    assert np.all(np.abs(m.mean() - x.mean(axis=0)) < 0.05), (m.mean(), x.mean(axis=0))
    assert m.weights.shape == (SAMPLES,) and m.synthetic.shape == (SAMPLES, 3)


def test_bad_input(release, tmp_path):
    path, _, _ = release
    with pytest.raises(ValueError, match="domain: 2 lower and 2 upper bounds for a sketch of 3-dimensional data"):
        privrace.M2M(str(path), domain=([0, 0], [1, 1]), samples=100)
    m = privrace.M2M(str(path), domain=(0.0, 1.0), samples=100)
    with pytest.raises(ValueError, match="op must be"):
        m.count([[(0, "<", 0.3), (1, ">=", 0.2), (2, "<=", 0.5)]])
    with pytest.raises(OSError, match="cannot open"):
        privrace.M2M(str(tmp_path / "missing.rsk"), domain=(0.0, 1.0))


def test_intercept_and_auto_noise_match_the_cli(cli, release):
    path, _, x = release
    fmt = lambda v: "%.9g" % v  # noqa: E731
    m = privrace.M2M(str(path), domain=(0.0, 1.0), samples=SAMPLES, intercept=True, lambda_rule="auto-noise")
    cli_mean = [r[0] for r in cli_numbers(cli, path, "mean", "--intercept", "--lambda", "auto-noise")]
    assert cli_mean == list(map(fmt, m.mean()))
    # The unpenalised constant: the weights average to exactly 1, and lambda never exceeds eq. (5).
    assert abs(m.weights.mean() - 1.0) < 1e-10
    eq5 = privrace.M2M(str(path), domain=(0.0, 1.0), samples=SAMPLES, intercept=True)
    assert 0 < m.lambda_ <= eq5.lambda_
    assert m.fit_info["intercept"] is True
    assert np.all(np.abs(m.mean() - x.mean(axis=0)) < 0.05)
    with pytest.raises(ValueError, match="expected eq5 or auto-noise"):
        privrace.M2M(str(path), domain=(0.0, 1.0), samples=100, lambda_rule="gcv")
