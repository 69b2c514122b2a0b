#!/usr/bin/env bash
# Installs the Debian packages privrace needs, skipping those already present.
# Uses sudo when not root. Safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config  # run_all.sh's fresh build directory uses Ninja
  libeigen3-dev nlohmann-json3-dev libboost-program-options-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libnlopt-cxx-dev libmpfr-dev libssl-dev libzstd-dev
  python3 python3-numpy python3-matplotlib
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-pandas python3-dask python3-distributed  # the Python module, privrace.dask and their tests
  python3-pip python3-setuptools python3-wheel python3-venv python3-build dpkg-dev  # pip install ., wheels, .deb packages and their tests
)
if [[ "${PRIVRACE_WITH_MPI:-0}" == 1 ]]; then packages+=(libopenmpi-dev openmpi-bin); fi
# libtorch: only the DP-WGAN baseline's module needs it, and it brings about 200 packages (two
# minutes of a fresh install): ./run_all.sh asks for it, the default test run does not.
# With OpenBLAS installed Debian routes libtorch's BLAS to it (a DP-WGAN fit 3x faster than on the
# reference BLAS, docs/experiments.md "Jobs").
if [[ "${PRIVRACE_WITH_TORCH:-0}" == 1 ]]; then packages+=(libtorch-dev libopenblas0-pthread); fi
if [[ "${PRIVRACE_SANITIZE:-}" == thread ]]; then packages+=(clang libomp-dev); fi  # TSan with Archer
if [[ "${PRIVRACE_FUZZ:-0}" == 1 ]]; then packages+=(clang libclang-rt-14-dev libomp-dev); fi  # libFuzzer targets

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# An index refresh can fail offline; the install may still succeed from the local cache.
$sudo apt-get update -qq || echo "setup: apt-get update failed; trying the install anyway" >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
