#!/usr/bin/env bash
# Installs what is missing, builds (Release, -Werror) and runs every test.
#   scripts/test.sh                   the default suite (well under 10 minutes)
#   PRIVRACE_SANITIZE=address scripts/test.sh   ASan + UBSan build in build-asan/
#   PRIVRACE_SANITIZE=thread  scripts/test.sh   TSan build (OpenMP code) in build-tsan/, with
#                                               clang++ and LLVM's libomp + Archer, which tell
#                                               TSan about OpenMP synchronisation (GCC's libgomp
#                                               is not instrumented: every barrier looks racy)
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
compiler=()
archer=""
if [[ "$sanitize" == thread ]]; then
  archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | sort -V | tail -1 || true)
  if command -v clang++ >/dev/null && [[ -n "$archer" ]]; then
    compiler=(-DCMAKE_CXX_COMPILER=clang++)
  else
    echo "test.sh: clang++ and LLVM's libomp (libarcher.so) not found: apt-get install clang libomp-dev" >&2
    exit 1
  fi
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="$type" -DPRIVRACE_SANITIZE="$sanitize" -DPRIVRACE_BENCH=ON "${compiler[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
jobs="$(nproc)"
if [[ "$sanitize" == thread ]]; then
  export OMP_TOOL_LIBRARIES="$archer"
  export TSAN_OPTIONS="${TSAN_OPTIONS:-} ignore_noninstrumented_modules=1 report_signal_unsafe=0"
fi
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600
