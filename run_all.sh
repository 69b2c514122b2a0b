#!/usr/bin/env bash
# Reproduce every figure: set-up, build, every config in configs/, then the plots.
#   ./run_all.sh            full runs (what reproduces the papers)
#   ./run_all.sh --quick    each config's "quick" section (small grids, few repetitions)
#   ./run_all.sh --all      also the configs named scaling* (long thread-scaling studies)
# A rerun resumes: finished cells are skipped (see configs/README.md).
set -euo pipefail
cd "$(dirname "$0")"
REPO=$(pwd)

QUICK=()
ALL=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=(--quick) ;;
    --all) ALL=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown option '$arg' (expected --quick, --all)" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
if [[ -x scripts/setup.sh ]]; then
  scripts/setup.sh
elif [[ -f scripts/setup.sh ]]; then
  bash scripts/setup.sh
else
  echo "run_all.sh: scripts/setup.sh not found; assuming the dependencies are installed" >&2
fi

# Build only what the experiments need. A fresh build directory skips tests and benchmarks
# (their configure-time dependencies are not needed here); an existing one keeps its settings.
# PRIVRACE_BUILD_DIR picks another build directory (default: build/).
BUILD=${PRIVRACE_BUILD_DIR:-build}
JOBS=$(nproc 2>/dev/null || echo 2)
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPRIVRACE_TESTS=OFF -DPRIVRACE_BENCH=OFF
else
  cmake -S . -B "$BUILD" >/dev/null
fi
cmake --build "$BUILD" --target privrace-experiment -j "$JOBS"
EXP=$BUILD/privrace-experiment

configs=()
for c in configs/*.json; do
  [[ -e "$c" ]] || continue
  name=$(basename "$c" .json)
  if [[ "$name" == scaling* && $ALL -eq 0 ]]; then
    echo "skipping $c (scaling study; use --all)"
    continue
  fi
  configs+=("$c")
done

failed=()
for c in "${configs[@]}"; do
  echo "== $c ${QUICK[*]}"
  t0=$(date +%s)
  if "$EXP" "$c" "${QUICK[@]}"; then
    echo "== $c done in $(( $(date +%s) - t0 )) s"
  else
    echo "== $c FAILED (exit $?); continuing with the others" >&2
    failed+=("$c")
  fi
done

# Plots need numpy + matplotlib: the first python3 on PATH may lack them (Debian installs
# them for /usr/bin/python3), so pick the first interpreter that imports both.
PY=""
for cand in "${PRIVRACE_PYTHON:-}" /usr/bin/python3 python3; do
  [[ -n "$cand" ]] || continue
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import matplotlib, numpy' >/dev/null 2>&1; then
    PY=$cand
    break
  fi
done
plots_ok=1
if [[ -z "$PY" ]]; then
  echo "run_all.sh: no python3 with matplotlib and numpy found (apt-get install python3-matplotlib python3-numpy); plots skipped" >&2
  plots_ok=0
else
  for script in plots/plot_*.py; do
    [[ -e "$script" ]] || continue
    "$PY" "$script" || { echo "run_all.sh: $script failed" >&2; plots_ok=0; }
  done
fi

echo
echo "results: $REPO/results/*.jsonl (one record per cell), *.csv, *.summary.json"
echo "figures: $REPO/plots/*.png and *.pdf"
echo "total time: $(( $(date +%s) - start )) s"
if (( ${#failed[@]} > 0 )); then
  echo "failed configs: ${failed[*]}" >&2
  exit 1
fi
(( plots_ok )) || exit 1
