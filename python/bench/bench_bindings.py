"""Cost of the Python bindings against the engine called from C++ (not part of ctest).

    PYTHONPATH=BUILD/python /usr/bin/python3 python/bench/bench_bindings.py [--bench BUILD/bench/bench_engine]

Same work as bench_engine's BM_Build/3/T (N = 245,057 uniform points in [0, 255]^3, R = W = 1000,
bandwidth 5, no noise) and BM_Query/3/256 (R = W = 1000, d = 3, per-query cost), timed from
Python: medians of 5 runs. With --bench the C++ benchmarks run in the same session and the
ratios are printed.
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import privrace


def median_seconds(fn, reps=5):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", help="path of bench_engine, to run the C++ baseline in the same session")
    args = ap.parse_args()
    rng = np.random.default_rng(4)
    x32 = (255.0 * rng.random((245057, 3))).astype(np.float32)
    x64 = x32.astype(np.float64)
    q32 = (255.0 * rng.random((100_000, 3))).astype(np.float32)
    sketch = privrace.RaceSketch("l2", rows=1000, width=1000, bandwidth=5.0, seed=1)
    out = {}
    for threads in (1, 2):
        out[f"fit_float32_t{threads}_ms"] = 1e3 * median_seconds(
            lambda: sketch.fit(x32, epsilon=None, allow_non_private=True, threads=threads))
        out[f"fit_float64_t{threads}_ms"] = 1e3 * median_seconds(
            lambda: sketch.fit(x64, epsilon=None, allow_non_private=True, threads=threads))
    sketch.fit(x32[:10000], epsilon=None, allow_non_private=True)
    out["query_float32_us_per_query"] = 1e6 * median_seconds(lambda: sketch.kernel_sums(q32)) / len(q32)
    if args.bench:
        p = subprocess.run([args.bench, "--benchmark_filter=BM_Build/3/|BM_Query/3/256", "--benchmark_repetitions=5",
                            "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                           capture_output=True, text=True, check=True)
        for b in json.loads(p.stdout)["benchmarks"]:
            if b.get("aggregate_name") != "median":
                continue
            if b["run_name"].startswith("BM_Build/3/"):
                t = b["run_name"].split("/")[2]
                out[f"cpp_build_t{t}_ms"] = b["real_time"]
            elif b["run_name"].startswith("BM_Query/3/256"):
                out["cpp_query_us_per_query"] = b["us/query"] * 1e6  # the counter is in seconds a query
        for t in (1, 2):
            if f"cpp_build_t{t}_ms" in out:
                out[f"fit_over_cpp_t{t}"] = out[f"fit_float32_t{t}_ms"] / out[f"cpp_build_t{t}_ms"]
        if "cpp_query_us_per_query" in out:
            out["query_over_cpp"] = out["query_float32_us_per_query"] / out["cpp_query_us_per_query"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
