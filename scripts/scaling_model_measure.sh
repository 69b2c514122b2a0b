#!/usr/bin/env bash
# The local runs that scripts/scaling_model.py fits and checks, as JSON lines in OUT_DIR/runs.jsonl:
#   scripts/scaling_model_measure.sh -b BUILD -d DATA_DIR -o OUT_DIR [-c CSV] [-n REPS] [CASE...]
# CASE: skin (245,057 x 3, R = W = 1000, bandwidth 5), table (10^7 x 10 normal rows as one plain
# CSV, R = 100, W = 1000, bandwidth 5), both under 1-3 ranks x 1-2 threads (1 rank: the plain
# process, no launcher; more: mpirun), and slashdot (948k edges, jaccard, R = 2000, W = 100k,
# 1 process x 1-2 threads: graphs are read and built on rank 0 under MPI). Default: all three.
# BUILD is an MPI build folder (holding privrace); DATA_DIR holds skin/Skin_NonSkin.txt and
# snap/soc-Slashdot0902.txt.gz. -c reuses a 10^7 x 10 CSV (else it is written to a temporary
# folder with $PYTHON or python3 + numpy, about 1 GB and 1-2 minutes). Repetitions are interleaved: every
# configuration once, then again. Each line: {"case", "ranks", "threads", "rep", "launcher",
# "wall_s", "load1", "input_bytes", "dim", "edges", "sketch": {privrace sketch --timings}}.
set -euo pipefail
usage() { sed -n 2,12p "$0" >&2; exit 2; }
build="" data="" out="" csv="" reps=3
while getopts "b:d:o:c:n:" opt; do
  case "$opt" in
    b) build="$OPTARG" ;;
    d) data="$OPTARG" ;;
    o) out="$OPTARG" ;;
    c) csv="$OPTARG" ;;
    n) reps="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ -n "$build" && -n "$data" && -n "$out" ]] || usage
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "$0: -n wants a positive integer, got '$reps'" >&2; exit 2; }
cases=("$@")
((${#cases[@]})) || cases=(skin table slashdot)
for c in "${cases[@]}"; do
  [[ "$c" == skin || "$c" == table || "$c" == slashdot ]] || { echo "$0: unknown case '$c' (skin, table, slashdot)" >&2; exit 2; }
done
cli="$build/privrace"
[[ -x "$cli" ]] || { echo "$0: $cli not found (build the MPI target first)" >&2; exit 1; }
skin="$data/skin/Skin_NonSkin.txt"
slashdot="$data/snap/soc-Slashdot0902.txt.gz"
for c in "${cases[@]}"; do
  case "$c" in
    skin) [[ -r "$skin" ]] || { echo "$0: $skin not readable" >&2; exit 1; } ;;
    slashdot) [[ -r "$slashdot" ]] || { echo "$0: $slashdot not readable" >&2; exit 1; } ;;
    table) command -v mpirun > /dev/null || { echo "$0: mpirun not on PATH" >&2; exit 1; } ;;
  esac
done
[[ -z "$csv" || -r "$csv" ]] || { echo "$0: -c $csv not readable" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpiflags=(--oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpiflags+=(--allow-run-as-root)

if [[ " ${cases[*]} " == *" table "* && -z "$csv" ]]; then
  csv="$work/table.csv"
  "${PYTHON:-python3}" - "$csv" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(1)
with open(sys.argv[1], "w") as f:
    for _ in range(10):
        np.savetxt(f, rng.standard_normal((1_000_000, 10)), fmt="%.6f", delimiter=",")
EOF
fi

# one run: case ranks threads rep
run() {
  local c=$1 k=$2 t=$3 i=$4 input dim edges=0 launcher=none start end line
  local -a args
  case "$c" in
    skin) input=$skin dim=3
      args=(--input "$skin" --label-column 4 --rows 1000 --width 1000 --bandwidth 5 --epsilon 1) ;;
    table) input=$csv dim=10
      args=(--input "$csv" --rows 100 --width 1000 --bandwidth 5 --epsilon 1) ;;
    slashdot) input=$slashdot dim=0
      edges=$( (zcat "$slashdot" 2> /dev/null || true) | head -5 | sed -n 's/.*Edges: *\([0-9]*\).*/\1/p')
      [[ -n "$edges" ]] || { echo "$0: no 'Edges: N' line at the head of $slashdot" >&2; exit 1; }
      args=(--input "$slashdot" --format edgelist --kernel jaccard --rows 2000 --width 100000 --epsilon 1) ;;
  esac
  args+=(--threads "$t" --timings -q -o "$work/s.rsk")
  start=$EPOCHREALTIME
  if ((k == 1)); then
    "$cli" sketch "${args[@]}" > /dev/null 2> "$work/err" || { echo "$0: $c 1 x $t failed:" >&2; cat "$work/err" >&2; exit 1; }
  else
    launcher=mpirun
    mpirun "${mpiflags[@]}" -np "$k" "$cli" sketch "${args[@]}" > /dev/null 2> "$work/err" ||
      { echo "$0: mpirun -np $k ($c, $t threads) failed:" >&2; cat "$work/err" >&2; exit 1; }
  fi
  end=$EPOCHREALTIME
  line=$(sed -n 's/^privrace: timings //p' "$work/err" | head -1)
  [[ -n "$line" ]] || { echo "$0: no timings line from $c $k x $t" >&2; cat "$work/err" >&2; exit 1; }
  printf '{"case": "%s", "ranks": %d, "threads": %d, "rep": %d, "launcher": "%s", "wall_s": %s, "load1": %s, "input_bytes": %d, "dim": %d, "edges": %d, "sketch": %s}\n' \
    "$c" "$k" "$t" "$i" "$launcher" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }')" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$(stat -c %s "$input")" "$dim" "$edges" "$line"
}

{
  echo "{\"machine\": \"$(uname -n)\", \"cores\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"commit\": \"$(git -C "$(dirname "$0")" rev-parse --short HEAD 2> /dev/null || echo unknown)\", \"reps\": $reps}"
  for ((i = 1; i <= reps; i++)); do
    for c in "${cases[@]}"; do
      if [[ "$c" == slashdot ]]; then
        for t in 1 2; do run "$c" 1 "$t" "$i"; done
      else
        for k in 1 2 3; do for t in 1 2; do run "$c" "$k" "$t" "$i"; done; done
      fi
    done
  done
} >> "$out/runs.jsonl"
echo "$0: $(grep -c "\"sketch\"" "$out/runs.jsonl") runs in $out/runs.jsonl" >&2
