#!/usr/bin/env bash
# Installs what is missing, builds (Release, -Werror) and runs every test.
#   scripts/test.sh                   the default suite (well under 10 minutes)
#   PRIVRACE_SANITIZE=address scripts/test.sh   ASan + UBSan build in build-asan/
#   PRIVRACE_SANITIZE=thread  scripts/test.sh   TSan build (OpenMP code) in build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
sanitize="${PRIVRACE_SANITIZE:-}"
build="build"
type="Release"
case "$sanitize" in
  "") ;;
  address) build="build-asan"; type="RelWithDebInfo" ;;
  thread) build="build-tsan"; type="RelWithDebInfo" ;;
  *) echo "PRIVRACE_SANITIZE must be address or thread" >&2; exit 2 ;;
esac
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="$type" -DPRIVRACE_SANITIZE="$sanitize" -DPRIVRACE_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
jobs="$(nproc)"
if [[ "$sanitize" == thread ]]; then
  # libgomp is not TSan-instrumented; its barriers look like races without this.
  export TSAN_OPTIONS="${TSAN_OPTIONS:-} report_signal_unsafe=0"
fi
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600
