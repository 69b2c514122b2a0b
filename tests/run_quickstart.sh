#!/usr/bin/env bash
# ctest quickstart: runs every ```sh block of docs/quickstart.md, in order, in a fresh
# directory, with the build's commands and Python module, and checks the plot was written.
#   tests/run_quickstart.sh DOC COMMANDS_DIR PYTHON_DIR   (a build: BUILD and BUILD/python)
set -euo pipefail
doc=$(realpath "$1")
bin=$(realpath "$2")
pydir=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '/^```sh$/ {on = 1; next} /^```/ {on = 0} on' "$doc" > "$work/quickstart.sh"
[[ -s "$work/quickstart.sh" ]] || { echo "no sh blocks in $doc" >&2; exit 1; }
cd "$work"
# Debian's python3 (numpy, matplotlib) before any other on PATH; the build's privrace commands.
PATH="$bin:/usr/bin:$PATH" PYTHONPATH="$pydir" bash -euo pipefail quickstart.sh
[[ -s density.png ]] || { echo "the quickstart wrote no density.png" >&2; exit 1; }
echo "quickstart: every command ran; density.png $(stat -c %s density.png) bytes"
