#!/usr/bin/env bash
# Publishes the reproduction from the records of one whole-suite run: the digests
# (reproduction/digests/, small, committed), the figures (docs/figures/) and the report
# (docs/reproduction.md, docs/results/CONFIG.md). Configs whose full run is not finished are
# left out (their claims read "not run").
#   scripts/publish_reproduction.sh [RESULTS_DIR]     (default results/; e.g. .fullrun/results)
# PRIVRACE_RUN_NOTE="..." adds how the run was made to every digest (e.g. a machine shared with builds).
# The run itself: ./run_all.sh --no-fetch from a checkout of one commit (a rerun resumes).
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=${1:-results}
[[ -d $RESULTS ]] || { echo "publish_reproduction.sh: no results directory '$RESULTS'" >&2; exit 1; }
# The runner of the run's own checkout counts its pending cells (results/../build).
EXP=$(dirname "$RESULTS")/build/privrace-experiment
[[ -x $EXP ]] || EXP=build/privrace-experiment
python3 reproduction/report.py digest "$RESULTS" --experiment "$EXP" ${PRIVRACE_RUN_NOTE:+--note "$PRIVRACE_RUN_NOTE"}
scripts/publish_figures.sh --results "$RESULTS"
python3 reproduction/report.py write
python3 reproduction/report.py check
