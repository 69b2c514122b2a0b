"""Experiment results (results/NAME.jsonl, one JSON record per cell) as a table.

    privrace.results.load("results/kde_skin.jsonl")         # pandas DataFrame (if pandas is installed)
    privrace.results.load(path, as_frame=False)             # list of dicts, as written

In the DataFrame, nested objects become dotted columns: metrics.mre, params.rows, ...
A partial last line (a run killed while writing) is skipped with a warning.
"""
import json
import os
import warnings

__all__ = ["load", "read_records"]


def read_records(path):
    """The records of one .jsonl results file, as a list of dicts."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                warnings.warn(f"{path}:{n}: not a complete record; skipped", stacklevel=3)
                continue
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object (one record a line), found {type(record).__name__}")
            out.append(record)
    return out


def load(path, as_frame=None):
    """Records of `path` (a .jsonl file, or a list of them, concatenated).

    as_frame=None: a pandas DataFrame when pandas can be imported, else a list of dicts;
    True: a DataFrame (ImportError without pandas); False: a list of dicts.
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    records = []
    for p in paths:
        records.extend(read_records(os.fspath(p)))
    if as_frame is False:
        return records
    try:
        import pandas as pd
    except ImportError:
        if as_frame:
            raise
        return records
    return pd.json_normalize(records, sep=".")
