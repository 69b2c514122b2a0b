#!/usr/bin/env python3
"""Private linear regression (private-race paper Figure 5 / CCS'21 Figure 5): test MSE vs
epsilon (log-log), one panel per data set, from results/regress_*.summary.json.

Curves: RACE surrogate loss (both placements of the SRP pair), SSP, AdaSSP, ObjPert, OPS,
AdaOPS, PrivBayes synthetic data + least squares (mean +- sd over repetitions; best degree and
synthetic size per epsilon); non-private least squares and the trivial predictor are
horizontal reference lines. Each panel's y range is set by the informative methods: up to 2x
the trivial predictor's MSE (a method beyond it, SSP at small epsilon, is drawn as triangles on
the panel's top edge instead of stretching the range). Stand-in data is named in the panel
title; a method that refused a data set (PrivBayes on gas) is named in the note under the legend.

usage: plot_regress.py [--results DIR] [--out FILE] [--datasets airfoil naval gas]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_classify  # noqa: E402  (shared panel code)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "..", "results"))
    ap.add_argument("--out", default=os.path.join(here, "regress.png"))
    ap.add_argument("--datasets", nargs="+", default=["airfoil", "naval", "gas"])
    a = ap.parse_args()
    plot_classify.plot("regress", a.datasets, "test MSE", "Private linear regression: MSE vs privacy budget",
                       a.results, a.out, logy=True)


if __name__ == "__main__":
    main()
