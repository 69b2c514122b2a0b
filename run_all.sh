#!/usr/bin/env bash
# Reproduce every figure: set-up, build, every config in configs/, then the plots.
#   ./run_all.sh            full runs (what reproduces the papers)
#   ./run_all.sh --quick    each config's "quick" section (small grids, few repetitions)
#   ./run_all.sh --all      also the configs named scaling* (long thread-scaling studies)
#   ./run_all.sh --plan     print the cells and the time estimate of each config, run nothing
#   ./run_all.sh --no-fetch download no data set (also PRIVRACE_NO_FETCH=1): offline use
#   ./run_all.sh CONFIG...  only these configs, in this order (kde_skin or configs/kde_skin.json)
# Every data set the configs name that is not present and verified (datasets/registry.json's
# sha256) is first downloaded by datasets/fetch.sh (PRIVRACE_DATA_MIRROR=URL: from a mirror,
# see datasets/README.md). Only a data set that cannot be downloaded (offline, no URL in the
# registry, or --no-fetch) runs on a synthetic stand-in, named at the start and in the final
# summary; a download that fails its checksum stops the run before anything runs.
# A rerun resumes: finished cells are skipped (see configs/README.md).
# Before it starts, it prints the cells of every config and an estimate of the time, priced
# from measured wall time per cell (configs/calibration/cell_costs.json, remade by
# scripts/measure_cell_costs.sh, and the records of earlier runs). Progress goes to the
# terminal, and one line per finished config to results/run_all.log. Groups of cells run two
# at a time on half the threads each (PRIVRACE_JOBS=1: one at a time; the same records).
# Exit status: 0 done; 1 a config failed (the others still ran) or a plot failed; 3 every config
# ran but some methods could not (an optional module such as DP-WGAN's missing), named at the end.
set -euo pipefail
cd "$(dirname "$0")"
REPO=$(pwd)

QUICK=()
ALL=0
PLAN=0
chosen=()
NO_FETCH=0
case ${PRIVRACE_NO_FETCH:-} in ""|0) ;; *) NO_FETCH=1 ;; esac
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=(--quick) ;;
    --all) ALL=1 ;;
    --plan) PLAN=1 ;;
    --no-fetch) NO_FETCH=1 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "run_all.sh: unknown option '$arg' (expected --quick, --all, --plan, --no-fetch or config names)" >&2; exit 2 ;;
    *) chosen+=("$arg") ;;
  esac
done

start=$(date +%s)
# The M2M configs fit DP-WGAN, whose module needs libtorch: ask setup.sh for it
# (PRIVRACE_WITH_TORCH=0 skips it; DP-WGAN cells are then recorded as unavailable, the rest of
# the config runs, and the run ends with exit status 3 naming the configs concerned).
export PRIVRACE_WITH_TORCH=${PRIVRACE_WITH_TORCH:-1}
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
# A fresh one uses Ninja where it is installed: its objects compile while the libraries they
# link are still building (Make waits for each library in turn), which keeps both cores busy
# (docs/experiments.md, "How long a run takes").
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPRIVRACE_TESTS=OFF -DPRIVRACE_BENCH=OFF
else
  cmake -S . -B "$BUILD" >/dev/null
fi
cmake --build "$BUILD" --target privrace-experiment -j "$JOBS"
EXP=$BUILD/privrace-experiment
built=$(date +%s)

configs=()
if (( ${#chosen[@]} > 0 )); then
  for c in "${chosen[@]}"; do
    path=configs/$(basename "$c" .json).json
    [[ -f "$path" ]] || { echo "run_all.sh: no config '$c' (expected a name of configs/*.json)" >&2; exit 2; }
    configs+=("$path")
  done
else
  for c in configs/*.json; do
    [[ -e "$c" ]] || continue
    name=$(basename "$c" .json)
    if [[ "$name" == scaling* && $ALL -eq 0 ]]; then
      echo "skipping $c (scaling study; use --all)"
      continue
    fi
    configs+=("$c")
  done
fi

# Data: each data set the configs name, fetched when absent (or differing from the registry) in
# datasets/. The loader's search order decides what is present: $PRIVRACE_DATA, datasets/,
# ../shared/datasets (datasets/README.md).
declare -A data_kind data_configs data_state data_detail present_in
data_sets=()
stand_ins=()  # "name: why" of each data set that runs on a synthetic stand-in
PYJ=$(command -v python3 || command -v /usr/bin/python3 || true)
if [[ -z "$PYJ" ]]; then
  echo "run_all.sh: no python3 to read the configs' data sets; nothing fetched (absent data runs on stand-ins)" >&2
else
  while IFS=$'\t' read -r name kind used_by; do
    [[ -n "$name" ]] || continue
    data_sets+=("$name") data_kind[$name]=$kind data_configs[$name]=$used_by
  done < <("$PYJ" - datasets/registry.json "${configs[@]}" <<'PYEOF'
import json, os, sys
try:
    reg = json.load(open(sys.argv[1]))["datasets"]
except (OSError, ValueError, KeyError):
    reg = {}
used = {}
for path in sys.argv[2:]:
    try:
        cfg = json.load(open(path))
        d, task = cfg.get("dataset"), cfg.get("task") or {}
        source = task.get("source", "dataset") if isinstance(task, dict) else "dataset"
    except (OSError, ValueError, AttributeError):
        continue  # the runner reports a broken config itself
    if source != "dataset":
        continue  # generated rows (mixture, uniform, rmat): the entry gives only the shape
    name = d.get("name") if isinstance(d, dict) else d
    if isinstance(name, str):
        used.setdefault(name, []).append(os.path.basename(path)[:-5])
for name, cfgs in used.items():
    print(f"{name}\t{reg.get(name, {}).get('kind', 'table')}\t{', '.join(cfgs)}")
PYEOF
  )
fi
to_fetch=()
if (( ${#data_sets[@]} )); then
  status=$(bash datasets/fetch.sh --status "${data_sets[@]}") || { echo "run_all.sh: datasets/fetch.sh --status failed" >&2; exit 1; }
  while IFS=$'\t' read -r name state detail; do
    data_state[$name]=$state data_detail[$name]=$detail
  done <<<"$status"
  for name in "${data_sets[@]}"; do
    case ${data_state[$name]:-unknown} in
      ok|unverified) present_in[${data_detail[$name]}]+=" $name" ;;
      synthetic|unknown) ;;
      missing) to_fetch+=("$name") ;;
      mismatch)
        echo "run_all.sh: $name: ${data_detail[$name]}" >&2
        if [[ ${data_detail[$name]} == "$REPO/datasets/"* ]]; then
          to_fetch+=("$name")
        else
          echo "run_all.sh: $name: that copy is used as it is (its records say checksum: mismatch); datasets/fetch.sh cannot replace it there" >&2
        fi ;;
      no_url) stand_ins+=("$name: no copy found and no download URL in the registry") ;;
    esac
  done
fi
for dir in "${!present_in[@]}"; do echo "data: present in $dir:${present_in[$dir]}"; done
refused=()
if (( ${#to_fetch[@]} )); then
  if (( NO_FETCH )); then
    for name in "${to_fetch[@]}"; do
      [[ ${data_state[$name]} == mismatch ]] || stand_ins+=("$name: not fetched (--no-fetch / PRIVRACE_NO_FETCH)")
    done
  elif (( PLAN )); then
    echo "data: a run first fetches ${to_fetch[*]} (datasets/fetch.sh; a stand-in only if the download is impossible)"
  else
    for name in "${to_fetch[@]}"; do
      echo "== fetching $name (datasets/fetch.sh $name)"
      rc=0
      bash datasets/fetch.sh "$name" || rc=$?
      if (( rc == 3 )); then
        [[ ${data_state[$name]} == mismatch ]] || stand_ins+=("$name: the download failed (offline, or the URL is gone: see the fetch.sh message above)")
      elif (( rc != 0 )); then
        refused+=("$name")
      fi
    done
  fi
fi
if (( ${#refused[@]} )); then
  echo "run_all.sh: datasets/fetch.sh refused ${refused[*]} (checksum mismatch or a failed step: see above);" \
       "nothing was run. Rerun when the source is fixed, use PRIVRACE_DATA_MIRROR, or --no-fetch to run on stand-ins." >&2
  exit 1
fi

# Says loudly which data sets are not real data in this run (at the start and at the end).
stand_in_banner() {
  (( ${#stand_ins[@]} )) || return 0
  local line name
  {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!! SYNTHETIC STAND-INS: ${#stand_ins[@]} data set(s) of this run are NOT the real data:"
    for line in "${stand_ins[@]}"; do
      name=${line%%:*}
      echo "!!   $line"
      if [[ ${data_kind[$name]} == graph ]]; then
        echo "!!     -> an R-MAT graph of the registry's size; configs: ${data_configs[$name]}"
      else
        echo "!!     -> a seeded Gaussian mixture of the registry's shape; configs: ${data_configs[$name]}"
      fi
    done
    echo "!! Their records say \"stand_in\": true and their plot titles say so; fetch them with"
    echo "!! datasets/fetch.sh NAME (or set PRIVRACE_DATA_MIRROR) and rerun into a fresh results/."
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  } >&2
}
stand_in_banner

# Groups of cells run two at a time, each on half the threads (privrace-experiment --jobs;
# docs/experiments.md, "Jobs"): many methods leave a core idle, and the records are the same.
# PRIVRACE_JOBS=1 runs one group at a time; scaling studies always do (they time the threads).
RUN_JOBS=${PRIVRACE_JOBS:-2}
if ! [[ $RUN_JOBS =~ ^[1-9][0-9]*$ ]]; then
  echo "run_all.sh: PRIVRACE_JOBS='$RUN_JOBS': expected a positive whole number" >&2
  exit 2
fi
cores=$(nproc)
[[ ${OMP_NUM_THREADS:-} =~ ^[1-9][0-9]*$ ]] && cores=$OMP_NUM_THREADS
(( RUN_JOBS <= cores )) || RUN_JOBS=$cores
jobs_for() { if [[ $(basename "$1") == scaling* ]]; then echo 1; else echo "$RUN_JOBS"; fi; }

# "12m30s" for a number of seconds; "?" for nan (never measured).
duration() {
  [[ $1 == nan || -z $1 ]] && { echo "?"; return; }
  awk -v s="$1" 'BEGIN { s = int(s + 0.5); if (s >= 3600) printf "%dh%02dm\n", s / 3600, (s % 3600) / 60;
                         else if (s >= 60) printf "%dm%02ds\n", s / 60, s % 60; else printf "%ds\n", s }'
}

# The plan: cells per config and the estimate, before anything runs.
declare -A est_of pending_of
est_total=0
unmeasured=()
echo
printf '%-30s %8s %8s %10s\n' config cells "to run" estimate
for c in "${configs[@]}"; do
  if ! line=$("$EXP" "$c" "${QUICK[@]}" --jobs "$(jobs_for "$c")" --plan 2>"$BUILD/plan.err"); then
    printf '%-30s %s\n' "$(basename "$c" .json)" "cannot plan: $(tail -1 "$BUILD/plan.err")"
    est_of[$c]=nan pending_of[$c]=?
    continue
  fi
  IFS=$'\t' read -r name total done pending est unpriced basis <<<"$line"
  est_of[$c]=$est pending_of[$c]=$pending
  note=""
  if [[ $est == nan ]]; then
    note=" (never measured)"; unmeasured+=("$name")
  elif (( unpriced > 0 )); then
    note=" ($unpriced cells of unmeasured methods priced at the config's mean)"
  fi
  [[ $est == nan ]] || est_total=$(awk -v a="$est_total" -v b="$est" 'BEGIN { print a + b }')
  printf '%-30s %8s %8s %10s%s\n' "$name" "$total" "$pending" "$(duration "$est")" "$note"
done
threads_note=$("$EXP" "${configs[0]}" "${QUICK[@]}" --jobs "$(jobs_for "${configs[0]}")" --plan 2>/dev/null | awk -F'\t' '{ print $7 }' | sed 's/.*\[\(.*\)\]$/\1/')
echo "estimated total: $(duration "$est_total") on ${threads_note:-this machine}, from measured time per cell"
# The estimate is at the calibration's nominal speed; a shared machine's speed wanders, so say
# what the same workload takes on it now (experiments/cost_estimate.hpp, speed_reference_seconds).
nominal=""
[[ -n $PYJ && -f configs/calibration/cell_costs.json ]] &&
  nominal=$("$PYJ" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("reference_seconds", ""))' configs/calibration/cell_costs.json 2>/dev/null || true)
if [[ -n $nominal ]] && now=$("$EXP" --speed-reference 2>/dev/null); then
  echo "  (priced at the speed reference ${nominal} s; this machine takes ${now} s for it now: at this speed about $(duration "$(awk -v a="$est_total" -v n="$now" -v r="$nominal" 'BEGIN { print a * n / r }')")"
  echo "   for the configs, before set-up and plots)"
fi
echo "  (configs/calibration/cell_costs.json says where it was measured; measured at fewer threads than"
echo "   this run has, the estimate assumes linear scaling and is a lower bound)"
(( ${#unmeasured[@]} == 0 )) || echo "  not included, never measured: ${unmeasured[*]} (scripts/measure_cell_costs.sh)"
echo
(( PLAN == 0 )) || exit 0

mkdir -p results
configs_start=$(date +%s)
LOG=results/run_all.log
mode=${QUICK[0]:-full}
mode=${mode#--}
failed=()
incomplete=()  # configs whose runner exited 3: some methods could not run (optional module missing)
spent=0 spent_est=0 left_est=$est_total
i=0
for c in "${configs[@]}"; do
  i=$(( i + 1 ))
  est=${est_of[$c]}
  # Time left for every config not yet run, corrected by how the estimate has fared so far.
  if [[ $est != nan ]]; then left_est=$(awk -v a="$left_est" -v b="$est" 'BEGIN { print a - b }'); fi
  ratio=$(awk -v a="$spent" -v b="$spent_est" 'BEGIN { print (b > 0 ? a / b : 1) }')
  # The pace so far can mislead (a resumed config whose estimate priced cells that ran across a
  # pause, or whose shared work is cached): where it is off the plan by more than 25%, both.
  rest="about $(duration "$(awk -v a="$left_est" -v r="$ratio" 'BEGIN { print a * r }')") for the rest"
  if awk -v r="$ratio" 'BEGIN { exit !(r < 0.8 || r > 1.25) }'; then
    rest="about $(duration "$left_est") for the rest as planned, $(duration "$(awk -v a="$left_est" -v r="$ratio" 'BEGIN { print a * r }')") at the pace so far"
  fi
  echo "== [$i/${#configs[@]}] $c ${QUICK[*]}: ${pending_of[$c]} cells to run, estimate $(duration "$est"); after it, $rest"
  t0=$(date +%s)
  rc=0
  "$EXP" "$c" "${QUICK[@]}" --jobs "$(jobs_for "$c")" || rc=$?
  if (( rc == 0 )); then
    status=ok
    echo "== $c done in $(( $(date +%s) - t0 )) s"
  elif (( rc == 3 )); then  # every other method ran; the runner named the missing ones above
    status="incomplete(exit 3: methods unavailable)"
    echo "== $c done in $(( $(date +%s) - t0 )) s, but some methods could not run (see above); continuing" >&2
    incomplete+=("$c")
  else
    status="failed(exit $rc)"
    echo "== $c FAILED; continuing with the others" >&2
    failed+=("$c")
  fi
  took=$(( $(date +%s) - t0 ))
  if [[ $est != nan ]]; then
    spent=$(( spent + took ))
    spent_est=$(awk -v a="$spent_est" -v b="$est" 'BEGIN { print a + b }')
  fi
  printf '%s config=%s mode=%s cells_to_run=%s seconds=%s estimated=%s status=%s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(basename "$c" .json)" "$mode" "${pending_of[$c]}" "$took" \
    "$(duration "$est")" "$status" >>"$LOG"
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
plots_start=$(date +%s)
if [[ -z "$PY" ]]; then
  echo "run_all.sh: no python3 with matplotlib and numpy found (apt-get install python3-matplotlib python3-numpy); plots skipped" >&2
  plots_ok=0
else
  # The plot scripts are independent (one figure family each, single-threaded): as many at once
  # as there are cores.
  declare -A plot_of=()
  plot_reap() {  # waits for one plot script to end and checks its exit status
    local pid rc=0
    wait -n -p pid "${!plot_of[@]}" || rc=$?
    (( rc == 0 )) || { echo "run_all.sh: ${plot_of[$pid]} failed" >&2; plots_ok=0; }
    unset "plot_of[$pid]"
  }
  for script in plots/plot_*.py; do
    [[ -e "$script" ]] || continue
    (( ${#plot_of[@]} < cores )) || plot_reap
    "$PY" "$script" &
    plot_of[$!]=$script
  done
  while (( ${#plot_of[@]} )); do plot_reap; done
fi

echo
echo "results: $REPO/results/*.jsonl (one record per cell), *.csv, *.summary.json"
echo "figures: $REPO/plots/*.png and *.pdf"
end=$(date +%s)
echo "total time: $(( end - start )) s: set-up and build $(( built - start )) s, configs $(( plots_start - configs_start )) s" \
     "(estimated $(duration "$est_total")), plots $(( end - plots_start )) s; one line per config in $LOG"
if (( ${#stand_ins[@]} )); then
  printf '%s stand_ins=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(printf '%s\n' "${stand_ins[@]}" | cut -d: -f1 | paste -sd,)" >>"$LOG"
  stand_in_banner
elif (( ${#data_sets[@]} )); then
  echo "data: no synthetic stand-in in this run"
fi
if (( ${#incomplete[@]} > 0 )); then
  echo "configs with methods that could not run (optional module missing; their cells are in" \
       "results/NAME.unavailable.jsonl and a rerun tries them again): ${incomplete[*]}" >&2
fi
if (( ${#failed[@]} > 0 )); then
  echo "failed configs: ${failed[*]}" >&2
  exit 1
fi
(( plots_ok )) || exit 1
(( ${#incomplete[@]} == 0 )) || exit 3
