"""The build of the Python package privrace (see pyproject.toml).

build_ext builds the compiled module with the project's CMake (target privrace_python) and copies
the _core*.so it makes; build_py copies python/privrace/*.py, py.typed and the stubs.

  PRIVRACE_CMAKE_BUILD_DIR=DIR  reuse the configured CMake build folder DIR (relative to this file
                                or absolute): no configure, `cmake --build DIR --target
                                privrace_python` (a no-op when it is up to date); setuptools'
                                own files then go to DIR/setuptools, none into the source tree.
                                Without it the CMake build lives in build-setuptools/ (git-ignored).
  PRIVRACE_BUILD_JOBS=N         parallel build jobs (default: every core)
  PRIVRACE_CMAKE_ARGS="..."     extra arguments for the configure step
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(privrace VERSION ([0-9.]+)", text).group(1)


def reused_build_dir():
    value = os.environ.get("PRIVRACE_CMAKE_BUILD_DIR")
    if not value:
        return None
    path = Path(value)
    return (path if path.is_absolute() else ROOT / path).resolve()


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        jobs = os.environ.get("PRIVRACE_BUILD_JOBS") or str(os.cpu_count() or 2)
        build = reused_build_dir()
        if build is not None:
            if not (build / "CMakeCache.txt").is_file():
                raise RuntimeError(f"PRIVRACE_CMAKE_BUILD_DIR={build}: no CMakeCache.txt there (configure it first)")
        else:
            build = Path(self.build_temp).resolve() / "cmake"
            args = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DPRIVRACE_TESTS=OFF", "-DPRIVRACE_BENCH=OFF", "-DPRIVRACE_PYTHON=ON",
                    f"-DPython_EXECUTABLE={sys.executable}"]
            try:  # pybind11 from a Python environment (an isolated build) when CMake's own is absent
                import pybind11
                args.append(f"-Dpybind11_ROOT={pybind11.get_cmake_dir()}")
            except ImportError:
                pass
            args += shlex.split(os.environ.get("PRIVRACE_CMAKE_ARGS", ""))
            self.announce("configuring: " + " ".join(args), level=2)
            subprocess.run(args, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "privrace_python", "-j", jobs], check=True)

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build / "python" / "privrace" / f"_core{suffix}"
        if not built.is_file():
            found = sorted(p.name for p in (build / "python" / "privrace").glob("_core*"))
            raise RuntimeError(f"{built} was not built (found {found or 'nothing'}): the CMake build folder was "
                               f"configured for another Python than {sys.executable} (Python_EXECUTABLE)")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


options = {}
reuse = reused_build_dir()
staging = (reuse / "setuptools") if reuse is not None else ROOT / "build-setuptools"
staging.mkdir(parents=True, exist_ok=True)
options["build"] = {"build_base": str(staging)}
options["egg_info"] = {"egg_base": str(staging)}

setup(
    version=project_version(),
    packages=["privrace"],
    package_dir={"": "python"},
    package_data={"privrace": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("privrace._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options=options,
    zip_safe=False,
)
