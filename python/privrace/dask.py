"""privrace.dask: a private RACE sketch of a Dask collection, equal to the one-process sketch.

    import dask.array as da, privrace.dask
    X = da.from_array(data, chunks=(4096 * 64, None))       # rows x attributes
    sk = privrace.dask.sketch(X, "l2", rows=1000, width=1000, bandwidth=2.0, epsilon=1.0)
    sk.query(Q); sk.save("data.rsk")                        # a privrace.RaceSketch

`collection` is a dask array (records x attributes), a dask dataframe (numeric columns), or, for
the jaccard kernels, a dask bag of sets (each item an integer array, list or Python set). Each
partition builds its EXACT counts with the engine on a worker (the GIL released); the exact
partial counts are summed by a tree reduction (`split_every` parts at a time), and noise is added
ONCE, to the sum, on the calling process, exactly as RaceSketch.fit adds it. A seeded sketch
(seed=S) is therefore the one-process sketch count for count, noise draw for noise draw, and
its saved file is the same bytes. As with fit, a private release's header holds no exact field:
the record count is in the returned sketch's fit_report (in memory) only.

Dense rows are hashed in batches of 4096 rows on a grid of global row indices (one GEMM per
batch, as one process does): partitions whose first rows are not on that grid are re-chunked so
that every block starts on it (each block then begins where one process begins a batch). Chunks
that are multiples of 4096 rows avoid that step.

Exact partial counts travel between workers only as `privrace._core.ExactPartial` objects in
memory (pickled to bytes): they have no save or write method, and nothing exact is written to a
file. See docs/distributed.md.
"""
import numpy as np

from . import _core

__all__ = ["sketch", "BATCH_ROWS"]

# The engine's hashing batch (BuildOptions::batch): blocks of a dense collection start on
# multiples of it.
BATCH_ROWS = 4096


def sketch(collection, kernel="l2", *, rows, width, bandwidth=1.0, power=1, seed=None, pair_mode="query",
           hash_seed=None, epsilon, mechanism="discrete_laplace", delta=0.0, neighbors="add-remove", allow_non_private=False,
           threads=1, strategy="auto", split_every=8, path=None, scheduler=None):
    """A released RaceSketch of a Dask collection, equal to RaceSketch(...).fit(...) of its rows.

    The parameters are those of privrace.RaceSketch (kernel, rows, width, bandwidth, power, seed,
    pair_mode, hash_seed) and of its fit / fit_sets (epsilon, mechanism, delta, neighbors,
    allow_non_private, strategy). threads: OpenMP threads per partition build (default 1: the
    Dask workers are the parallelism; the counts do not depend on it). split_every: exact
    partials summed per task of the tree reduction. path: also save the release there (nothing
    is written when the call fails). scheduler: passed to dask.compute (default: the active
    distributed Client, else Dask's default).
    """
    import dask

    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer of at least 2, got {split_every!r}")
    sketch_args = dict(kernel=kernel, rows=rows, width=width, bandwidth=bandwidth, power=power, seed=seed,
                       pair_mode=pair_mode, hash_seed=hash_seed)
    fit_args = dict(epsilon=epsilon, mechanism=mechanism, delta=delta, neighbors=neighbors, threads=threads,
                    allow_non_private=allow_non_private, strategy=strategy)
    base = _core.RaceSketch(**sketch_args)  # checks R, W, the kernel, ... before any data is read
    master, fixed = _core._resolve_master(seed)  # once for the whole collection: the same seeds everywhere
    sets = _is_bag(collection)

    # The parameters and the kind of collection, checked on an empty input before any task runs.
    if sets:
        base._exact_partial_sets([], master=master, fixed=fixed, partition=0, **fit_args)
        partials = _set_partials(collection, sketch_args, fit_args, master, fixed)
    else:
        arr, what = _dense_array(collection, scheduler)
        dim = int(arr.shape[1])
        base._exact_partial(np.empty((0, dim), np.float32), master=master, fixed=fixed, dim=dim, first_row=0,
                            partition_starts=[0], **fit_args)
        partials = _dense_partials(arr, what, dim, sketch_args, fit_args, master, fixed)

    root = _tree_sum(partials, split_every)
    (exact,) = dask.compute(root, scheduler=scheduler)
    released = _core._release(exact)  # noise once, here
    if path is not None:
        released.save(path, allow_non_private=allow_non_private)
    return released


# ---------------------------------------------------------------------------------------------
# Collections

def _is_bag(collection):
    try:
        import dask.bag as db
    except ImportError:  # pragma: no cover - dask.bag ships with dask
        return False
    return isinstance(collection, db.Bag)


def _dense_array(collection, scheduler):
    """The collection as a dask array of rows x attributes, its row chunks known, and what it was."""
    import dask.array as da

    if isinstance(collection, da.Array):
        arr, what = collection, "array"
    else:
        dd = None
        try:
            import dask.dataframe as dd
        except ImportError:  # dask.dataframe needs pandas
            pass
        if dd is not None and isinstance(collection, dd.Series):
            collection = collection.to_frame()
        if dd is None or not isinstance(collection, dd.DataFrame):
            raise TypeError("collection must be a dask array (records x attributes), a dask dataframe (numeric "
                            f"columns) or a dask bag of sets, got {type(collection).__name__}")
        bad = [f"{c!r} ({t})" for c, t in collection.dtypes.items() if t.kind not in "fiub"]
        if bad:
            raise ValueError("every column of the dataframe must be numeric (float, integer or bool); not: " +
                             ", ".join(bad))
        if len(collection.columns) == 0:
            raise ValueError("the dataframe has no columns")
        lengths = collection.map_partitions(len).compute(scheduler=scheduler)
        arr, what = collection.to_dask_array(lengths=[int(n) for n in lengths]), "dataframe"
    if arr.ndim != 2:
        raise ValueError(f"the dask array must be 2-D (records x attributes), got shape {arr.shape}")
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"the dask array has dtype {arr.dtype}; expected a numeric array (float32 or float64)")
    if np.isnan(arr.shape[1]):
        raise ValueError("the dask array's number of columns is unknown; give its chunks")
    if int(arr.shape[1]) == 0:
        raise ValueError(f"the dask array has no columns (shape {arr.shape})")
    if len(arr.chunks[1]) > 1:
        arr = arr.rechunk({1: -1})  # one block per partition of rows
    if any(np.isnan(c) for c in arr.chunks[0]):
        arr = arr.compute_chunk_sizes()  # the global row of every partition's first record
    return arr, what


def _check_block(block, block_info=None, *, dim):
    """One of the user's partitions before it is re-chunked: its shape, named by partition."""
    i = block_info[0]["chunk-location"][0]
    start, stop = block_info[0]["array-location"][0]
    shape = getattr(block, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"data: partition {i}: expected a 2-D block of rows x {dim} attributes, got shape {shape}")
    if shape[1] != dim:
        raise ValueError(f"data: partition {i}: row 1 (row {start + 1} of the collection): {shape[1]} columns, "
                         f"expected {dim}")
    if shape[0] != stop - start:
        raise ValueError(f"data: partition {i}: {shape[0]} rows, expected {stop - start} (the collection's chunk sizes)")
    return block


def _dense_partials(arr, what, dim, sketch_args, fit_args, master, fixed):
    import dask

    lengths = [int(n) for n in arr.chunks[0]]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # exclusive scan; starts[-1] = total
    total = int(starts[-1])
    if total == 0:
        raise ValueError(f"the {what} has no rows")
    arr = arr.map_blocks(_check_block, dim=dim, dtype=arr.dtype, meta=np.empty((0, 0), dtype=arr.dtype))
    # Blocks on the 4096-row grid: block i begins at partition i's first grid point (its rows
    # before that point complete a batch begun in an earlier partition, as in one process).
    grid = [min(total, -(-int(s) // BATCH_ROWS) * BATCH_ROWS) for s in starts[:-1]] + [total]
    if grid[:-1] != [int(s) for s in starts[:-1]]:
        bounds = sorted(set(grid))
        arr = arr.rechunk((tuple(b - a for a, b in zip(bounds[:-1], bounds[1:])), dim))
        block_starts = bounds[:-1]
    else:
        block_starts = [int(s) for s in starts[:-1]]
    blocks = arr.to_delayed().ravel()
    assert len(blocks) == len(block_starts)
    part = dask.delayed(_dense_partial, pure=True)
    out = []
    user_starts = starts[:-1]
    for block, (b0, b1) in zip(blocks, zip(block_starts, block_starts[1:] + [total])):
        # The user's partitions this block overlaps (for messages).
        k0 = int(np.searchsorted(user_starts, b0, side="right")) - 1
        k1 = max(k0 + 1, int(np.searchsorted(user_starts, b1, side="left")))
        out.append(part(block, sketch_args, fit_args, master, fixed, dim, b0, user_starts[k0:k1].tolist(), k0))
    return out


def _dense_partial(block, sketch_args, fit_args, master, fixed, dim, first_row, partition_starts, first_partition):
    base = _core.RaceSketch(**sketch_args)
    return base._exact_partial(block, master=master, fixed=fixed, dim=dim, first_row=first_row,
                               partition_starts=partition_starts, first_partition=first_partition, **fit_args)


def _set_partials(bag, sketch_args, fit_args, master, fixed):
    import dask

    # A set's MinHash codes depend on the set alone, not on its place: no alignment is needed.
    part = dask.delayed(_set_partial, pure=True)
    return [part(p, sketch_args, fit_args, master, fixed, i) for i, p in enumerate(bag.to_delayed())]


def _set_partial(items, sketch_args, fit_args, master, fixed, partition):
    sets = [np.fromiter(s, dtype=np.int64, count=len(s)) if isinstance(s, (set, frozenset)) else s for s in items]
    base = _core.RaceSketch(**sketch_args)
    return base._exact_partial_sets(sets, master=master, fixed=fixed, partition=partition, **fit_args)


# ---------------------------------------------------------------------------------------------
# The exact sum

def _tree_sum(partials, split_every):
    """Exact int64 sums, `split_every` partials per task, level by level, to one root."""
    import dask

    combine = dask.delayed(_combine, pure=True)
    level = list(partials)
    while len(level) > 1:
        level = [combine(level[i:i + split_every]) if len(level[i:i + split_every]) > 1 else level[i]
                 for i in range(0, len(level), split_every)]
    return level[0]


def _combine(parts):
    return _core._combine(list(parts))
