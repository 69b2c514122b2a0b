#!/usr/bin/env bash
# Measures the wall time per cell of every config on this machine and writes
# configs/calibration/cell_costs.json, from which `privrace-experiment --plan` and run_all.sh
# estimate how long a run will take. Each config runs a sample of its grid (repetition 0 and
# K evenly spread grid points per method and K epsilons, first and last included) into a scratch directory:
# the real results/ are never touched. Entries of configs not measured now are kept.
#   scripts/measure_cell_costs.sh [--quick] [--sample K] [--threads T] [--jobs J] [--method LABEL]... [--from-results DIR [--reference-seconds S]] [CONFIG.json ...]
# Default: every configs/*.json but scaling*, full grids, K = 2, the configs' own threads, and
# J = $PRIVRACE_JOBS or 2 groups at once, as run_all.sh runs them (the cells' thread-seconds are
# those of the threads each group had).
# --method LABEL (repeatable): sample only these methods and replace only their cells in the
# config's entry (each re-measured cell records its date and commit); the other cells stay.
# --from-results DIR: run nothing; take each config's cells from the records of its finished
# full run in DIR (DIR/NAME.jsonl; with --quick, its quick run, DIR/NAME-quick.jsonl; configs
# without one are skipped): every cell measured. The run may be of a copy of the config with
# fewer repetitions (same name): the basis says how many the records hold.
# The machine's speed: each sampled config's cells record reference_seconds, the mean of
# `privrace-experiment --speed-reference` before and after the sample, and the plan prices them
# at the table's nominal reference_seconds (experiments/cost_estimate.hpp). Cells taken
# --from-results record one only when given: --reference-seconds S (measured beside that run).
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=()
SAMPLE=2
THREADS=()
JOBS=${PRIVRACE_JOBS:-2}
METHODS=()
LABELS=()
FROM=""
REFERENCE=""
configs=()
while (( $# )); do
  case "$1" in
    --quick) QUICK=(--quick) ;;
    --sample) SAMPLE=${2:?--sample needs K}; shift ;;
    --threads) THREADS=(--threads "${2:?--threads needs T}"); shift ;;
    --jobs) JOBS=${2:?--jobs needs J}; shift ;;
    --method) METHODS+=(--method "${2:?--method needs a label}"); LABELS+=("$2"); shift ;;
    --from-results) FROM=${2:?--from-results needs a directory}; shift ;;
    --reference-seconds) REFERENCE=${2:?--reference-seconds needs S}; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "measure_cell_costs.sh: unknown option '$1'" >&2; exit 2 ;;
    *) configs+=("$1") ;;
  esac
  shift
done
if (( ${#configs[@]} == 0 )); then
  for c in configs/*.json; do
    [[ $(basename "$c") == scaling* ]] || configs+=("$c")
  done
fi
if [[ -n $REFERENCE ]] && ! { [[ $REFERENCE =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] && awk -v r="$REFERENCE" 'BEGIN { exit !(r + 0 > 0) }'; }; then
  echo "measure_cell_costs.sh: --reference-seconds '$REFERENCE': expected a positive number of seconds" >&2
  exit 2
fi
[[ -z $REFERENCE || -n $FROM ]] || { echo "measure_cell_costs.sh: --reference-seconds goes with --from-results (a sample measures its own)" >&2; exit 2; }
cores=$(nproc)
[[ ${OMP_NUM_THREADS:-} =~ ^[1-9][0-9]*$ ]] && cores=$OMP_NUM_THREADS
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "measure_cell_costs.sh: --jobs '$JOBS': expected a positive whole number" >&2; exit 2; }
(( JOBS <= cores )) || JOBS=$cores
EXP=${PRIVRACE_BUILD_DIR:-build}/privrace-experiment
[[ -x $EXP ]] || { echo "measure_cell_costs.sh: $EXP not built (cmake --build build --target privrace-experiment)" >&2; exit 1; }
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
TABLE=configs/calibration/cell_costs.json
mkdir -p "$(dirname "$TABLE")"
# Merges the sampled records in directory $1 into the table (written atomically).
merge_into_table() {
python3 - "$1" "$TABLE" "$SAMPLE" "$2" "$3" "${LABELS[@]}" <<'PY'
import glob, json, os, platform, statistics, subprocess, sys, datetime
scratch, table_path, sample, basis = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
reference = round(float(sys.argv[5]), 5) if sys.argv[5] else None  # the machine's speed while timed
if reference is not None:
    basis += f", speed reference {reference} s"
only_labels = set(sys.argv[6:])  # --method: replace these labels' cells only
table = {"configs": {}}
if os.path.exists(table_path):
    with open(table_path) as f:
        table = json.load(f)
model = "unknown CPU"
try:
    with open("/proc/cpuinfo") as f:
        model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
except (OSError, StopIteration):
    pass
# The table's "machine" is that of the entries without their own; entries and re-measured cells
# made now name this machine, so that one table can hold measurements of two machines.
machine = f"{os.cpu_count()}-core {platform.machine()} ({model})"
table.setdefault("machine", machine)
table["how"] = ("scripts/measure_cell_costs.sh: per config, a sample (repetition 0, K grid points per method "
                "and K epsilons) or every cell of a full run, as the entry's basis says; first_seconds = median wall time of "
                "a group's first cell (it carries the work the group's epsilons share), seconds = of the "
                "later cells (of any cell where first_seconds is absent), the median over repetitions at each epsilon "
                "averaged over the epsilons; shared_seconds = work the "
                "repetitions of a parameter point reuse (records' shared_work_seconds), priced once "
                "per point and not included in first_seconds; reference_seconds (of a cell, else of its entry) = "
                "privrace-experiment --speed-reference while it was timed: its times are priced at the table's "
                "nominal reference_seconds, scaled by nominal / reference (a cell without one is taken as timed at it)")
def cell_entry(label, params, first, later, shared):
    """A group's first cell carries the work its cells share: priced apart from the later ones;
    work shared by the repetitions (made once per parameter point) apart again."""
    # The median, not the mean: a cell that ran while its job was stopped (kill -STOP, to free
    # the machine for a measurement) carries the pause in its wall time.
    median = lambda v: round(statistics.median(v), 4)
    # A later cell's cost can depend on its epsilon (Corollary 1's R, an optimiser's iterations):
    # the median over the repetitions at each epsilon (which drops a paused cell), then the mean
    # over the epsilons, so that the dear epsilons are priced as often as they run.
    by_eps = lambda v: round(statistics.fmean(statistics.median(x) for x in v.values()), 4)
    e = {"label": label, "params": json.loads(params)}
    if first and later:
        e["first_seconds"], e["seconds"] = median(first), by_eps(later)
    elif first:
        e["seconds"] = median(first)
    else:
        e["seconds"] = by_eps(later)
    if shared:
        e["shared_seconds"] = median(shared)
    return e
for path in sorted(glob.glob(os.path.join(scratch, "*.jsonl"))):
    stem = os.path.basename(path)[:-len(".jsonl")]
    cells, threads, jobs, prepare, commit = {}, 1, 1, 0.0, ""
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = (r["label"], json.dumps(r["params"], sort_keys=True))
            first, later, shared = cells.setdefault(key, ([], {}, []))
            made = r.get("shared_work_seconds", 0.0) or 0.0
            if made > 0:
                # Stored at the record's threads: work made on all of the run's threads under
                # --jobs (shared_work_threads) counts as that many times its wall time.
                shared.append(made * (r.get("shared_work_threads", 0) or r["threads"]) / r["threads"])
            # A wait for another worker's shared work is priced with that work, not here.
            waited = min(max(r.get("waited_seconds", 0.0) or 0.0, 0.0), r["wall_seconds"])
            seconds = r["wall_seconds"] - waited - min(made, r["wall_seconds"] - waited)
            if r.get("first_of_group", False):
                first.append(seconds)
            else:
                later.setdefault(r.get("epsilon"), []).append(seconds)
            threads, jobs, prepare, commit = r["threads"], r.get("jobs", 1), r["run_prepare_seconds"], r["git_commit"]
    new_cells = [cell_entry(l, p, *c) for (l, p), c in sorted(cells.items())]
    old = table["configs"].get(stem)
    if only_labels and old:
        # Part of a config re-measured: its cells carry their own date and commit; the entry's
        # threads must agree, since every cell's seconds are read at the entry's thread count.
        if (old["threads"], old.get("jobs", 1)) != (threads, jobs):
            sys.exit(f"{stem}: the table's cells were measured at {old['threads']} threads x {old.get('jobs', 1)} jobs, "
                     f"this sample at {threads} x {jobs}")
        for c in new_cells:
            c["measured_at"], c["git_commit"] = datetime.date.today().isoformat(), commit
            if reference is not None:
                c["reference_seconds"] = reference
            if machine != old.get("machine", table["machine"]):
                c["machine"] = machine
        kept = [c for c in old["cells"] if c["label"] not in only_labels]
        old["cells"] = sorted(kept + new_cells, key=lambda c: (c["label"], json.dumps(c["params"], sort_keys=True)))
        old["basis"] = old.get("basis", "sample (before the basis was recorded)") + f"; {', '.join(sorted(only_labels))}: {basis} ({commit[:12]})"
        continue
    table["configs"][stem] = {
        "threads": threads,
        **({"jobs": jobs} if jobs > 1 else {}),
        "prepare_seconds": round(prepare, 3),
        "measured_at": datetime.date.today().isoformat(),
        "git_commit": commit,
        "basis": basis,
        **({"reference_seconds": reference} if reference is not None else {}),
        "cells": new_cells,
    }
    if machine != table["machine"]:
        table["configs"][stem]["machine"] = machine
# One line per measured cell keeps the table readable and its diffs small.
with open(table_path + ".tmp", "w") as f:
    head = {k: v for k, v in sorted(table.items()) if k != "configs"}
    f.write("{\n" + "".join(f" {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items()) + ' "configs": {\n')
    entries = []
    for name, e in sorted(table["configs"].items()):
        fields = "".join(f"   {json.dumps(k)}: {json.dumps(v)},\n" for k, v in sorted(e.items()) if k != "cells")
        cells = ",\n".join("    " + json.dumps(c, sort_keys=True) for c in e["cells"])
        entries.append(f"  {json.dumps(name)}: {{\n{fields}   \"cells\": [\n{cells}\n   ]\n  }}")
    f.write(",\n".join(entries) + "\n }\n}\n")
os.replace(table_path + ".tmp", table_path)
print(f"  -> {table_path}: {len(table['configs'])} configs")
PY
}
failed=()
if [[ -n $FROM ]]; then
  # With --quick, the records of the quick profile (DIR/NAME-quick.jsonl) make the NAME-quick entry.
  suffix="" profile=full
  (( ${#QUICK[@]} )) && suffix=-quick profile=quick
  for c in "${configs[@]}"; do
    name=$(basename "$c" .json)$suffix
    [[ -f $FROM/$name.jsonl ]] || { echo "$c: no $profile run in $FROM (skipped)"; continue; }
    dir=$SCRATCH/$name
    mkdir -p "$dir"
    ln -s "$(cd "$FROM" && pwd)/$name.jsonl" "$dir/$name.jsonl"
    # A run of the whole grid at fewer repetitions than the config's (a copy of the config with
    # a smaller "repetitions", the same name) prices every cell from its repetitions' medians.
    reps=$(python3 -c 'import json, sys; print(len({json.loads(l)["rep"] for l in open(sys.argv[1]) if l.strip()}))' "$FROM/$name.jsonl")
    echo "$c: from $(wc -l <"$FROM/$name.jsonl") records of its $profile run ($reps repetitions)"
    merge_into_table "$dir" "$profile run of every grid point and epsilon at $reps repetitions: every cell's wall time" "$REFERENCE"
  done
  exit 0
fi
for c in "${configs[@]}"; do
  t0=$(date +%s)
  dir=$SCRATCH/$(basename "$c" .json)
  mkdir -p "$dir"
  before=$("$EXP" --speed-reference)
  if "$EXP" "$c" "${QUICK[@]}" "${THREADS[@]}" --jobs "$JOBS" "${METHODS[@]}" --sample "$SAMPLE" --out "$dir" >/dev/null 2>"$dir/err"; then
    after=$("$EXP" --speed-reference)
    reference=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.6f", (a + b) / 2 }')
    echo "$c: sampled in $(( $(date +%s) - t0 )) s (speed reference $before s before, $after s after)"
    merge_into_table "$dir" "sample: repetition 0, $SAMPLE grid points per method and $SAMPLE epsilons" "$reference"
  else
    echo "$c: FAILED: $(tail -1 "$dir/err")" >&2
    failed+=("$c")
  fi
done
if (( ${#failed[@]} )); then
  echo "not measured: ${failed[*]}" >&2
  exit 1
fi
