#!/usr/bin/env bash
# ctest packaging_wheel: a wheel built from the already-built tree (PRIVRACE_CMAKE_BUILD_DIR: no
# configure, the module as the build made it), installed into a --system-site-packages venv in a
# temporary folder, and a sketch fitted, saved, loaded and queried from outside the source tree.
#   wheel_test.sh SOURCE_DIR BUILD_DIR PYTHON WORK
# Exits 77 (skipped) when pip, setuptools or wheel are missing (Debian: python3-pip
# python3-setuptools python3-wheel).
set -euo pipefail
source_dir=$1 build_dir=$2 python=$3 work=$4
if ! "$python" -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ('pip', 'setuptools', 'wheel')))"; then
  echo "packaging_wheel: skipped, needs python3-pip python3-setuptools python3-wheel"; exit 77
fi
rm -rf "$work"; mkdir -p "$work/elsewhere"
trap 'rm -rf "$work"' EXIT
export PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
PRIVRACE_CMAKE_BUILD_DIR=$build_dir PRIVRACE_BUILD_JOBS=1 \
  "$python" -m pip wheel -q --no-build-isolation --no-deps -w "$work/dist" "$source_dir"
wheel=$(ls "$work"/dist/privrace-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
"$python" -m venv --without-pip --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-deps "$wheel"
cd "$work/elsewhere"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import pathlib, sys
import numpy as np
import privrace
root = pathlib.Path(privrace.__file__).resolve().parent
assert str(root).startswith(str(pathlib.Path(sys.argv[1]).resolve())), root  # the venv's copy
assert (root / "py.typed").exists() and (root / "_core.pyi").exists()
X = np.random.default_rng(1).normal(size=(2000, 2))
sk = privrace.RaceSketch("l2", rows=50, width=32, bandwidth=1.5, seed=3).fit(X, epsilon=1.0)
with __import__("warnings").catch_warnings():
    __import__("warnings").simplefilter("ignore", privrace.NotFitForReleaseWarning)
    d = sk.query(np.zeros((1, 2)))
    sk.save("s.rsk", allow_non_private=True)
    again = privrace.RaceSketch.load("s.rsk")
    assert np.array_equal(again.counts, sk.counts)
assert d.shape == (1,) and np.isfinite(d).all(), d
print("fit outside the tree:", privrace.__version__, root, "n_hat", sk.n_hat)

# The stubs keep step with the bindings: every public class, function and member of
# privrace._core is declared in _core.pyi (a class's members with those of its stub bases).
import ast, inspect
from privrace import _core
tree = ast.parse((root / "_core.pyi").read_text())
classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
top = set(classes) | {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | \
      {t.id for n in tree.body if isinstance(n, (ast.AnnAssign, ast.Assign))
       for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets) if isinstance(t, ast.Name)}
def members(name):
    node = classes[name]
    found = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            found |= members(base.id)
    return found
missing = [n for n in dir(_core) if not n.startswith("__") and n not in top]
for name, obj in vars(_core).items():
    if inspect.isclass(obj) and name in classes and not issubclass(obj, BaseException):
        missing += [f"{name}.{m}" for m in vars(obj) if not m.startswith("_") and m not in members(name)]
assert not missing, f"privrace/_core.pyi lacks {missing}"
print("stubs cover", len(classes), "classes of privrace._core")
PY
