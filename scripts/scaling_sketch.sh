#!/usr/bin/env bash
# Stage timings of `privrace sketch` (and of `privrace query`) against the thread count, as
# JSON lines: one run of the same command per thread count and repetition.
#   scripts/scaling_sketch.sh [-b BUILD] [-t "1 2 4 8 16"] [-n REPS] [-q QUERIES] -- SKETCH-ARGS...
# The thread grid defaults to 1 2 4 ... up to every core, plus the core count itself.
# Example (skin, R = W = 1000):
#   scripts/scaling_sketch.sh -n 3 -- --input ../shared/datasets/skin/Skin_NonSkin.txt \
#       --label-column 4 --rows 1000 --width 1000 --bandwidth 5 --epsilon 1
# Each line: {"threads": T, "rep": i, "sketch": {privrace sketch --timings}, "query_s": seconds}.
# Output files go to a temporary directory, removed at the end.
set -euo pipefail
build="build"
grid=""
reps=1
queries=""
while getopts "b:t:n:q:" opt; do
  case "$opt" in
    b) build="$OPTARG" ;;
    t) grid="$OPTARG" ;;
    n) reps="$OPTARG" ;;
    q) queries="$OPTARG" ;;
    *) echo "usage: $0 [-b BUILD] [-t THREADS] [-n REPS] [-q QUERIES] -- SKETCH-ARGS..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ "${1:-}" == "--" ]] && shift
if [[ $# -eq 0 ]]; then echo "$0: give the privrace sketch arguments after --" >&2; exit 2; fi
cli="$build/privrace"
[[ -x "$cli" ]] || { echo "$0: $cli not found (build first, or pass -b BUILD)" >&2; exit 1; }
cores=$(nproc)
if [[ -z "$grid" ]]; then
  t=1
  while ((t < cores)); do grid+="$t "; t=$((t * 2)); done
  grid+="$cores"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in $grid; do
  for ((i = 1; i <= reps; i++)); do
    line=$("$cli" sketch "$@" --threads "$t" --timings -q -o "$work/s.rsk" 2>&1 >/dev/null | sed -n 's/^privrace: timings //p')
    query="null"
    if [[ -n "$queries" ]]; then
      start=$EPOCHREALTIME
      "$cli" query "$work/s.rsk" --queries "$queries" --threads "$t" >/dev/null
      query=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
    fi
    echo "{\"threads\": $t, \"rep\": $i, \"sketch\": ${line:-null}, \"query_s\": $query}"
  done
done
