"""privrace.FeatureSketch (rff, hist) against the `privrace` command: the same seeded release,
the same file but for the `build` record, M2M on the object equals M2M on the saved file,
merges under a shared hash seed, and refusals that name the Python arguments."""
import json
import struct

import numpy as np
import pytest

import privrace
from conftest import run_cli, write_csv

SEED = 77


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("feature")
    rng = np.random.default_rng(3)
    x = np.round(np.clip(rng.beta(2, 5, size=(3000, 3)), 0, 1) * 1024) / 1024  # exact in float32 and CSV
    return x, write_csv(d / "x.csv", x), d


def sketch_file(raw):
    """(header without its `build` record, payload bytes) of a sketch file (sketch_file.hpp's layout)."""
    assert raw[:8] == b"PRIVRACE"
    (length,) = struct.unpack_from("<Q", raw, 12)
    header = json.loads(raw[20:20 + length])
    header.pop("build", None)
    return header, raw[20 + length:-4]  # the CRC covers the header too


KINDS = {
    "rff": (dict(features=40, sigma=0.5), ["--features", 40, "--sigma", 0.5]),
    "hist": (dict(bins=8, domain=(0, 1)), ["--bins", 8, "--domain", "0:1"]),
    "hist_per_attribute": (dict(bins=6, domain=[(0, 1), (0, 2), (-1, 1)]),
                           ["--bins", 6, "--domain", "0:1,0:2,-1:1"]),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_seeded_sketch_is_the_cli_file_but_for_build(cli, data, name):
    x, csv, d = data
    kw, flags = KINDS[name]
    kernel = name.split("_")[0]
    cli_path = d / f"cli_{name}.rsk"
    run_cli(cli, "sketch", "-i", csv, "-o", cli_path, "--kernel", kernel, *flags, "--epsilon", 1.5,
            "--num-share", 0.9, "--seed", SEED, "-q")
    sk = privrace.FeatureSketch(kernel, **kw, seed=SEED, num_share=0.9).fit(x, epsilon=1.5)
    assert isinstance(sk, privrace.FeatureSketch) and isinstance(sk, privrace.RaceSketch)
    py_path = d / f"py_{name}.rsk"
    sk.save(str(py_path))
    assert sketch_file(py_path.read_bytes()) == sketch_file(cli_path.read_bytes())
    ref = privrace.FeatureSketch.load(str(cli_path))
    assert np.array_equal(sk.counts, ref.counts)
    assert sk.header["privacy"]["private"] and not sk.header["privacy"]["fit_for_release"]
    assert "points" not in sk.header["build"]  # no exact field in a private header
    assert sk.to_bytes() == py_path.read_bytes()


def test_m2m_on_the_object_equals_m2m_on_the_file(data, tmp_path):
    x, _, _ = data
    for kernel, kw, domain in (("rff", dict(features=40, sigma=0.5), (0.0, 1.0)), ("hist", dict(bins=8, domain=(0, 1)), None)):
        sk = privrace.FeatureSketch(kernel, **kw, seed=SEED).fit(x, epsilon=2.0)
        sk.save(str(tmp_path / f"{kernel}.rsk"))
        a = privrace.M2M(sk, domain=domain, samples=2000)
        b = privrace.M2M(str(tmp_path / f"{kernel}.rsk"), domain=domain, samples=2000)
        assert np.array_equal(a.mean(), b.mean()) and np.array_equal(a.cdf(), b.cdf())
        assert a.released_count == b.released_count
        assert np.all(np.abs(a.mean() - x.mean(axis=0)) < 0.15)


def test_merge_with_a_shared_hash_seed(data):
    x, _, _ = data
    a = privrace.FeatureSketch("rff", features=40, sigma=0.5, hash_seed=12).fit(x[:1500], epsilon=1.0)
    b = privrace.FeatureSketch("rff", features=40, sigma=0.5, hash_seed=12).fit(x[1500:], epsilon=1.0)
    sum_counts = a.counts + b.counts
    assert a.merge(b) is a
    assert np.array_equal(a.counts, sum_counts)
    assert a.header["privacy"]["fit_for_release"]
    c = privrace.FeatureSketch("rff", features=40, sigma=0.5, hash_seed=13).fit(x[:10], epsilon=1.0)
    with pytest.raises(ValueError, match="different"):
        a.merge(c)
    # like() of a feature sketch is a FeatureSketch with its public parameters and hash seed
    like = privrace.RaceSketch.like(a)
    assert isinstance(like, privrace.FeatureSketch) and like.get_params()["hash_seed"] == 12


def test_exact_counts_only_when_asked(data, tmp_path):
    x, _, _ = data
    sk = privrace.FeatureSketch("hist", bins=4, domain=(0, 1))
    with pytest.raises(ValueError, match="allow_non_private=True"):
        sk.fit(x, epsilon=None)
    sk.fit(x, epsilon=None, allow_non_private=True)
    assert not sk.header["privacy"]["private"] and sk.counts.sum() == 3 * len(x)
    with pytest.raises(ValueError, match="allow_non_private=True"):
        sk.save(str(tmp_path / "exact.rsk"))
    sk.save(str(tmp_path / "exact.rsk"), allow_non_private=True)
    with pytest.warns(privrace.NotFitForReleaseWarning):
        privrace.FeatureSketch.load(str(tmp_path / "exact.rsk"))


def test_refusals_name_python_arguments(data):
    x, _, _ = data
    with pytest.raises(ValueError, match="features="):
        privrace.FeatureSketch("rff")
    with pytest.raises(ValueError, match="features must be a positive even number"):
        privrace.FeatureSketch("rff", features=3)
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        privrace.FeatureSketch("rff", features=4, sigma=-1.0)
    with pytest.raises(ValueError, match="domain= do not apply to kernel rff"):
        privrace.FeatureSketch("rff", features=4, domain=(0, 1))
    with pytest.raises(ValueError, match="domain="):
        privrace.FeatureSketch("hist", bins=4)
    with pytest.raises(ValueError, match="bins="):
        privrace.FeatureSketch("hist", domain=(0, 1))
    with pytest.raises(ValueError, match="sigma= do not apply to kernel hist"):
        privrace.FeatureSketch("hist", bins=4, domain=(0, 1), sigma=1.0)
    with pytest.raises(ValueError, match=r"domain\[1\]"):
        privrace.FeatureSketch("hist", bins=4, domain=[(0, 1), (2, 1)])
    with pytest.raises(ValueError, match="num_share"):
        privrace.FeatureSketch("rff", features=4, num_share=1.5)
    with pytest.raises(ValueError, match="kernel must be rff or hist"):
        privrace.FeatureSketch("l2", features=4)
    with pytest.raises(ValueError, match="privrace.FeatureSketch"):
        privrace.RaceSketch("rff", rows=2, width=2)
    with pytest.raises(TypeError, match="features must be"):
        privrace.FeatureSketch("rff", features="many")
    with pytest.raises(ValueError, match="epsilon must be a positive number"):
        privrace.FeatureSketch("rff", features=4).fit(x, epsilon=-1.0)
    with pytest.raises(ValueError, match="privrace.M2M"):
        privrace.FeatureSketch("rff", features=4, seed=1).fit(x, epsilon=1.0).query(x[:2])


def test_loading_the_other_class_is_refused(data, tmp_path):
    x, _, _ = data
    privrace.FeatureSketch("rff", features=4, seed=1).fit(x, epsilon=1.0).save(str(tmp_path / "f.rsk"))
    privrace.RaceSketch("l2", rows=4, width=8, seed=1).fit(x, epsilon=1.0).save(str(tmp_path / "r.rsk"))
    with pytest.raises(ValueError, match="FeatureSketch.load"):
        privrace.RaceSketch.load(str(tmp_path / "f.rsk"))
    with pytest.raises(ValueError, match="RaceSketch.load"):
        privrace.FeatureSketch.load(str(tmp_path / "r.rsk"))


def test_dataframes_are_read_when_pandas_is_installed(data):
    pd = pytest.importorskip("pandas")
    x, _, _ = data
    a = privrace.FeatureSketch("hist", bins=5, domain=(0, 1), seed=2).fit(pd.DataFrame(x), epsilon=1.0)
    b = privrace.FeatureSketch("hist", bins=5, domain=(0, 1), seed=2).fit(x, epsilon=1.0)
    assert np.array_equal(a.counts, b.counts)
