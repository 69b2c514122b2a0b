// LDP-ERM protocols over simulated players (logistic loss, theta in [-3, 3]^p). Medians:
//   build/bench/bench_ldp --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// items_per_second = player reports per second. The baseline in the same run is the
// non-private loop that evaluates the same losses and sums them (no randomisation).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <map>
#include <memory>

#include "privrace/ldp/bernstein.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/ldp/smooth.hpp"

using namespace privrace;
using namespace privrace::ldp;

namespace {
const Players& players(std::size_t n, int p) {
  static std::map<std::pair<std::size_t, int>, Players> cache;
  auto key = std::make_pair(n, p);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, generate_players(Loss::Logistic, n, static_cast<std::size_t>(p), 1, 1.5)).first;
  return it->second;
}
ErmProblem problem(int p) {
  ErmProblem pr;
  pr.p = p;
  pr.lo = -3;
  pr.hi = 3;
  return pr;
}
std::vector<double> grid_thetas(const ErmProblem& pr, int k) {
  const std::uint64_t g = grid_points(k, pr.p);
  std::vector<double> th(g * pr.p), t(pr.p);
  for (std::uint64_t i = 0; i < g; ++i) {
    grid_point(i, k, pr.p, t.data());
    pr.theta_from_unit(t.data(), th.data() + i * pr.p);
  }
  return th;
}
}  // namespace

// Algorithm 3: one loss evaluation and one bit per player, 10^7 players, k = 32, p = 1.
// Arg: threads.
static void BM_Alg3_OneBit(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0)), p = 1, k = 32;
  const std::size_t n = 10000000;
  const Players& pl = players(n, p);
  const ErmProblem pr = problem(p);
  const auto th = grid_thetas(pr, k);
  const double inv_b = 1 / pr.loss_bound();
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const VectorEstimate e = sampled_bit_average(
        n, th.size() / p, 1.0, 7, ++seed,
        [&](std::uint64_t i, std::size_t j) { return pr.loss(th.data() + j * p, pl.row(i), pl.y[i]) * inv_b; }, threads);
    benchmark::DoNotOptimize(e.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Alg3_OneBit)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Baseline: the same public coordinate and loss per player, summed without randomisation.
static void BM_Alg3_NonPrivateBaseline(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0)), p = 1, k = 32;
  const std::size_t n = 10000000;
  const Players& pl = players(n, p);
  const ErmProblem pr = problem(p);
  const auto th = grid_thetas(pr, k);
  const std::size_t d = th.size() / p;
  for (auto _ : state) {
    double total = 0;
#pragma omp parallel for reduction(+ : total) num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
      const std::size_t j = public_coordinate(7, static_cast<std::uint64_t>(i), d);
      total += pr.loss(th.data() + j * p, pl.row(static_cast<std::size_t>(i)), pl.y[static_cast<std::size_t>(i)]);
    }
    benchmark::DoNotOptimize(total);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Alg3_NonPrivateBaseline)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Algorithm 2, the players' side (every grid point, Laplace), 10^7 players, p = 1, k = 32,
// both threads: the "10^7 players in < 30 s" figure. One iteration per repetition.
static void BM_Alg2_Players_1e7_k32(benchmark::State& state) {
  const int p = 1, k = 32;
  const std::size_t n = 10000000;
  const Players& pl = players(n, p);
  const ErmProblem pr = problem(p);
  BernsteinOptions o;
  o.k = k;
  o.h = 1;
  o.exact_grid_error = false;
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const ErmResult r = ldp_bernstein(pr, pl, 1.0, o, ++seed, 2);
    state.counters["player_s"] = r.player_seconds;
    state.counters["server_s"] = r.server_seconds;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Alg2_Players_1e7_k32)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// Cost as p grows (k = 8, h = p, 10^5 players, both threads): per-player cost of
// Algorithm 2 ((k+1)^p losses and reports) and Algorithm 3 (one), and the server's
// polynomial construction + minimisation (counters player_us and server_s).
static void BM_CostVsP(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const bool one_bit = state.range(1) != 0;
  const std::size_t n = 100000;
  const Players& pl = players(n, p);
  const ErmProblem pr = problem(p);
  BernsteinOptions o;
  o.k = 8;
  o.exact_grid_error = false;
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const ErmResult r = one_bit ? ldp_bernstein_1bit(pr, pl, 1.0, o, ++seed, 2) : ldp_bernstein(pr, pl, 1.0, o, ++seed, 2);
    state.counters["player_us"] = 1e6 * r.player_seconds / static_cast<double>(n);
    state.counters["server_s"] = r.server_seconds;
    state.counters["grid_points"] = static_cast<double>(r.grid_points);
  }
}
BENCHMARK(BM_CostVsP)->ArgsProduct({{1, 2, 3, 4}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// The server alone: build B_k^(h) from (k+1)^p values and minimise it, k = 8, h = p.
static void BM_ServerVsP(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), k = 8;
  std::vector<double> F(grid_points(k, p));
  SeededRandom rng(3);
  for (auto& v : F) v = rng.unit();
  for (auto _ : state) {
    IteratedBernstein poly(p, k, p, F);
    const PolynomialMinimum m = minimize(poly);
    benchmark::DoNotOptimize(m.value);
  }
}
BENCHMARK(BM_ServerVsP)->DenseRange(1, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

// Section 6.2, players' side: 10^6 players on [-1, 1]^2, 256 Gaussian-kernel queries; the
// trigonometric protocol (one public Chebyshev-cosine term of t^2 - 1, one bit; Arg: t) against
// per-query LDP averaging (Arg 0: one public query, one bit). Both threads; reports/s.
static void BM_SmoothQueries(benchmark::State& state) {
  const int t = static_cast<int>(state.range(0));
  static const PointData data = [] {
    PointData p;
    p.n = 1000000;
    p.d = 2;
    p.x.resize(2 * p.n);
    SeededRandom rng(4);
    for (auto& v : p.x) v = 2 * rng.unit() - 1;
    return p;
  }();
  const auto queries = kde_query_family(2, 8, {0.15, 0.25, 0.4, 0.7});
  std::unique_ptr<TrigonometricBasis> basis;
  std::vector<std::vector<double>> coeffs;
  if (t > 0) {
    basis = std::make_unique<TrigonometricBasis>(2, t, queries.size());
    for (const auto& q : queries) coeffs.push_back(basis->coefficients([&](const double* x) { return q(x); }));
  }
  std::uint64_t seed = 0;
  for (auto _ : state) {
    if (t > 0) {
      const SmoothRelease r = ldp_trigonometric_queries(data, *basis, coeffs, 1.0, SmoothProtocol::Bit, ++seed, 2);
      benchmark::DoNotOptimize(r.answers.data());
    } else {
      const auto a = ldp_per_query_kernel_answers(data, queries, 1.0, ++seed, 2);
      benchmark::DoNotOptimize(a.data());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * data.n));
}
BENCHMARK(BM_SmoothQueries)->Arg(0)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
