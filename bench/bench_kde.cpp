// Exact kernel sums in few dimensions (tasks/kde.cpp, weighted_row_kernel_sums), L2 kernel,
// d = 8, 20,000 data rows in [0, 1]^8 against 512 queries, bandwidth 0.5 (codrna's Bernstein
// lattice in miniature). In one run: the former loop (namespace former: a query at a time, the
// distance over the coordinates, the Hermite table read per pair, one running sum; the
// baseline), the portable lane loop (PRIVRACE_KDE_SCALAR=1) and the AVX2 lanes. Report medians.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/tasks/kde.hpp"

using namespace privrace;

namespace former {

// The table as it was: k(s) and its slope per step at s = i / 256, cubic Hermite between them.
struct Table {
  std::vector<double> value, slope;
  Table() {
    for (std::size_t i = 0; i < 64 * 256 + 2; ++i) {
      const double s = static_cast<double>(i) / 256.0;
      value.push_back(pstable_kernel_tabulated(s));  // a grid point: the exact value
      slope.push_back(s <= 0 ? -std::sqrt(2.0 / std::numbers::pi) / 256.0
                             : std::sqrt(2.0 / std::numbers::pi) * std::expm1(-0.5 / (s * s)) / 256.0);
    }
  }
  double operator()(double s) const {
    if (!(s < 64.0)) return pstable_kernel_tabulated(s);
    const double x = s * 256.0;
    const auto i = static_cast<std::size_t>(x);
    const double t = x - static_cast<double>(i);
    const double t2 = t * t, t3 = t2 * t;
    return (2 * t3 - 3 * t2 + 1) * value[i] + (t3 - 2 * t2 + t) * slope[i] + (-2 * t3 + 3 * t2) * value[i + 1] +
           (t3 - t2) * slope[i + 1];
  }
};

std::vector<double> sums(const DoubleMatrix& x, const std::vector<double>& w, const DoubleMatrix& q, double bandwidth) {
  static const Table table;
  const Eigen::Index n = x.rows(), m = q.rows(), d = x.cols();
  std::vector<double> out(static_cast<std::size_t>(m), 0.0);
#pragma omp parallel for schedule(dynamic, 1)
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index b0 = 0; b0 < n; b0 += 2048) {
      double sum = 0.0;
      for (Eigen::Index i = b0; i < std::min(n, b0 + 2048); ++i) {
        double acc = 0.0;
        for (Eigen::Index k = 0; k < d; ++k) {
          const double diff = x(i, k) - q(j, k);
          acc += diff * diff;
        }
        sum += w[static_cast<std::size_t>(i)] * table(std::sqrt(acc) / bandwidth);
      }
      out[static_cast<std::size_t>(j)] += sum;
    }
  return out;
}

}  // namespace former

namespace {

struct Case {
  DoubleMatrix x, q;
  DenseMatrix qf;
  std::vector<double> w;
  Case() {
    SeededRandom rng(7);
    x.resize(20000, 8);
    qf.resize(512, 8);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.unit();
    for (Eigen::Index i = 0; i < qf.size(); ++i) qf.data()[i] = static_cast<Real>(rng.unit());
    q = qf.cast<double>();
    w.assign(static_cast<std::size_t>(x.rows()), 1.0);
  }
};
const Case& data() {
  static const Case c;
  return c;
}

// 0: former loop; 1: portable lanes; 2: AVX2 lanes (the library's default where built with AVX2).
void BM_ExactKernelSumsD8(benchmark::State& state) {
  const Case& c = data();
  KernelSpec spec;
  spec.kernel = Kernel::L2;
  spec.bandwidth = 0.5;
  if (state.range(0) == 1) setenv("PRIVRACE_KDE_SCALAR", "1", 1);
  for (auto _ : state) {
    auto s = state.range(0) == 0 ? former::sums(c.x, c.w, c.q, 0.5) : weighted_row_kernel_sums(c.x, c.w, c.qf, spec);
    benchmark::DoNotOptimize(s.data());
  }
  unsetenv("PRIVRACE_KDE_SCALAR");
  state.counters["seconds_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations()) * 20000.0 * 512.0,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ExactKernelSumsD8)->DenseRange(0, 2)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
