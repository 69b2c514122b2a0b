// The Bernstein release's queries (baselines/bernstein.cpp, BernsteinRelease::evaluate): the
// tensor-product polynomial of a d = 8 lattice (kde_covtype_pca's and codrna's 8 dimensions) at
// random queries in [0, 1]^8, blocked (a block of queries shares each pass over the lattice as one
// matrix product). One thread (as a cell of a two-job run has). Report medians.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <vector>

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

}  // namespace

// {degree, queries}: degree 4 (390,625 lattice values) and 6 (5.8 million, 46 MB).
BENCHMARK(BM_BernsteinQueriesBlocked)->Args({4, 2000})->Args({6, 256})->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
