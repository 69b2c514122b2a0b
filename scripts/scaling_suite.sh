#!/usr/bin/env bash
# The thread-scaling figures of docs/scaling.md in one go, as JSON lines under OUT_DIR:
#   scripts/scaling_suite.sh -b BIN_DIR -d DATA_DIR -o OUT_DIR [-t "1 2 4 8 12 16"] [-n REPS] [PART...]
# PART: skin (245,057 x 3, R = W = 1000, with 100k queries), skin10 (the same rows ten times,
# 2.45M x 3), slashdot (948k edges, jaccard, R = 2000, W = 100k), bench (bench_scaling at the
# same thread counts), mpi (skin10 under `mpirun -np K` for K in the grid, one thread a rank, and
# K ranks x 16/K threads; needs an MPI build and mpirun on PATH), mpi_graph (Slashdot as plain
# text under `mpirun -np K`, one thread a rank: each rank reads its byte share and the edges move
# to the rank owning their node). Default: all but mpi and mpi_graph.
# BIN_DIR holds privrace and bench_scaling (a build folder's, or a kit packed by
# ../shared/tools/device-kit.sh); DATA_DIR holds Skin_NonSkin.txt and soc-Slashdot0902.txt.gz.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="" data="" out="" grid="" reps=3
while getopts "b:d:o:t:n:" opt; do
  case "$opt" in
    b) bin="$OPTARG" ;;
    d) data="$OPTARG" ;;
    o) out="$OPTARG" ;;
    t) grid="$OPTARG" ;;
    n) reps="$OPTARG" ;;
    *) sed -n 2,12p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ -n "$bin" && -n "$data" && -n "$out" ]] || { sed -n 2,12p "$0" >&2; exit 2; }
parts=("$@")
((${#parts[@]})) || parts=(skin skin10 slashdot bench)
if [[ -z "$grid" ]]; then
  cores=$(nproc) t=1
  while ((t < cores)); do grid+="$t "; t=$((t * 2)); done
  grid+="$cores"
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
skin="$data/Skin_NonSkin.txt"

machine() {
  echo "{\"machine\": \"$(uname -n)\", \"cores\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"threads\": \"$grid\", \"reps\": $reps}"
}

for part in "${parts[@]}"; do
  start=$EPOCHREALTIME
  case "$part" in
    skin)
      awk -F'\t' 'NR <= 100000 { print $1 "\t" $2 "\t" $3 }' "$skin" > "$work/q.txt"
      { machine; "$here/scaling_sketch.sh" -b "$bin" -t "$grid" -n "$reps" -q "$work/q.txt" -- \
          --input "$skin" --label-column 4 --rows 1000 --width 1000 --bandwidth 5 --epsilon 1; } > "$out/skin.jsonl"
      ;;
    skin10)
      for _ in 1 2 3 4 5 6 7 8 9 10; do cat "$skin"; done > "$work/skin10.txt"
      { machine; "$here/scaling_sketch.sh" -b "$bin" -t "$grid" -n "$reps" -- \
          --input "$work/skin10.txt" --label-column 4 --rows 1000 --width 1000 --bandwidth 5 --epsilon 1; } > "$out/skin10.jsonl"
      rm -f "$work/skin10.txt"
      ;;
    slashdot)
      { machine; "$here/scaling_sketch.sh" -b "$bin" -t "$grid" -n "$reps" -- \
          --input "$data/soc-Slashdot0902.txt.gz" --format edgelist --kernel jaccard --rows 2000 --width 100000 --epsilon 1; } > "$out/slashdot.jsonl"
      ;;
    bench)
      # Anchored to the first argument (the thread count): "/1/" alone also matches BM_X/3/1.
      filter="^[A-Za-z_]+/($(echo "$grid" | tr ' ' '\n' | grep . | paste -sd'|'))(/|$)"
      "$bin/bench_scaling" --benchmark_filter="$filter" --benchmark_repetitions="$reps" \
        --benchmark_report_aggregates_only=true --benchmark_format=json > "$out/bench_scaling.json"
      ;;
    mpi)
      for _ in 1 2 3 4 5 6 7 8 9 10; do cat "$skin"; done > "$work/skin10.txt"
      args=(--input "$work/skin10.txt" --label-column 4 --rows 1000 --width 1000 --bandwidth 5 --epsilon 1 --timings -q -o "$work/m.rsk")
      cores=$(nproc)
      {
        machine
        run_ranks() {  # ranks threads
          local line
          if ! mpirun ${MPIRUN_FLAGS:-} -np "$1" "$bin/privrace" sketch "${args[@]}" --threads "$2" > /dev/null 2> "$work/err"; then
            echo "$0: mpirun -np $1 failed:" >&2; cat "$work/err" >&2; exit 1
          fi
          line=$(sed -n 's/^privrace: timings //p' "$work/err" | head -1)
          echo "{\"ranks\": $1, \"threads\": $2, \"rep\": $3, \"sketch\": ${line:-null}}"
        }
        for k in $grid; do
          for ((i = 1; i <= reps; i++)); do run_ranks "$k" 1 "$i"; done
        done
        for k in 2 4 8; do
          ((k < cores)) || continue
          for ((i = 1; i <= reps; i++)); do run_ranks "$k" $((cores / k)) "$i"; done
        done
      } > "$out/mpi.jsonl"
      rm -f "$work/skin10.txt"
      ;;
    mpi_graph)
      gzip -dc "$data/soc-Slashdot0902.txt.gz" > "$work/slashdot.txt"
      {
        machine
        for k in $grid; do
          for ((i = 1; i <= reps; i++)); do
            if ! mpirun ${MPIRUN_FLAGS:-} -np "$k" "$bin/privrace" sketch --input "$work/slashdot.txt" --format edgelist \
                --kernel jaccard --rows 2000 --width 100000 --epsilon 1 --threads 1 --timings -q -o "$work/g.rsk" \
                > /dev/null 2> "$work/err"; then
              echo "$0: mpirun -np $k failed:" >&2; cat "$work/err" >&2; exit 1
            fi
            line=$(sed -n 's/^privrace: timings //p' "$work/err" | head -1)
            echo "{\"ranks\": $k, \"threads\": 1, \"rep\": $i, \"sketch\": ${line:-null}}"
          done
        done
      } > "$out/mpi_graph.jsonl"
      rm -f "$work/slashdot.txt"
      ;;
    *) echo "$0: unknown part '$part' (skin, skin10, slashdot, bench, mpi, mpi_graph)" >&2; exit 2 ;;
  esac
  awk -v a="$start" -v b="$EPOCHREALTIME" -v p="$part" 'BEGIN { printf "%s: %.1f s\n", p, b - a }' >&2
done
