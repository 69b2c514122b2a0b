"""to_bytes/from_bytes and pickling of RaceSketch and FeatureSketch (the bytes are the sketch file
format, through the library's writer and reader), and scikit-learn's get_params/set_params."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import privrace
from conftest import grid_points


@pytest.fixture(scope="module")
def x():
    return np.clip(grid_points(2000, 3, seed=4, scale=1.0), -1, 1)


def make(kind, **kw):
    if kind == "race":
        return privrace.RaceSketch("l2", rows=20, width=16, bandwidth=1.5, **kw)
    if kind == "rff":
        return privrace.FeatureSketch("rff", features=16, sigma=0.7, **kw)
    return privrace.FeatureSketch("hist", bins=5, domain=[(-1, 1), (-1, 1), (-1, 1)], **kw)


KINDS = ["race", "rff", "hist"]
RELEASES = {"private": dict(epsilon=1.0), "seeded": dict(epsilon=1.0), "exact": dict(epsilon=None, allow_non_private=True)}


def fitted(kind, release, x):
    return make(kind, **({} if release == "private" else dict(seed=9))).fit(x, **RELEASES[release])


def same(a, b):
    assert type(a) is type(b)
    assert np.array_equal(a.counts, b.counts)
    assert a.header == b.header
    assert a.get_params() == b.get_params()


@pytest.mark.parametrize("release", sorted(RELEASES))
@pytest.mark.parametrize("kind", KINDS)
def test_bytes_round_trip(kind, release, x, tmp_path):
    sk = fitted(kind, release, x)
    b = sk.to_bytes()
    assert b[:8] == b"PRIVRACE"
    back = type(sk).from_bytes(b)
    assert np.array_equal(back.counts, sk.counts) and back.header == sk.header
    if release != "exact":  # the bytes are the file save writes
        sk.save(str(tmp_path / "s.rsk"))
        assert (tmp_path / "s.rsk").read_bytes() == b


@pytest.mark.parametrize("release", sorted(RELEASES))
@pytest.mark.parametrize("kind", KINDS)
def test_pickle_round_trip(kind, release, x):
    sk = fitted(kind, release, x)
    back = pickle.loads(pickle.dumps(sk))
    same(sk, back)
    same(sk, copy.deepcopy(sk))
    assert back.fitted and back.is_private == (release != "exact")
    if release == "exact":  # the flag travels: the copy pickles again
        same(sk, pickle.loads(pickle.dumps(back)))


def test_unpickling_a_not_fit_sketch_warns(x):
    data = pickle.dumps(fitted("race", "seeded", x))
    with pytest.warns(privrace.NotFitForReleaseWarning):
        pickle.loads(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.loads(pickle.dumps(fitted("rff", "private", x)))  # fit for release: no warning


def test_exact_counts_pickle_only_from_an_allowed_fit(x, tmp_path):
    sk = fitted("hist", "exact", x)
    sk.save(str(tmp_path / "e.rsk"), allow_non_private=True)
    loaded = privrace.FeatureSketch.load(str(tmp_path / "e.rsk"))
    with pytest.raises(ValueError, match="allow_non_private=True"):
        pickle.dumps(loaded)
    with pytest.raises(ValueError, match="allow_non_private=True"):
        loaded.to_bytes()
    again = privrace.FeatureSketch.from_bytes(loaded.to_bytes(allow_non_private=True))
    assert np.array_equal(again.counts, sk.counts)
    with pytest.raises(ValueError, match="allow_non_private=True"):
        pickle.dumps(again)


@pytest.mark.parametrize("kind", KINDS)
def test_unfitted_round_trip_keeps_the_parameters(kind, x):
    sk = make(kind, seed=5, hash_seed=6)
    back = pickle.loads(pickle.dumps(sk))
    assert type(back) is type(sk) and not back.fitted
    assert back.get_params() == sk.get_params()
    assert np.array_equal(back.fit(x, epsilon=1.0).counts, sk.fit(x, epsilon=1.0).counts)  # same seed, same release
    with pytest.raises(ValueError, match="not fitted"):
        make(kind).to_bytes()


def test_from_bytes_refuses_the_other_class_and_damage(x):
    race = fitted("race", "seeded", x).to_bytes()
    rff = fitted("rff", "seeded", x).to_bytes()
    with pytest.raises(ValueError, match="FeatureSketch"):
        privrace.RaceSketch.from_bytes(rff)
    with pytest.raises(ValueError, match="RaceSketch"):
        privrace.FeatureSketch.from_bytes(race)
    with pytest.raises(ValueError):
        privrace.RaceSketch.from_bytes(race[:-3])


def test_get_params_and_set_params():
    sk = privrace.RaceSketch("angular", rows=8, width=4)
    assert sk.get_params() == dict(kernel="angular", rows=8, width=4, bandwidth=1.0, power=1, seed=None,
                                   pair_mode="query", hash_seed=None)
    assert sk.get_params(deep=False) == sk.get_params()
    assert sk.set_params(rows=10, seed=3) is sk
    assert sk.get_params()["rows"] == 10 and sk.get_params()["seed"] == 3
    with pytest.raises(ValueError, match=r"invalid parameter\(s\) 'rowz', 'x' for RaceSketch"):
        sk.set_params(rowz=1, x=2)
    with pytest.raises(ValueError, match="rows must be at least 1"):
        sk.set_params(rows=0)
    assert sk.get_params()["rows"] == 10  # unchanged when refused
    dom = [(0, 1), (0, 2)]
    fs = privrace.FeatureSketch("hist", bins=3, domain=dom)
    assert fs.get_params()["domain"] is dom  # the objects as given (scikit-learn's clone checks identity)
    assert fs.set_params(bins=7).get_params()["bins"] == 7
    with pytest.raises(ValueError, match="for FeatureSketch"):
        fs.set_params(rows=3)
    with pytest.raises(ValueError, match="sigma= do not apply to kernel hist"):
        fs.set_params(sigma=2.0)
    rebuilt = type(fs)(**fs.get_params())
    assert rebuilt.get_params() == fs.get_params()


def test_loaded_sketch_reports_its_header_parameters(x, tmp_path):
    make("rff", seed=2).fit(x, epsilon=1.0).save(str(tmp_path / "f.rsk"))
    p = privrace.FeatureSketch.load(str(tmp_path / "f.rsk")).get_params()
    assert p["kernel"] == "rff" and p["features"] == 16 and p["sigma"] == 0.7 and p["seed"] is None


def test_sklearn_clone():
    base = pytest.importorskip("sklearn.base")
    sk = privrace.FeatureSketch("rff", features=8, sigma=0.3, seed=4)
    c = base.clone(sk)
    assert type(c) is privrace.FeatureSketch and c is not sk and c.get_params() == sk.get_params()
    r = base.clone(privrace.RaceSketch("l2", rows=3, width=5, bandwidth=2.5))
    assert r.get_params()["bandwidth"] == 2.5
