// KME's pivoted Cholesky (baselines/kme.hpp) on 20,000 uniform points in [0, 1]^2, L2 kernel of
// bandwidth 0.05, tol 1e-5, capped at 800 pivots (the cap binds, as it does at 100,000 points in
// the KDE configs). In one run: the former selection (namespace former: each row's L(i, 0..t)
// contiguous at a fixed stride, in double, a pass over the rows per step; the baseline), and the
// panel layout in double and in float (the chosen pivots refactored in double) with batched
// steps (kme.cpp); then a high-rank case over lookaheads. Report medians.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "privrace/baselines/kme.hpp"
#include "privrace/core/random.hpp"

using namespace privrace;
using namespace privrace::baselines;

namespace former {

// The selection as it was before the panel layout: row i of `rows` holds L(i, 0..t).
std::vector<std::size_t> pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol,
                                          std::size_t cap) {
  const auto M = static_cast<std::size_t>(points.rows());
  const auto d = static_cast<std::size_t>(points.cols());
  DoubleMatrix rows(static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(cap));
  std::vector<double> resid(M);
  for (std::size_t i = 0; i < M; ++i) resid[i] = kernel_value(spec, points.row(static_cast<Eigen::Index>(i)).data(),
                                                              points.row(static_cast<Eigen::Index>(i)).data(), d);
  std::vector<char> used(M, 0);
  std::vector<std::size_t> pivots;
  for (std::size_t t = 0; t < cap; ++t) {
    const auto p = static_cast<std::size_t>(std::max_element(resid.begin(), resid.end()) - resid.begin());
    if (resid[p] <= tol) break;
    pivots.push_back(p);
    used[p] = 1;
    const double piv = std::sqrt(resid[p]);
    const double* zp = points.row(static_cast<Eigen::Index>(p)).data();
    const double* lp = rows.row(static_cast<Eigen::Index>(p)).data();
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(M); ++i) {
      double* li = rows.row(i).data();
      if (used[static_cast<std::size_t>(i)] && static_cast<std::size_t>(i) != p) { li[t] = 0.0; continue; }
      const double dot = Eigen::Map<const Eigen::VectorXd>(li, static_cast<Eigen::Index>(t))
                             .dot(Eigen::Map<const Eigen::VectorXd>(lp, static_cast<Eigen::Index>(t)));
      const double v = (kernel_value(spec, points.row(i).data(), zp, d) - dot) / piv;
      li[t] = v;
      resid[static_cast<std::size_t>(i)] = std::max(0.0, resid[static_cast<std::size_t>(i)] - v * v);
    }
    resid[p] = 0.0;
  }
  return pivots;
}

}  // namespace former

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

// range(0): 0 the former selection, 1 panels in double, 2 panels in float; range(1): lookahead.
void BM_PivotedCholesky(benchmark::State& state) {
  const KernelSpec k = l2_kernel();
  const auto lookahead = static_cast<std::size_t>(state.range(1));
  std::size_t m = 0;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      const auto pivots = former::pivoted_cholesky(points(), k, 1e-5, 800);
      m = pivots.size();
      benchmark::DoNotOptimize(pivots.data());
    } else {
      const auto pc = pivoted_cholesky(points(), k, 1e-5, 800, state.range(0) == 1 ? PivotRows::Double : PivotRows::Float,
                                       lookahead);
      m = pc.pivots.size();
      benchmark::DoNotOptimize(pc.L.data());
    }
  }
  state.counters["pivots"] = static_cast<double>(m);
  static const char* const kLabels[] = {"former: strided rows, double", "panels, double",
                                        "panels, float, pivots refactored in double"};
  state.SetLabel(kLabels[state.range(0)]);
}
BENCHMARK(BM_PivotedCholesky)
    ->Args({0, 0})
    ->Args({1, kPivotLookahead})
    ->Args({2, kPivotLookahead})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Deep in the rank, where the KDE configs spend their KME time (20,000 points reach rank 13,421
// there): the first 10,000 points, 3,000 pivots. range(0) = 0: the former selection; else float
// rows with that lookahead.
void BM_PivotedCholeskyHighRank(benchmark::State& state) {
  const DoubleMatrix z = points().topRows(10000);
  const KernelSpec k = l2_kernel();
  std::size_t m = 0;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      m = former::pivoted_cholesky(z, k, 1e-5, 3000).size();
    } else {
      const auto pc = pivoted_cholesky(z, k, 1e-5, 3000, PivotRows::Float, static_cast<std::size_t>(state.range(0)));
      m = pc.pivots.size();
      benchmark::DoNotOptimize(pc.L.data());
    }
  }
  state.counters["pivots"] = static_cast<double>(m);
}
BENCHMARK(BM_PivotedCholeskyHighRank)->Arg(0)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
