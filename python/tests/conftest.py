import os
import shutil
import subprocess

import numpy as np
import pytest

import privrace  # noqa: F401  (fails early, with the reason, when the module is not built)


def pytest_collection_modifyitems(items):
    """Most suites use seeded (reproducible) sketches, which warn NotFitForReleaseWarning on every
    load, merge and query: ignored there, also under -W error (test_release.py checks the
    warnings with pytest.warns and warnings as errors)."""
    for item in items:
        item.add_marker(pytest.mark.filterwarnings("ignore::privrace.NotFitForReleaseWarning"))


@pytest.fixture(scope="session")
def cli():
    """Path of the `privrace` command (ctest passes the build's; else PATH)."""
    path = os.environ.get("PRIVRACE_CLI") or shutil.which("privrace")
    if not path:
        pytest.skip("the privrace command is not available (set PRIVRACE_CLI)")
    return path


def run_cli(cli, *args, check=True):
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"privrace {' '.join(map(str, args))} failed ({p.returncode}): {p.stderr}")
    return p


def grid_points(n, d, seed, scale=4.0):
    """Seeded points on the grid 1/256, so float32, float64 and the CSV text are the same numbers."""
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(0.0, scale / 3, size=(n, d)) * 256) / 256


def write_csv(path, x):
    np.savetxt(path, x, fmt="%.10g", delimiter=",")
    return path
