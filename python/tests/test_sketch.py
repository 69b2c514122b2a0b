"""RaceSketch against the `privrace` command and the exact kernel: same seeded sketch, same
file format, same query output; thread invariance; in-place reads; merge; sets."""
import math

import numpy as np
import pytest

import privrace
from conftest import grid_points, run_cli, write_csv

ROWS, WIDTH, BANDWIDTH, SEED = 60, 32, 2.0, 4242


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    x = grid_points(3000, 4, seed=1)
    q = grid_points(200, 4, seed=2)
    return x, q, write_csv(d / "x.csv", x), write_csv(d / "q.csv", q), d


@pytest.fixture(scope="module")
def cli_sketch(cli, data):
    _, _, x_csv, _, d = data
    out = d / "cli.rsk"
    run_cli(cli, "sketch", "-i", x_csv, "-o", out, "--rows", ROWS, "--width", WIDTH, "--bandwidth", BANDWIDTH,
            "--seed", SEED, "--epsilon", 1.0, "-q")
    return out


def seeded(**kw):
    return privrace.RaceSketch("l2", rows=ROWS, width=WIDTH, bandwidth=BANDWIDTH, seed=SEED, **kw)


def test_same_sketch_as_the_cli(data, cli_sketch, tmp_path):
    x, _, _, _, _ = data
    sk = seeded().fit(x, epsilon=1.0)
    ref = privrace.RaceSketch.load(str(cli_sketch))
    assert np.array_equal(sk.counts, ref.counts)
    h, hr = sk.header, ref.header
    for key in ("family", "privacy", "rows", "width", "n_hat"):
        assert h[key] == hr[key], key
    assert h["privacy"]["private"] and not h["privacy"]["fit_for_release"]  # seeded noise is recorded as such
    # The Python writer produces the CLI's file byte for byte (same header, same payload).
    sk.save(str(tmp_path / "py.rsk"))
    again = privrace.RaceSketch.load(str(tmp_path / "py.rsk"))
    assert np.array_equal(again.counts, ref.counts)
    ref.save(str(tmp_path / "resaved.rsk"))
    assert (tmp_path / "resaved.rsk").read_bytes() == cli_sketch.read_bytes()


def test_query_output_matches_the_cli(cli, data, cli_sketch):
    _, q, _, q_csv, _ = data
    sk = privrace.RaceSketch.load(str(cli_sketch))
    for flags, values in (([], sk.query(q)), (["--kernel-sum"], sk.kernel_sums(q)),
                          (["--estimator", "mom", "--debias"], sk.query(q, estimator="mom", debias=True))):
        printed = run_cli(cli, "query", cli_sketch, "--queries", q_csv, *flags).stdout.split()
        assert printed == ["%.9g" % v for v in values], flags


def test_kernel_sums_match_the_exact_kernel():
    # Without noise, the mean over R rows of S[r, l_r(q)] estimates sum_x k(x, q) with
    # k = the p-stable collision probability (Datar et al.); debias removes the 1/W rehash.
    x = grid_points(400, 3, seed=5, scale=3.0)
    q = grid_points(20, 3, seed=6, scale=3.0)
    w = 2.5
    sk = privrace.RaceSketch("l2", rows=4000, width=256, bandwidth=w, seed=9).fit(x, epsilon=None,
                                                                                   allow_non_private=True)
    est = sk.kernel_sums(q, debias=True)

    def collision(c):
        if c == 0:
            return 1.0
        r = w / c
        phi = 0.5 * (1 + math.erf(-r / math.sqrt(2)))
        return 1 - 2 * phi - 2 / (math.sqrt(2 * math.pi) * r) * (1 - math.exp(-r * r / 2))

    exact = np.array([sum(collision(float(np.linalg.norm(xi - qi))) for xi in x) for qi in q])
    assert np.all(np.abs(est - exact) <= 0.05 * exact + 2.0), np.c_[est, exact]
    assert sk.n_hat == 400.0


def test_layouts_dtypes_and_threads_give_identical_counts(data):
    x, _, _, _, _ = data
    ref = seeded().fit(x.astype(np.float32), epsilon=None, allow_non_private=True, threads=1).counts
    for arr in (x, np.asfortranarray(x), x.astype(np.float32), np.asfortranarray(x.astype(np.float32)),
                x.tolist()):
        for threads in (1, 2, 0):
            sk = seeded().fit(arr, epsilon=None, allow_non_private=True, threads=threads)
            assert np.array_equal(sk.counts, ref)
    # With seeded noise too: the released counts do not depend on the thread count.
    a = seeded().fit(x, epsilon=0.5, threads=1).counts
    b = seeded().fit(x, epsilon=0.5, threads=2).counts
    assert np.array_equal(a, b) and not np.array_equal(a, ref)


def test_float32_rows_are_read_in_place(data):
    x, _, _, _, _ = data
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    sk = seeded().fit(x32, epsilon=1.0)
    assert sk.fit_report["input"] == "in place"
    assert sk.fit_report["data_address"] == x32.ctypes.data
    every_other = x32[::2]  # rows contiguous, stride 2 rows: still no copy
    sk.fit(every_other, epsilon=1.0)
    assert sk.fit_report["input"] == "in place" and sk.fit_report["data_address"] == every_other.ctypes.data
    assert sk.fit_report["points"] == 1500
    # float64 and column-major arrays are converted to float32 a block of rows at a time.
    assert seeded().fit(x, epsilon=1.0).fit_report["input"].startswith("converted")
    assert seeded().fit(np.asfortranarray(x32), epsilon=1.0).fit_report["input"].startswith("converted")


def test_merge_equals_one_sketch_of_the_union(data, tmp_path):
    x, q, _, _, _ = data
    whole = seeded().fit(x, epsilon=None, allow_non_private=True)
    a = seeded().fit(x[:1000], epsilon=None, allow_non_private=True)
    b = seeded().fit(x[1000:], epsilon=None, allow_non_private=True)
    a.merge(b)
    assert np.array_equal(a.counts, whole.counts)
    np.testing.assert_array_equal(a.query(q), whole.query(q))
    with pytest.raises(ValueError, match="refusing to write a sketch without noise"):
        a.save(str(tmp_path / "exact.rsk"))
    a.save(str(tmp_path / "exact.rsk"), allow_non_private=True)
    assert privrace.RaceSketch.load(str(tmp_path / "exact.rsk")).header["privacy"]["private"] is False
    # Private parts need noise of their own: two seeds on shared hash functions (one seed twice is refused).
    p1 = privrace.RaceSketch("l2", rows=ROWS, width=WIDTH, bandwidth=BANDWIDTH, seed=SEED, hash_seed=7).fit(x[:1000], epsilon=1.0)
    p2 = privrace.RaceSketch("l2", rows=ROWS, width=WIDTH, bandwidth=BANDWIDTH, seed=SEED + 1, hash_seed=7).fit(x[1000:],
                                                                                                        epsilon=1.0)
    with pytest.raises(ValueError, match="share their noise"):
        seeded().fit(x[:1000], epsilon=1.0).merge(seeded().fit(x[1000:], epsilon=1.0))
    p1.merge(p2)
    assert p1.is_private and p1.header["privacy"]["private"]


def test_sets_match_the_cli(cli, tmp_path):
    rng = np.random.default_rng(3)
    sets = [np.unique(rng.integers(0, 200, size=rng.integers(1, 30))) for _ in range(300)]
    path = tmp_path / "sets.txt"
    path.write_text("".join(" ".join(map(str, s)) + "\n" for s in sets))
    run_cli(cli, "sketch", "-i", path, "--kernel", "jaccard", "--rows", 40, "--width", 64, "--seed", 7,
            "--epsilon", 2.0, "-o", tmp_path / "sets.rsk", "-q")
    sk = privrace.RaceSketch("jaccard", rows=40, width=64, seed=7).fit_sets(sets, epsilon=2.0)
    ref = privrace.RaceSketch.load(str(tmp_path / "sets.rsk"))
    assert np.array_equal(sk.counts, ref.counts)
    printed = run_cli(cli, "query", tmp_path / "sets.rsk", "--queries", path).stdout.split()
    assert printed == ["%.9g" % v for v in sk.query(sets)]


def test_unseeded_sketches_differ_and_are_fit_for_release(data):
    x, _, _, _, _ = data
    a = privrace.RaceSketch("l2", rows=10, width=16).fit(x, epsilon=1.0)
    b = privrace.RaceSketch("l2", rows=10, width=16).fit(x, epsilon=1.0)
    assert a.header["family"]["seed"] != b.header["family"]["seed"]
    assert a.header["privacy"]["fit_for_release"] is True
