"""privrace.dask: a sketch of a Dask collection equals the one-process sketch, byte for byte.

One LocalCluster (worker processes, one thread each) serves the whole module."""
import os
import pickle
import re

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402
import dask.bag as db  # noqa: E402

import privrace  # noqa: E402
import privrace.dask  # noqa: E402
from privrace import _core  # noqa: E402

from conftest import grid_points  # noqa: E402

SKETCH = dict(rows=64, width=128, bandwidth=2.0, seed=11)
SETS = dict(rows=96, width=256, seed=5)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def points():
    return grid_points(15000, 3, seed=3)


def fitted(x, threads=1, **fit):
    fit.setdefault("epsilon", 1.0)
    return privrace.RaceSketch("l2", **SKETCH).fit(x, threads=threads, **fit)


def saved_bytes(sk, path, **kw):
    sk.save(str(path), **kw)
    with open(path, "rb") as f:
        return f.read()


def assert_count_in_report_only(sk, n):
    """A private release's header holds no exact field; the in-memory fit report has the count."""
    assert sk.is_private
    assert "points" not in sk.header["build"] and "input" not in sk.header["build"], sk.header["build"]
    assert sk.fit_report["points"] == n


def dask_sketch(collection, kernel="l2", params=SKETCH, **kw):
    kw.setdefault("epsilon", 1.0)
    return privrace.dask.sketch(collection, kernel, **params, **kw)


# ---------------------------------------------------------------------------------------------
# Equal to one process

@pytest.mark.parametrize("chunks", [15000, (5000, 7001, 2999)], ids=["1-partition", "3-uneven-partitions"])
def test_dense_array_equals_fit_byte_for_byte(client, points, tmp_path, chunks):
    x = da.from_array(points, chunks=(chunks, 3))
    got = dask_sketch(x)
    want = fitted(points)
    assert got.is_private and got.header["privacy"]["noise_source"] == want.header["privacy"]["noise_source"]
    assert saved_bytes(got, tmp_path / "dask.rsk") == saved_bytes(want, tmp_path / "one.rsk")
    # Counts do not depend on the thread count of either side.
    np.testing.assert_array_equal(got.counts, fitted(points, threads=2).counts)
    np.testing.assert_array_equal(got.query(points[:50]), want.query(points[:50]))


def test_dense_float32_three_aligned_partitions_written_by_the_call(client, points, tmp_path):
    x32 = points.astype(np.float32)
    out = tmp_path / "dask.rsk"
    got = dask_sketch(da.from_array(x32, chunks=(4096, 3)), path=str(out))
    assert_count_in_report_only(got, len(points))
    with open(out, "rb") as f:
        assert f.read() == saved_bytes(fitted(x32), tmp_path / "one.rsk")


def test_dataframe_equals_fit(client, points, tmp_path):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"a": points[:, 0], "b": np.round(points[:, 1]).astype(np.int64), "c": points[:, 2]})
    got = dask_sketch(dd.from_pandas(frame, npartitions=3))
    assert saved_bytes(got, tmp_path / "dask.rsk") == saved_bytes(fitted(frame.to_numpy()), tmp_path / "one.rsk")


def random_sets(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.choice(5000, size=int(rng.integers(1, 40)), replace=False) for _ in range(n)]


@pytest.mark.parametrize("npartitions", [1, 3])
def test_sets_equal_fit_sets_byte_for_byte(client, tmp_path, npartitions):
    sets = random_sets(3000, seed=9)
    items = [set(s.tolist()) if i % 7 == 0 else s for i, s in enumerate(sets)]  # Python sets are accepted too
    got = dask_sketch(db.from_sequence(items, npartitions=npartitions), "jaccard", SETS)
    want = privrace.RaceSketch("jaccard", **SETS).fit_sets(sets, epsilon=1.0, threads=1)
    assert saved_bytes(got, tmp_path / "dask.rsk") == saved_bytes(want, tmp_path / "one.rsk")


def test_exact_release_without_privacy_equals_fit(client, points):
    x = da.from_array(points, chunks=(6000, 3))
    got = dask_sketch(x, epsilon=None, allow_non_private=True)
    want = fitted(points, epsilon=None, allow_non_private=True)
    assert not got.is_private
    np.testing.assert_array_equal(got.counts, want.counts)
    assert got.header == want.header


def test_unseeded_release_uses_os_noise_once(client, points):
    params = dict(SKETCH, seed=None)
    got = privrace.dask.sketch(da.from_array(points, chunks=(5000, 3)), "l2", epsilon=1.0, **params)
    privacy = got.header["privacy"]
    assert got.is_private and privacy["fit_for_release"] is True and privacy["noise_source"] != "seeded"
    assert_count_in_report_only(got, len(points))


def test_shared_hash_seed_merges_with_another_owners_release(client, points):
    # The partials travel pickled between worker processes: the hash seed goes with them.
    params = dict(SKETCH, seed=None, hash_seed=77)
    got = privrace.dask.sketch(da.from_array(points[:8000], chunks=(4096, 3)), "l2", epsilon=1.0, **params)
    other = privrace.RaceSketch.like(got).fit(points[8000:], epsilon=1.0)
    assert got.header["family"]["seed"] == other.header["family"]["seed"] == 77
    got.merge(other)
    assert got.header["privacy"]["fit_for_release"] is True


# ---------------------------------------------------------------------------------------------
# Partitions the user did not expect

def test_empty_partition_contributes_zeros(client, points):
    want = fitted(points).counts
    aligned = da.from_array(points, chunks=((4096, 0, len(points) - 4096), 3))  # the empty block reaches the engine
    assert aligned.numblocks[0] == 3 and aligned.chunks[0][1] == 0
    np.testing.assert_array_equal(dask_sketch(aligned).counts, want)
    unaligned = da.from_array(points, chunks=((5000, 0, 10000), 3))
    np.testing.assert_array_equal(dask_sketch(unaligned).counts, want)


def test_nan_names_partition_and_row_and_writes_nothing(client, points, tmp_path):
    bad = points.copy()
    bad[10000 + 10, 2] = np.nan  # partition 2 (rows 10001..15000), its row 11
    out = tmp_path / "never.rsk"
    msg = re.escape("data: partition 2: row 11 (row 10011 of the collection): column 3: value nan is not finite")
    with pytest.raises(ValueError, match=msg):
        dask_sketch(da.from_array(bad, chunks=(5000, 3)), path=str(out))
    assert not out.exists() and os.listdir(tmp_path) == []


def test_wrong_column_count_names_partition(client, points, tmp_path):
    good = dask.delayed(lambda: points[:5000])()
    wide = dask.delayed(lambda: np.ones((5000, 4)))()  # declared 3 columns, holds 4
    x = da.concatenate([da.from_delayed(good, (5000, 3), dtype=float), da.from_delayed(wide, (5000, 3), dtype=float)])
    out = tmp_path / "never.rsk"
    with pytest.raises(ValueError, match=re.escape("data: partition 1: row 1 (row 5001 of the collection): 4 columns, expected 3")):
        dask_sketch(x, path=str(out))
    assert os.listdir(tmp_path) == []


def test_bad_set_names_partition(client):
    items = [[1, 2], [3], [4, 5]] * 10 + [[1, -7]]  # item 30: partition 2, its item 8
    with pytest.raises(ValueError, match=re.escape("sets: partition 2: sets[8]: element id -7 is outside 0..4294967295")):
        dask_sketch(db.from_sequence(items, partition_size=11), "jaccard", SETS)


def test_collections_without_records_are_refused(client):
    with pytest.raises(ValueError, match="the array has no rows"):
        dask_sketch(da.zeros((0, 3), chunks=(10, 3)))
    with pytest.raises(ValueError, match="no records"):
        dask_sketch(db.from_sequence([[]], npartitions=1).filter(lambda s: len(s) > 0), "jaccard", SETS)


def test_bad_parameters_fail_before_any_task(points):
    x = da.from_array(points, chunks=(5000, 3))
    with pytest.raises(ValueError, match="rows must be at least 1"):
        privrace.dask.sketch(x, "l2", rows=0, width=8, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon is required"):
        privrace.dask.sketch(x, "l2", rows=8, width=8, epsilon=None)
    with pytest.raises(ValueError, match="sketches sets"):
        privrace.dask.sketch(x, "jaccard", rows=8, width=8, epsilon=1.0)
    with pytest.raises(ValueError, match="sketches dense records"):
        privrace.dask.sketch(db.from_sequence([[1]]), "l2", rows=8, width=8, epsilon=1.0)
    with pytest.raises(TypeError, match="dask array"):
        privrace.dask.sketch(points, "l2", rows=8, width=8, epsilon=1.0)
    with pytest.raises(ValueError, match="2-D"):
        privrace.dask.sketch(da.zeros(10, chunks=5), "l2", rows=8, width=8, epsilon=1.0)


# ---------------------------------------------------------------------------------------------
# The exact partial counts

def partial(x, first_row=0, **kw):
    args = dict(SKETCH)
    fit = dict(epsilon=1.0, threads=1)
    args.update({k: kw.pop(k) for k in list(kw) if k in args})
    fit.update(kw)
    master, fixed = _core._resolve_master(args["seed"])
    return _core.RaceSketch("l2", **args)._exact_partial(x, master=master, fixed=fixed, dim=x.shape[1],
                                                       first_row=first_row, partition_starts=[first_row], **fit)


def test_mismatched_partials_are_not_combined(points):
    a = partial(points[:4096])
    for other, field in [(partial(points[4096:], 4096, rows=65), "rows"), (partial(points[4096:], 4096, epsilon=2.0), "epsilon"),
                         (partial(points[4096:], 4096, seed=12), "seed"),
                         (partial(points[4096:], 4096, mechanism="gaussian", delta=1e-6), "mechanism")]:
        with pytest.raises(ValueError, match=f"cannot combine exact partial counts: part 1 has a different {field}"):
            _core._combine([a, other])
    np.testing.assert_array_equal(_core._release(_core._combine([a, partial(points[4096:], 4096)])).counts,
                                  fitted(points).counts)


def test_exact_partial_has_no_way_to_a_file(points, tmp_path):
    p = partial(points)
    for name in ("save", "write", "dump", "tofile", "to_file", "counts", "header", "__array__", "__buffer__"):
        assert not hasattr(p, name), name
    assert re.fullmatch(r"ExactPartial\(kernel='l2', rows=64, width=128, exact counts in memory, not private\)", repr(p))
    with pytest.raises(TypeError):
        _core.ExactPartial()
    with pytest.raises(TypeError):
        privrace.RaceSketch.save(p, str(tmp_path / "x.rsk"))
    assert os.listdir(tmp_path) == []
    # Transport between workers: pickled to bytes in memory, the same counts after.
    moved = pickle.loads(pickle.dumps(p))
    assert _core._release(moved).counts.tolist() == fitted(points).counts.tolist()
    # Released once: the partial is spent, so its exact counts cannot be noised twice.
    with pytest.raises(ValueError, match="released already"):
        _core._release(moved)
    with pytest.raises(ValueError, match="released already"):
        pickle.dumps(moved)


# ---------------------------------------------------------------------------------------------
# A worker that dies

def test_a_worker_killed_mid_sketch_is_replaced_and_the_sketch_is_unchanged(points, tmp_path):
    """SIGKILL of the worker process computing a partition, the first time that partition is
    computed: the nanny restarts the worker, the scheduler reruns the lost task, and the sketch
    (and the file the call writes) is byte for byte the one-process sketch; no temporary is left.
    Partials are deterministic functions of their partition and the seed, so a rerun changes nothing."""
    marker = tmp_path / "killed-once"

    def partition(block, block_id=None):
        if block_id[0] == 1 and not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), 9)
        return block

    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                       silence_logs=50)
    c = distributed.Client(cluster)
    try:
        x = da.from_array(points, chunks=(5000, 3)).map_blocks(partition, dtype=points.dtype)
        out_dir = tmp_path / "out"
        out_dir.mkdir()
        got = dask_sketch(x, path=str(out_dir / "dask.rsk"))
    finally:
        c.close()
        cluster.close()
    assert marker.exists(), "the worker was never killed: the test did not test anything"
    with open(out_dir / "dask.rsk", "rb") as f:
        assert f.read() == saved_bytes(fitted(points), tmp_path / "one.rsk")
    assert sorted(p.name for p in out_dir.iterdir()) == ["dask.rsk"]
    assert_count_in_report_only(got, len(points))
