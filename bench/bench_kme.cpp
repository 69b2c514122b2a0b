// KME's pivoted Cholesky (baselines/kme.hpp) on 20,000 uniform points in [0, 1]^2, L2 kernel of
// bandwidth 0.05, tol 1e-5, capped at 800 pivots (the cap binds, as it does at 100,000 points in
// the KDE configs). In one run: the panel layout in double and in float (the chosen pivots
// refactored in double) with batched steps (kme.cpp); then a high-rank case over lookaheads.
// Report medians.
#include <benchmark/benchmark.h>

#include <vector>

#include "privrace/baselines/kme.hpp"
#include "privrace/core/random.hpp"

using namespace privrace;
using namespace privrace::baselines;

namespace {

const DoubleMatrix& points() {
  static const DoubleMatrix z = [] {
    SeededRandom rng(5);
    DoubleMatrix p(20000, 2);
    for (Eigen::Index i = 0; i < p.size(); ++i) p.data()[i] = rng.unit();
    return p;
  }();
  return z;
}

KernelSpec l2_kernel() {
  KernelSpec k;
  k.kernel = Kernel::L2;
  k.bandwidth = 0.05;
  k.power = 1;
  return k;
}

// range(0): 0 panels in double, 1 panels in float; range(1): lookahead.
void BM_PivotedCholesky(benchmark::State& state) {
  const KernelSpec k = l2_kernel();
  const auto lookahead = static_cast<std::size_t>(state.range(1));
  std::size_t m = 0;
  for (auto _ : state) {
    const auto pc = pivoted_cholesky(points(), k, 1e-5, 800, state.range(0) == 0 ? PivotRows::Double : PivotRows::Float,
                                     lookahead);
    m = pc.pivots.size();
    benchmark::DoNotOptimize(pc.L.data());
  }
  state.counters["pivots"] = static_cast<double>(m);
  static const char* const kLabels[] = {"panels, double", "panels, float, pivots refactored in double"};
  state.SetLabel(kLabels[state.range(0)]);
}
BENCHMARK(BM_PivotedCholesky)
    ->Args({0, kPivotLookahead})
    ->Args({1, kPivotLookahead})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Deep in the rank, where the KDE configs spend their KME time (20,000 points reach rank 13,421
// there): the first 10,000 points, 3,000 pivots, float rows; range(0): the lookahead.
void BM_PivotedCholeskyHighRank(benchmark::State& state) {
  const DoubleMatrix z = points().topRows(10000);
  const KernelSpec k = l2_kernel();
  std::size_t m = 0;
  for (auto _ : state) {
    const auto pc = pivoted_cholesky(z, k, 1e-5, 3000, PivotRows::Float, static_cast<std::size_t>(state.range(0)));
    m = pc.pivots.size();
    benchmark::DoNotOptimize(pc.L.data());
  }
  state.counters["pivots"] = static_cast<double>(m);
}
BENCHMARK(BM_PivotedCholeskyHighRank)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
