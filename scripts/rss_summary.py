#!/usr/bin/env python3
"""Summarise memory samples written by scripts/sample_rss.sh, one line per process.

usage: scripts/rss_summary.py SAMPLES.tsv [--warmup-s S] [--warmup-frac F]

For each pid (a new one per experiment config): the config (the first *.json argument of its
command line), how long it was sampled, VmRSS at the first sample after warm-up and at the last,
the median after warm-up, the peak (VmHWM), and the slope of VmRSS over time after warm-up
(least squares, MiB per hour). Warm-up: the first max(S seconds, F of the sampled span)
(defaults 60 s and 0.1).
"""
import argparse
import collections

import numpy as np


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip().removeprefix("usage: "))
    ap.add_argument("samples")
    ap.add_argument("--warmup-s", type=float, default=60.0)
    ap.add_argument("--warmup-frac", type=float, default=0.1)
    args = ap.parse_args()
    rows = collections.defaultdict(list)
    cmds = {}
    with open(args.samples) as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 5:
                continue
            t, pid, rss, hwm, cmd = int(parts[0]), parts[1], int(parts[2]), int(parts[3]), parts[4]
            rows[pid].append((t, rss, hwm))
            cmds[pid] = cmd
    print("pid\tconfig\tsampled_min\tsamples\trss_after_warmup_mib\trss_last_mib\trss_median_mib\t"
          "peak_hwm_mib\tslope_mib_per_h")
    for pid, s in sorted(rows.items(), key=lambda kv: kv[1][0][0]):
        a = np.array(s, dtype=float)
        t, rss, hwm = a[:, 0], a[:, 1] / 1024, a[:, 2] / 1024
        span = t[-1] - t[0]
        warm = t >= t[0] + max(args.warmup_s, args.warmup_frac * span)
        config = next((w for w in cmds[pid].split() if w.endswith(".json")), cmds[pid][:60])
        if warm.sum() >= 3 and np.ptp(t[warm]) > 0:
            slope = np.polyfit((t[warm] - t[warm][0]) / 3600.0, rss[warm], 1)[0]
            after, med = rss[warm][0], np.median(rss[warm])
            slope_s, after_s, med_s = f"{slope:.1f}", f"{after:.1f}", f"{med:.1f}"
        else:
            slope_s = after_s = med_s = "-"  # too short to leave its warm-up
        print(f"{pid}\t{config}\t{span / 60:.1f}\t{len(s)}\t{after_s}\t{rss[-1]:.1f}\t{med_s}\t{hwm.max():.1f}\t{slope_s}")


if __name__ == "__main__":
    main()
