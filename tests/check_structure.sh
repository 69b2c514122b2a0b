#!/usr/bin/env bash
# Structural checks (ctest `structure`):
#  1. The commands and the Python module given as arguments load no libtorch (ldd).
#  2. No layer includes a layer above it: each folder of src/privrace may include only the
#     folders listed for it below (the build targets enforce it for symbols; this catches
#     header-only uses too), and src/privrace never includes experiment code.
# usage: check_structure.sh SOURCE_DIR BINARY...
set -euo pipefail
src="$1"; shift
fail=0
for bin in "$@"; do
  if ! deps=$(ldd "$bin" 2>&1); then echo "structure: ldd $bin failed: $deps" >&2; fail=1; continue; fi
  if grep -Eq 'lib(torch|c10)[^ ]*\.so' <<<"$deps"; then
    echo "structure: $bin depends on libtorch:" >&2
    grep -E 'lib(torch|c10)' <<<"$deps" >&2
    fail=1
  fi
done
declare -A allowed=(
  [core]="core"
  [io]="core io"
  [lsh]="core lsh"
  [privacy]="core privacy"
  [sketch]="core io lsh privacy sketch"
  [ldp]="core privacy ldp"
  [tasks]="core io lsh privacy sketch tasks"
  [baselines]="core io lsh privacy sketch tasks baselines"
  [audit]="core io lsh privacy sketch ldp audit"
)
for layer in "${!allowed[@]}"; do
  dir="$src/src/privrace/$layer"
  [[ -d "$dir" ]] || continue
  while IFS= read -r line; do
    file="${line%%:*}"
    used=$(sed -E 's|.*#include "privrace/([a-z_]+)/.*|\1|' <<<"$line")
    if [[ " ${allowed[$layer]} " != *" $used "* ]]; then
      echo "structure: $file includes privrace/$used/ (layer $layer may include: ${allowed[$layer]})" >&2
      fail=1
    fi
  done < <(grep -rHn '#include "privrace/' "$dir" || true)
  if grep -rHnE '#include "(experiment|data/|results|runner)' "$dir" >&2; then
    echo "structure: $dir includes experiment code" >&2
    fail=1
  fi
done
if ((fail)); then exit 1; fi
echo "structure: $# binaries free of libtorch; layers include only layers below them"
