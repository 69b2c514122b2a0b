// LDP-ERM protocols over simulated players (logistic loss, theta in [-3, 3]^p). Medians:
//   build/bench/bench_ldp --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// items_per_second = player reports per second. The baseline in the same run is the
// non-private loop that evaluates the same losses and sums them (no randomisation). The
// *_1e6 / *_1e7 cells run one iteration per repetition, medians of 3. A change is measured
// against the previous main's build of this binary (docs/scaling.md#benchmarks).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <map>
#include <memory>

#include "privrace/ldp/bernstein.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/highdim.hpp"
#include "privrace/privacy/mechanisms.hpp"
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

// Algorithm 2's collection alone (p = 1, k = 32: 33 reports a player), 10^6 players, both
// threads, the players' losses as ldp_bernstein computes them (grid_losses): the library's
// laplace_average (rounding per player, the noise summed per coordinate at once).
static void BM_Alg2_Collection_1e6(benchmark::State& state) {
  const int p = 1, k = 32;
  const std::size_t n = 1000000;
  const Players& pl = players(n, p);
  const ErmProblem pr = problem(p);
  auto fill = [&](std::uint64_t i, std::span<double> u) {
    thread_local std::vector<double> scratch(k + 1);
    grid_losses(pr, k, pl.row(i), pl.y[i], u.data(), scratch.data());
  };
  const std::size_t d = grid_points(k, p);
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const VectorEstimate e = laplace_average(n, d, 1.0, ++seed, fill, 2);
    benchmark::DoNotOptimize(e.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n * d));
}
BENCHMARK(BM_Alg2_Collection_1e6)->Iterations(1)->Repetitions(3)->Unit(benchmark::kSecond)->UseRealTime();

// A player's squared-loss values at every grid point (ldp_erm_linear's Algorithm 2, grid_losses),
// one thread, per player. k as Theorem 3 picks it at n = 10^6 or 10^7 and eps = 1-4 (p = 1: 112,
// p = 2: 12, p = 3: 6). range(1) = 0: the grid's axis remade for every player (grid_losses
// without an axis); 1: made once (grid_axis), as ldp_bernstein does. The same values.
static void BM_GridLossesSquared(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), k = p == 1 ? 112 : (p == 2 ? 12 : 6);
  ErmProblem pr = problem(p);
  pr.kind = Loss::Squared;
  const Players pl = generate_players(Loss::Squared, 4096, static_cast<std::size_t>(p), 5, 0.8);
  std::vector<double> out(grid_points(k, p)), scratch(static_cast<std::size_t>(k) + 1), axis(scratch.size());
  grid_axis(pr, k, axis.data());
  std::size_t i = 0;
  for (auto _ : state) {
    if (state.range(1) == 0) grid_losses(pr, k, pl.row(i), pl.y[i], out.data(), scratch.data());
    else grid_losses(pr, k, axis.data(), pl.row(i), pl.y[i], out.data(), scratch.data());
    benchmark::DoNotOptimize(out.data());
    i = (i + 1) % pl.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_GridLossesSquared)->ArgsProduct({{1, 2, 3}, {0, 1}})->Repetitions(5)->ReportAggregatesOnly(true);

// An Algorithm 3 cell as ldp_erm_logistic runs it at n = 10^7 (p = 1, eps = 1, k by Theorem 3,
// players' bits + server + the risk of the result), both threads.
static void BM_Alg3_Cell_1e7(benchmark::State& state) {
  const int p = 1;
  const std::size_t n = 10000000;
  const Players& pl = players(n, p);
  ErmProblem pr = problem(p);
  pr.lo = -8;
  pr.hi = 8;
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const ErmResult r = ldp_bernstein_1bit(pr, pl, 1.0, BernsteinOptions{}, ++seed, 2);
    state.counters["player_s"] = r.player_seconds;
    state.counters["server_s"] = r.server_seconds;
    state.counters["k"] = r.k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Alg3_Cell_1e7)->Iterations(1)->Repetitions(3)->Unit(benchmark::kSecond)->UseRealTime();

// Algorithm 7 (Compressed) as ldp_highdim runs it, m = 200, simplex of radius 2, eps = 1,
// scaled to 10^6 players, both threads: the records of the experiment's generator (2 entries
// +-1/sqrt 2 of d = 1000, half of them in a block of 10).
static void BM_Alg7_Compressed_1e6_m200(benchmark::State& state) {
  static const std::pair<SparseRows, Eigen::VectorXd> data = [] {
    const int n = 1000000, d = 1000;
    SeededRandom rng(21);
    std::vector<Eigen::Triplet<double>> e;
    Eigen::VectorXd y(n);
    for (int i = 0; i < n; ++i) {
      int a = static_cast<int>(rng.below(d)), b = a;
      while (b == a) b = rng.unit() < 0.5 ? static_cast<int>(rng.below(10)) : static_cast<int>(rng.below(d));
      const double va = rng.bit() ? M_SQRT1_2 : -M_SQRT1_2, vb = rng.bit() ? M_SQRT1_2 : -M_SQRT1_2;
      e.emplace_back(i, a, va);
      e.emplace_back(i, b, vb);
      y(i) = std::clamp((a < 5 ? va : 0.0) / 5 + (b < 5 ? vb : 0.0) / 5 + 0.1 * sample_normal(rng), -1.0, 1.0);
    }
    SparseRows X(n, d);
    X.setFromTriplets(e.begin(), e.end());
    return std::make_pair(std::move(X), std::move(y));
  }();
  std::uint64_t seed = 0;
  for (auto _ : state) {
    const HighDimResult r = ldp_compressed_regression(data.first, data.second, 200, 1.0, SparseSet::Simplex, 2.0, ++seed, 1.5, 2);
    benchmark::DoNotOptimize(r.w.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * data.second.size()));
}
BENCHMARK(BM_Alg7_Compressed_1e6_m200)->Iterations(1)->Repetitions(3)->Unit(benchmark::kSecond)->UseRealTime();

BENCHMARK_MAIN();
