"""What a Python release holds and says: no exact field in a private header, public hash seeds
that let owners' releases merge (hash_seed, RaceSketch.like), NotFitForReleaseWarning for seeded
or exact sketches, and refusals in Python's words."""
import math
import warnings

import numpy as np
import pytest

import privrace
from conftest import grid_points, run_cli, write_csv

PARAMS = dict(rows=200, width=64, bandwidth=2.0)


@pytest.fixture(scope="module")
def x():
    return grid_points(6000, 3, seed=1)


def no_warnings():
    """Every warning an error inside the block (the suite ignores NotFitForReleaseWarning elsewhere)."""
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("error")
    return w


# ---------------------------------------------------------------------------------------------
# The exact record count stays in memory

def test_private_header_holds_no_exact_count(x, tmp_path):
    sk = privrace.RaceSketch("l2", **PARAMS).fit(x, epsilon=1.0)
    assert set(sk.header["build"]) <= {"threads", "strategy"}, sk.header["build"]
    assert sk.fit_report["points"] == len(x)
    sk.save(str(tmp_path / "p.rsk"))
    assert b'"points"' not in (tmp_path / "p.rsk").read_bytes()
    assert "points" not in privrace.RaceSketch.load(str(tmp_path / "p.rsk")).header["build"]
    sets = [np.arange(i % 20, i % 20 + 5) for i in range(300)]
    js = privrace.RaceSketch("jaccard", rows=20, width=32).fit_sets(sets, epsilon=1.0)
    assert "points" not in js.header["build"] and js.fit_report["points"] == 300


def test_exact_header_keeps_its_count(x):
    sk = privrace.RaceSketch("l2", **PARAMS, seed=1).fit(x, epsilon=None, allow_non_private=True)
    assert sk.header["build"]["points"] == len(x)


# ---------------------------------------------------------------------------------------------
# Public hash seeds: owners' releases merge

def test_owners_sharing_a_hash_seed_merge_and_stay_fit_for_release(x):
    S = 987654321
    half_a, half_b = x[:2500], x[2500:]
    a = privrace.RaceSketch("l2", **PARAMS, hash_seed=S).fit(half_a, epsilon=0.5)
    b = privrace.RaceSketch("l2", **PARAMS, hash_seed=S).fit(half_b, epsilon=0.5)
    for part in (a, b):
        assert part.header["family"]["seed"] == S
        assert part.header["privacy"]["fit_for_release"] is True and part.header["privacy"]["noise_source"] != "seeded"
    exact_a = privrace.RaceSketch("l2", **PARAMS, hash_seed=S).fit(half_a, epsilon=None, allow_non_private=True)
    exact_b = privrace.RaceSketch("l2", **PARAMS, hash_seed=S).fit(half_b, epsilon=None, allow_non_private=True)
    assert not np.array_equal(a.counts, b.counts)
    w = no_warnings()
    try:
        a.merge(b)  # fit for release: not a word
        a.query(x[:10])
    finally:
        w.__exit__(None, None, None)
    privacy = a.header["privacy"]
    assert privacy["fit_for_release"] is True
    noise = (a.counts - exact_a.counts - exact_b.counts).astype(float)
    variance = privacy["noise_variance"]  # the parts' recorded variances, summed
    assert variance > 0
    n = noise.size
    assert abs(noise.mean()) < 6 * math.sqrt(variance / n), (noise.mean(), variance)
    assert 0.8 * variance < noise.var() < 1.25 * variance, (noise.var(), variance)


def test_like_copies_every_public_parameter(x, tmp_path):
    a = privrace.RaceSketch("angular_pair", rows=30, width=16, power=3, pair_mode="insert").fit(x, epsilon=1.0)
    for other in (a, str(tmp_path / "a.rsk")):
        if isinstance(other, str):
            a.save(other)
        b = privrace.RaceSketch.like(other)
        assert not b.fitted
        b.fit(x[:100], epsilon=2.0)
        fa, fb = a.header["family"], b.header["family"]
        assert fa == fb  # kernel, rows, power, pair mode, dimension and the hash seed
        assert b.header["width"] == a.header["width"] and b.header["privacy"]["fit_for_release"] is True
        a2 = privrace.RaceSketch.like(a).fit(x[100:200], epsilon=1.0)
        b.merge(a2)
    # An unfitted sketch: its hash seed, or the one its seed derives.
    u = privrace.RaceSketch("l2", **PARAMS, hash_seed=5)
    assert privrace.RaceSketch.like(u).fit(x, epsilon=1.0).header["family"]["seed"] == 5
    seeded = privrace.RaceSketch("l2", **PARAMS, seed=9)
    like_seeded = privrace.RaceSketch.like(seeded).fit(x, epsilon=1.0)
    assert like_seeded.header["family"]["seed"] == seeded.fit(x, epsilon=1.0).header["family"]["seed"]
    assert like_seeded.header["privacy"]["fit_for_release"] is True  # the noise is not seeded
    with pytest.raises(ValueError, match="hash_seed="):
        privrace.RaceSketch.like(privrace.RaceSketch("l2", **PARAMS))


def test_like_a_feature_sketch_file(cli, x, tmp_path):
    csv = write_csv(tmp_path / "x.csv", x[:3000])
    run_cli(cli, "sketch", "-i", csv, "--kernel", "rff", "--features", 64, "--sigma", 2.0, "--epsilon", 1.0,
            "-o", tmp_path / "a.rsk", "-q")
    b = privrace.RaceSketch.like(str(tmp_path / "a.rsk")).fit(x[3000:], epsilon=1.0)
    a_header = run_cli(cli, "info", tmp_path / "a.rsk").stdout
    assert b.header["family"]["kernel"] == "rff" and str(b.header["family"]["seed"]) in a_header
    with pytest.raises(ValueError, match="privrace.M2M"):
        b.query(x[:3])
    b.save(str(tmp_path / "b.rsk"))
    run_cli(cli, "merge", tmp_path / "a.rsk", tmp_path / "b.rsk", "-o", tmp_path / "ab.rsk")
    m = privrace.M2M(str(tmp_path / "ab.rsk"), domain=(-6.0, 6.0), samples=2000)
    assert m.mean().shape == (3,)


# ---------------------------------------------------------------------------------------------
# Not fit for release: a warning on load, merge and query

def test_seeded_and_exact_sketches_warn(x, tmp_path):
    assert issubclass(privrace.NotFitForReleaseWarning, UserWarning)
    # Seeded noise of two seeds on shared hash functions: they merge, and each warns.
    seeded = privrace.RaceSketch("l2", **PARAMS, seed=3, hash_seed=21).fit(x[:3000], epsilon=1.0)
    with pytest.warns(privrace.NotFitForReleaseWarning, match="query"):
        seeded.query(x[:5])
    with pytest.warns(privrace.NotFitForReleaseWarning):
        seeded.kernel_sums(x[:5])
    seeded.save(str(tmp_path / "s.rsk"))
    with pytest.warns(privrace.NotFitForReleaseWarning, match="load"):
        privrace.RaceSketch.load(str(tmp_path / "s.rsk"))
    other = privrace.RaceSketch("l2", **PARAMS, seed=4, hash_seed=21).fit(x[3000:], epsilon=1.0)
    with pytest.warns(privrace.NotFitForReleaseWarning, match="merge"):
        seeded.merge(other)
    exact = privrace.RaceSketch("l2", **PARAMS, seed=3).fit(x, epsilon=None, allow_non_private=True)
    with pytest.warns(privrace.NotFitForReleaseWarning):
        exact.query(x[:5])
    # Warnings as errors: the merge is refused before it changes the target.
    before = seeded.counts
    w = no_warnings()
    try:
        with pytest.raises(privrace.NotFitForReleaseWarning):
            seeded.merge(privrace.RaceSketch("l2", **PARAMS, seed=5, hash_seed=21).fit(x[:10], epsilon=1.0))
    finally:
        w.__exit__(None, None, None)
    assert np.array_equal(seeded.counts, before)


def test_a_release_fit_for_release_is_silent(x, tmp_path):
    sk = privrace.RaceSketch("l2", **PARAMS).fit(x, epsilon=1.0)
    w = no_warnings()
    try:
        sk.query(x[:5])
        sk.save(str(tmp_path / "p.rsk"))
        privrace.RaceSketch.load(str(tmp_path / "p.rsk")).merge(privrace.RaceSketch.like(sk).fit(x[:50], epsilon=1.0))
    finally:
        w.__exit__(None, None, None)


# ---------------------------------------------------------------------------------------------
# Python's words

def test_refusal_to_save_exact_counts_names_the_python_argument(x, tmp_path):
    exact = privrace.RaceSketch("l2", **PARAMS, seed=1).fit(x, epsilon=None, allow_non_private=True)
    with pytest.raises(ValueError) as err:
        exact.save(str(tmp_path / "exact.rsk"))
    assert "allow_non_private=True" in str(err.value) and "--no-privacy" not in str(err.value)
    assert not (tmp_path / "exact.rsk").exists()


def test_refusal_to_merge_shared_noise_names_the_python_arguments(x):
    a = privrace.RaceSketch("l2", **PARAMS, seed=3).fit(x[:3000], epsilon=1.0)
    b = privrace.RaceSketch("l2", **PARAMS, seed=3).fit(x[3000:], epsilon=1.0)
    with pytest.raises(ValueError, match="cannot merge") as err:
        a.merge(b)
    assert "--" not in str(err.value), err.value
    with pytest.raises(ValueError, match="with itself"):
        a.merge(a)
