// The Bernstein release's queries (baselines/bernstein.cpp, BernsteinRelease::evaluate): the
// tensor-product polynomial of a d = 8 lattice (kde_covtype_pca's and codrna's 8 dimensions) at
// random queries in [0, 1]^8, blocked (a block of queries shares each pass over the lattice as one
// matrix product); and its lattice values (the exact KDE at every lattice point): from the
// lattice's axes (lattice_kernel_sums, what the release uses) against the same sums at the
// lattice's points as queries (exact_kernel_sums), in one run. One thread (as a cell of a
// two-job run has). Report medians.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <vector>

#include "privrace/tasks/kde.hpp"

#include "privrace/baselines/bernstein.hpp"
#include "privrace/core/random.hpp"

using namespace privrace;
using namespace privrace::baselines;

namespace {

struct Case {
  BernsteinRelease release;
  DenseMatrix queries;
};

Case make_case(int k, Eigen::Index queries) {
  DenseMatrix one(1, 8);
  one.setConstant(0.5f);
  KernelSpec spec;
  BernsteinRelease r(one, spec, Domain{0, 1}, k);
  SeededRandom rng(11);
  std::vector<double> v(r.lattice_size());
  for (auto& x : v) x = rng.unit();
  r.set_values(std::move(v));
  DenseMatrix q(queries, 8);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = static_cast<Real>(rng.unit());
  return {std::move(r), std::move(q)};
}

void BM_BernsteinQueriesBlocked(benchmark::State& state) {
  const Case c = make_case(static_cast<int>(state.range(0)), state.range(1));
  omp_set_num_threads(1);
  for (auto _ : state) benchmark::DoNotOptimize(c.release.evaluate(c.queries));
  state.counters["queries/s"] = benchmark::Counter(static_cast<double>(state.iterations() * state.range(1)),
                                                   benchmark::Counter::kIsRate);
}

// The kernel sums of a degree-k lattice in d = 8 against 2,000 data rows in [0, 1]^8 (bandwidth
// 0.5, codrna's): range(1) = 0 from the points, 1 from the axes. Both give the same doubles
// (ExactKde.LatticeSumsEqualTheSumsAtTheLatticePoints).
void BM_BernsteinLatticeValues(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  SeededRandom rng(5);
  DenseMatrix data(2000, 8);
  for (Eigen::Index i = 0; i < data.size(); ++i) data.data()[i] = static_cast<Real>(rng.unit());
  std::vector<double> axis;
  for (int v = 0; v <= k; ++v) axis.push_back(static_cast<double>(v) / k);
  const std::vector<std::vector<double>> axes(8, axis);
  const auto points = static_cast<Eigen::Index>(BernsteinRelease::lattice_points(k, 8));
  DenseMatrix pts(points, 8);
  for (Eigen::Index idx = 0; idx < points; ++idx) {
    Eigen::Index rest = idx;
    for (int j = 8; j-- > 0;) {
      pts(idx, j) = static_cast<Real>(axis[static_cast<std::size_t>(rest % (k + 1))]);
      rest /= k + 1;
    }
  }
  KernelSpec spec;
  spec.bandwidth = 0.5;
  omp_set_num_threads(1);
  for (auto _ : state) {
    if (state.range(1) == 0) benchmark::DoNotOptimize(exact_kernel_sums(data, pts, spec));
    else benchmark::DoNotOptimize(lattice_kernel_sums(data, axes, spec));
  }
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(points) * 2000.0,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

// {degree, 0 points / 1 axes}: degree 4 (390,625 lattice points).
BENCHMARK(BM_BernsteinLatticeValues)->Args({4, 0})->Args({4, 1})->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
// {degree, queries}: degree 4 (390,625 lattice values) and 6 (5.8 million, 46 MB).
BENCHMARK(BM_BernsteinQueriesBlocked)->Args({4, 2000})->Args({6, 256})->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
