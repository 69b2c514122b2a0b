# Shared set-up of the fault tests: a scratch directory, inputs drawn by a Park-Miller
# generator in awk (the same digits on every machine), and a throw-away repository whose
# registry names one absent data set, so privrace-experiment runs on its synthetic stand-in.
set -euo pipefail
unset PRIVRACE_DATA PRIVRACE_HOME
export OMP_NUM_THREADS=2
work=$(mktemp -d)
cleanup_hooks=()
cleanup() {
  local h
  for h in "${cleanup_hooks[@]+"${cleanup_hooks[@]}"}"; do eval "$h" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND exited with status $?" >&2' ERR
cd "$work"

failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() {  # check DESCRIPTION COMMAND...: a property that must hold
  local what="$1"; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
contains() { grep -qF -- "$2" "$1"; }      # contains FILE TEXT
contains_both() { contains "$1" "$2" && contains "$1" "$3"; }
prefix_of() { head -c "$(stat -c %s "$1")" "$2" | cmp -s - "$1"; }   # prefix_of A B: B starts with A
no_temps() {                                # no_temps DIR: no writer's temporary left
  [ -z "$(find "$1" -name '.*.tmp??????' -print -quit)" ]
}
same() { cmp -s "$1" "$2"; }
absent() { [ ! -e "$1" ]; }
readable() { "$P" info "$1" > /dev/null; }   # readable SKETCH: privrace info accepts it
finish() {
  if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}

gen() {  # gen ROWS COLS SEED
  awk -v n="$1" -v d="$2" -v x="$3" 'function u() { x = (16807 * x) % 2147483647; return x / 2147483647 }
    BEGIN { for (i = 0; i < n; i++) { line = ""; for (j = 0; j < d; j++) line = line (j ? "," : "") sprintf("%.6f", u()); print line } }'
}

make_repo() {  # make_repo DIR: datasets/registry.json with one absent 2-D data set "tiny"
  mkdir -p "$1/datasets"
  cat > "$1/datasets/registry.json" <<'JSON'
{"schema": 1, "datasets": {"tiny": {"kind": "table", "source_url": "test", "format": "csv", "rows": 3000, "columns": 2,
  "files": [{"path": "tiny/tiny.csv", "sha256": null, "sha256_note": "test"}], "features": [1, 2], "label": null,
  "bounds": [[0, 1], [0, 1]], "preprocessing": {"scale": "none"}}}}
JSON
}

kde_config() {  # kde_config ROWS-LIST EPSILONS REPETITIONS: a KDE sweep of RACE sketches on "tiny"
  cat <<JSON
{"name": "t_kde", "task": {"type": "kde", "kernel": "l2", "bandwidth": 0.3, "queries": 200},
 "dataset": {"name": "tiny"}, "metric": "mre",
 "methods": [{"name": "race", "label": "RACE", "grid": {"rows": [$1]}, "fixed": {"width": 100}}],
 "epsilons": [$2], "repetitions": $3, "seed": 3, "threads": 1}
JSON
}

# Every line of a jsonl file is a complete JSON object with a key.
jsonl_complete() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
if data and not data.endswith(b"\n"):
    sys.exit("partial last line")
for line in data.decode().splitlines():
    if "key" not in json.loads(line):
        sys.exit("record without key")
PY
}

# The records of two jsonl files agree cell by cell, timings and run-order fields left out.
same_records() {
  /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/compare_records.py" "$1" "$2"
}
