#!/usr/bin/env python3
"""Two data owners' released halves of one table, merged: is the merged file's noise what its
record says?

Each owner runs `privrace sketch --hash-seed S` on their half (public hash functions, noise from
the OS CSPRNG, fit for release); `privrace merge` sums them. The exact sketch of the whole table
(built once with the same hash seed and --no-privacy, on the owner's side) gives the merged
noise = merged counts - exact counts. Over TRIALS merges, its measured variance is compared with
the merged record's `noise_variance` (the sum of the parts').

usage: scripts/merge_noise_check.py --cli build/privrace --input ../shared/datasets/skin/Skin_NonSkin.txt
       [--label-column 4] [--rows 100] [--width 1000] [--epsilon 1] [--trials 200]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def counts_of(cli, path):
    # `info` prints the header (JSON); `info --counts` the counts alone (CSV), the header on stderr.
    header = json.loads(subprocess.run([cli, "info", path], check=True, capture_output=True, text=True).stdout)
    out = subprocess.run([cli, "info", path, "--counts"], check=True, capture_output=True, text=True).stdout
    rows = [np.array(line.split(","), dtype=np.int64) for line in out.splitlines() if line.strip()]
    return header, np.vstack(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--label-column", default="4")
    ap.add_argument("--rows", default="100")
    ap.add_argument("--width", default="1000")
    ap.add_argument("--bandwidth", default="20")
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--hash-seed", default="20261128")
    ap.add_argument("--trials", type=int, default=200)
    a = ap.parse_args()
    with open(a.input, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    half = len(lines) // 2
    with tempfile.TemporaryDirectory() as tmp:
        parts = [os.path.join(tmp, "owner1.txt"), os.path.join(tmp, "owner2.txt")]
        for path, chunk in zip(parts, (lines[:half], lines[half:])):
            with open(path, "wb") as f:
                f.writelines(chunk)
        common = ["--kernel", "l2", "--rows", a.rows, "--width", a.width, "--bandwidth", a.bandwidth,
                  "--label-column", a.label_column, "--hash-seed", a.hash_seed, "-q"]
        exact = os.path.join(tmp, "exact.rsk")
        subprocess.run([a.cli, "sketch", "-i", a.input, *common, "--no-privacy", "-o", exact], check=True)
        _, exact_counts = counts_of(a.cli, exact)
        noise = []
        recorded = None
        for t in range(a.trials):
            outs = [os.path.join(tmp, f"owner{i + 1}.rsk") for i in range(2)]
            for src, out in zip(parts, outs):
                subprocess.run([a.cli, "sketch", "-i", src, *common, "--epsilon", a.epsilon, "-o", out], check=True)
            merged = os.path.join(tmp, "merged.rsk")
            subprocess.run([a.cli, "merge", *outs, "-o", merged], check=True)
            header, counts = counts_of(a.cli, merged)
            p = header["privacy"]
            assert p["fit_for_release"] and all(q["fit_for_release"] for q in p["merged_from"])
            recorded = p["noise_variance"]
            noise.append((counts - exact_counts).ravel())
            if t == 0:
                print(json.dumps({k: v for k, v in p.items() if k != "merged_from"}, indent=1))
        z = np.concatenate(noise).astype(np.float64)
        var = z.var()
        # The variance of a sample variance: (mu4 - sigma^4) / n.
        se = math.sqrt(max(np.mean((z - z.mean()) ** 4) - var ** 2, 0.0) / z.size)
        print(f"merges: {a.trials}, counts per merge: {exact_counts.size}, draws: {z.size}")
        print(f"recorded noise_variance: {recorded:.2f}; measured: {var:.2f} (standard error {se:.2f}); "
              f"ratio {var / recorded:.4f}; mean of the noise {z.mean():.3f}")
        return 0 if abs(var - recorded) <= 4 * se else 1


if __name__ == "__main__":
    sys.exit(main())
