// Exact kernel sums in few dimensions (tasks/kde.cpp, weighted_row_kernel_sums), L2 kernel,
// d = 8, 20,000 data rows in [0, 1]^8 against 512 queries, bandwidth 0.5 (codrna's Bernstein
// lattice in miniature). In one run: the portable lane loop (PRIVRACE_KDE_SCALAR=1) and the AVX2
// lanes. Report medians.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/tasks/kde.hpp"

using namespace privrace;

namespace {

struct Case {
  DoubleMatrix x;
  DenseMatrix qf;
  std::vector<double> w;
  Case() {
    SeededRandom rng(7);
    x.resize(20000, 8);
    qf.resize(512, 8);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.unit();
    for (Eigen::Index i = 0; i < qf.size(); ++i) qf.data()[i] = static_cast<Real>(rng.unit());
    w.assign(static_cast<std::size_t>(x.rows()), 1.0);
  }
};
const Case& data() {
  static const Case c;
  return c;
}

// 0: portable lanes; 1: AVX2 lanes (the library's default where built with AVX2).
void BM_ExactKernelSumsD8(benchmark::State& state) {
  const Case& c = data();
  KernelSpec spec;
  spec.kernel = Kernel::L2;
  spec.bandwidth = 0.5;
  if (state.range(0) == 0) setenv("PRIVRACE_KDE_SCALAR", "1", 1);
  for (auto _ : state) {
    auto s = weighted_row_kernel_sums(c.x, c.w, c.qf, spec);
    benchmark::DoNotOptimize(s.data());
  }
  unsetenv("PRIVRACE_KDE_SCALAR");
  state.counters["seconds_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations()) * 20000.0 * 512.0,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ExactKernelSumsD8)->DenseRange(0, 1)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
