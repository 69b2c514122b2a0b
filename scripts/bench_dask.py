#!/usr/bin/env python3
"""privrace.dask against one process: the same seeded l2 sketch of an n x d float32 array.

    PYTHONPATH=build/python /usr/bin/python3 scripts/bench_dask.py [--n 10000000 --dim 10 --rows 1000 --width 1000]

Dask: a LocalCluster of --workers worker processes, one thread each, the array persisted in the
workers' memory beforehand (not timed); each partition builds with one OpenMP thread. One
process: RaceSketch.fit on the same array with --threads OpenMP threads. Both are timed end to
end (build, sum, noise), median of --repeats, and the two sketches must have the same counts.
Prints one JSON record.
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000, help="records")
    ap.add_argument("--dim", type=int, default=10, help="attributes")
    ap.add_argument("--rows", type=int, default=1000, help="R")
    ap.add_argument("--width", type=int, default=1000, help="W")
    ap.add_argument("--bandwidth", type=float, default=2.0)
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes (one thread each)")
    ap.add_argument("--threads", type=int, default=2, help="OpenMP threads of the one-process fit")
    ap.add_argument("--chunk-rows", type=int, default=4096 * 64, help="rows per Dask partition (a multiple of 4096)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import dask.array as da
    import distributed

    import privrace
    import privrace.dask

    x = np.random.default_rng(1).standard_normal((args.n, args.dim), dtype=np.float32)
    params = dict(rows=args.rows, width=args.width, bandwidth=args.bandwidth, seed=42)

    def one_process():
        return privrace.RaceSketch("l2", **params).fit(x, epsilon=1.0, threads=args.threads)

    def timed(f):
        times, out = [], None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t0)
        return times, out

    with distributed.LocalCluster(n_workers=args.workers, processes=True, threads_per_worker=1,
                                  dashboard_address=None, silence_logs=40) as cluster, distributed.Client(cluster) as client:
        xd = da.from_array(x, chunks=(args.chunk_rows, args.dim)).persist()
        distributed.wait(xd)
        dask_times, dask_sketch = timed(lambda: privrace.dask.sketch(xd, "l2", epsilon=1.0, **params))
        partitions = xd.numblocks[0]
        del xd
        client.run(lambda: None)
    single_times, single = timed(one_process)

    same = bool(np.array_equal(dask_sketch.counts, single.counts))
    record = {
        "machine": platform.node(), "cpus": __import__("os").cpu_count(),
        "n": args.n, "dim": args.dim, "R": args.rows, "W": args.width, "kernel": "l2",
        "dask": {"workers": args.workers, "threads_per_worker": 1, "partitions": partitions,
                 "seconds": dask_times, "median": statistics.median(dask_times)},
        "one_process": {"threads": args.threads, "seconds": single_times, "median": statistics.median(single_times)},
        "ratio_dask_over_one_process": statistics.median(dask_times) / statistics.median(single_times),
        "identical_counts": same,
    }
    print(json.dumps(record))
    if not same:
        raise SystemExit("the Dask sketch differs from the one-process sketch")


if __name__ == "__main__":
    main()
