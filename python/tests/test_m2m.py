"""privrace.M2M against `privrace m2m` on the same released feature sketch."""
import warnings

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


# -- what a sketch cannot answer: the domain a HIST sketch records, and its marginal-only tasks ----

@pytest.fixture(scope="module")
def hist(cli, tmp_path_factory):
    """A HIST sketch of 3 attributes on [0, 1] (8 bins each), with the CLI."""
    d = tmp_path_factory.mktemp("m2m_hist")
    rng = np.random.default_rng(12)
    x = np.round(rng.beta(2, 5, size=(3000, 3)) * 1024) / 1024
    csv = write_csv(d / "x.csv", x)
    out = d / "hist.rsk"
    run_cli(cli, "sketch", "-i", csv, "-o", out, "--kernel", "hist", "--bins", 8, "--domain", "0:1",
            "--epsilon", 2.0, "--seed", 5, "-q")
    return str(out), x


def test_hist_domain_defaults_to_the_recorded_one(cli, hist):
    path, x = hist
    m = privrace.M2M(path, samples=SAMPLES)
    same = privrace.M2M(path, domain=(0.0, 1.0), samples=SAMPLES)
    assert np.array_equal(m.mean(), same.mean())
    assert np.array_equal(m.cdf(), same.cdf())
    assert np.array_equal(m.synthetic, same.synthetic)
    assert m.synthetic.min() >= 0.0 and m.synthetic.max() <= 1.0
    # As the CLI answers without --domain.
    p = run_cli(cli, "m2m", path, "--task", "mean", "--samples", SAMPLES)
    assert p.stdout.split() == ["%.9g" % v for v in m.mean()]
    assert np.all(np.abs(m.mean() - x.mean(axis=0)) < 0.1), (m.mean(), x.mean(axis=0))


def test_hist_refuses_another_domain_naming_both(hist):
    path, _ = hist
    with pytest.raises(ValueError, match=r"domain= 0:2 differs from the domain the hist sketch records, 0:1") as e:
        privrace.M2M(path, domain=(0.0, 2.0), samples=100)
    assert "--domain" not in str(e.value) and "leave domain= out" in str(e.value)


def test_rff_needs_a_domain(release):
    path, _, _ = release
    with pytest.raises(ValueError, match=r"records no domain.*give it with domain=") as e:
        privrace.M2M(str(path), samples=100)
    assert "--domain" not in str(e.value)


def test_hist_cov_is_refused_unless_allowed(cli, hist):
    path, _ = hist
    m = privrace.M2M(path, samples=SAMPLES)
    with pytest.raises(ValueError, match=r"task cov is not supported by the hist sketch.*allow_unsupported=True") as e:
        m.cov()
    assert "--allow-unsupported" not in str(e.value)
    allowed = privrace.M2M(path, samples=SAMPLES, allow_unsupported=True)
    with pytest.warns(privrace.UnsupportedTaskWarning, match=r"allow_unsupported=True: task cov answered") as w:
        cov = allowed.cov()
    assert issubclass(privrace.UnsupportedTaskWarning, UserWarning)
    assert all("--allow-unsupported" not in str(r.message) for r in w)
    assert cov.shape == (3, 3) and np.allclose(cov, cov.T)
    # The answer `privrace m2m --task cov --allow-unsupported` gives (it warns on stderr).
    p = run_cli(cli, "m2m", path, "--task", "cov", "--samples", SAMPLES, "--allow-unsupported")
    assert [line.split() for line in p.stdout.splitlines()] == [["%.9g" % v for v in row] for row in cov]
    assert "warning" in p.stderr


def test_hist_counts_of_one_attribute_and_joint_ones(hist, recwarn):
    path, x = hist
    m = privrace.M2M(path, samples=SAMPLES)
    frac = m.count([[(0, "<=", 0.5)], [(2, ">=", 0.25)]])
    assert not any(issubclass(r.category, privrace.UnsupportedTaskWarning) for r in recwarn)
    assert np.all(np.abs(frac - [np.mean(x[:, 0] <= 0.5), np.mean(x[:, 2] >= 0.25)]) < 0.1), frac
    joint = [[(0, "<=", 0.5), (1, ">=", 0.2)]]
    with pytest.raises(ValueError, match=r"counting query 1 \(0 <= 0.5; 1 >= 0.2\d*\) involves 2 attributes.*"
                                         r"allow_unsupported=True"):
        m.count(joint)
    allowed = privrace.M2M(path, samples=SAMPLES, allow_unsupported=True)
    with pytest.warns(privrace.UnsupportedTaskWarning, match="task count answered"):
        assert allowed.count(joint).shape == (1,)
    # Marginal tasks never warn, allowed or not.
    with warnings.catch_warnings():
        warnings.simplefilter("error", privrace.UnsupportedTaskWarning)
        allowed.mean(), allowed.moment2(), allowed.cdf(), allowed.count([[(1, "<=", 0.5)]])


def test_rff_answers_joint_tasks_without_the_override(release, recwarn):
    path, _, _ = release
    m = privrace.M2M(str(path), domain=(0.0, 1.0), samples=200)
    m.cov()
    m.count([[(0, "<=", 0.3), (1, ">=", 0.2)]])
    assert not any(issubclass(r.category, privrace.UnsupportedTaskWarning) for r in recwarn)

