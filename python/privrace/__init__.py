"""privrace: differentially private RACE sketches, from Python.

    import numpy as np, privrace
    sk = privrace.RaceSketch("l2", rows=200, width=64, bandwidth=2.0)
    sk.fit(X, epsilon=1.0)            # X: 2-D float32/float64 array, one record a row
    densities = sk.query(Q)           # numpy array, one value per query row
    sk.save("data.rsk")               # the file format of the `privrace` command

privrace.results.load("results/kde_skin.jsonl") reads an experiment's records (a pandas
DataFrame when pandas is installed). The sketch classes live in the compiled module
privrace._core (the C++ engine); privrace.results works without it.

Owners whose sketches must merge share a public hash seed: RaceSketch(..., hash_seed=S), or
RaceSketch.like(other_sketch_or_file). A sketch that is not fit for release (seeded noise, exact
counts) warns with privrace.NotFitForReleaseWarning when loaded, merged or queried.

privrace.FeatureSketch("rff", features=M, sigma=S) or FeatureSketch("hist", bins=B, domain=(lo, hi))
fits the feature sketches of M2M (`privrace sketch --kernel rff|hist`) the way RaceSketch fits RACE
sketches. Sketches pickle, and to_bytes()/from_bytes() give the file format's bytes (exact counts
only from a sketch fitted with allow_non_private=True); get_params/set_params follow scikit-learn.

privrace.M2M(path or sketch, domain=...) reads a released feature sketch (rff, hist, RACE); a HIST sketch's
domain defaults to the one it records. HIST holds one histogram per attribute, so its joint tasks
(cov, counting queries over several attributes) raise ValueError unless allow_unsupported=True,
which answers them with privrace.UnsupportedTaskWarning.
"""
from . import results  # noqa: F401

try:
    from ._core import (  # noqa: F401
        M2M, FeatureSketch, NotFitForReleaseWarning, RaceSketch, UnsupportedTaskWarning, __version__, git_commit)
except ImportError as _error:  # a source checkout without the compiled module
    _core_error = _error

    def __getattr__(name):
        raise ImportError(f"privrace.{name} needs the compiled module privrace._core ({_core_error}); "
                          "build it (cmake option PRIVRACE_PYTHON=ON) and put BUILD/python on PYTHONPATH")

__all__ = ["FeatureSketch", "M2M", "NotFitForReleaseWarning", "RaceSketch", "UnsupportedTaskWarning", "results", "__version__"]
