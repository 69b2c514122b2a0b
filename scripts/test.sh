#!/usr/bin/env bash
# Installs what is missing, builds (Release, -Werror) and runs every test.
#   scripts/test.sh                   the default suite (a fresh build and every test: about 15 minutes on 2 cores)
#   PRIVRACE_SANITIZE=address scripts/test.sh   ASan + UBSan build in build-asan/
#   PRIVRACE_SANITIZE=thread  scripts/test.sh   TSan build (OpenMP code) in build-tsan/, with
#                                               clang++ and LLVM's libomp + Archer, which tell
#                                               TSan about OpenMP synchronisation (GCC's libgomp
#                                               is not instrumented: every barrier looks racy)
#   PRIVRACE_FUZZ=1 scripts/test.sh             builds the libFuzzer targets (fuzz/, clang++ with
#                                               ASan + UBSan) in build-fuzz/ and runs each for
#                                               PRIVRACE_FUZZ_SECONDS (default 60) from the seed
#                                               corpus in fuzz/corpus/; a crash, hang (> 10 s an
#                                               input) or sanitizer report fails the run and
#                                               leaves the input in build-fuzz/findings/
#   PRIVRACE_WITH_TORCH=1 scripts/test.sh       also installs libtorch (setup.sh), so the DP-WGAN
#                                               module is built and its tests run (without it they
#                                               are skipped, and a fit is checked to fail clearly);
#                                               a build directory configured earlier without libtorch
#                                               finds it at the next configure
#   PRIVRACE_WITH_MPI=1 scripts/test.sh         also installs OpenMPI (setup.sh), builds `privrace`
#                                               with -DPRIVRACE_MPI=ON (mpirun -np K privrace sketch)
#                                               and runs its mpirun tests (test_mpi: -np 1, 2, 3 with
#                                               --oversubscribe) with the suite
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ "${PRIVRACE_FUZZ:-0}" == 1 ]]; then
  targets=(fuzz_table_reader fuzz_edge_list fuzz_sketch_file fuzz_config fuzz_counting_queries fuzz_m2m_domain)
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DPRIVRACE_FUZZ=ON \
    -DPRIVRACE_TESTS=OFF -DPRIVRACE_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
  seconds="${PRIVRACE_FUZZ_SECONDS:-60}"
  for t in "${targets[@]}"; do
    work="build-fuzz/corpus/$t"  # new inputs go here, never into the repository's seed corpus
    mkdir -p "$work" build-fuzz/findings
    echo "fuzz: $t for ${seconds} s"
    "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/findings/$t-" "$work" "fuzz/corpus/$t"
  done
  exit 0
fi
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
    # Without the DP-WGAN module: libtorch's headers do not compile with clang 14 over
    # libstdc++ 12 (c10::IValue incomplete in std::vector), and libtorch is not instrumented.
    compiler=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON)
  else
    echo "test.sh: clang++ and LLVM's libomp (libarcher.so) not found: apt-get install clang libomp-dev" >&2
    exit 1
  fi
fi
mpi=OFF
if [[ "${PRIVRACE_WITH_MPI:-0}" == 1 ]]; then mpi=ON; fi
# A fresh build directory uses Ninja where it is installed (scripts/setup.sh installs it): its
# objects compile while the libraries they link are still building, where Make waits for each
# library in turn. An existing directory keeps its generator. The tests are switched on
# explicitly: a build/ made by ./run_all.sh has them off in its cache.
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="$type" -DPRIVRACE_SANITIZE="$sanitize" -DPRIVRACE_TESTS=ON \
  -DPRIVRACE_BENCH=ON -DPRIVRACE_MPI="$mpi" \
  "${compiler[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
jobs="$(nproc)"
if [[ "$sanitize" == thread ]]; then
  export OMP_TOOL_LIBRARIES="$archer"
  export TSAN_OPTIONS="${TSAN_OPTIONS:-} ignore_noninstrumented_modules=1 report_signal_unsafe=0"
fi
# --no-tests=error: a build without tests fails here instead of passing with none run.
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600 --no-tests=error
