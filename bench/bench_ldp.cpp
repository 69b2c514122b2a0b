// LDP-ERM protocols over simulated players (logistic loss, theta in [-3, 3]^p). Medians:
//   build/bench/bench_ldp --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// items_per_second = player reports per second. The baseline in the same run is the
// non-private loop that evaluates the same losses and sums them (no randomisation). The
// *_1e6 / *_1e7 cells compare the former simulation path (namespace former, below) with the
// library's in the same run; one iteration per repetition, medians of 3.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <map>
#include <memory>

#include "privrace/core/error.hpp"
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

// ------------------------------------------------------------------------------------------
// FORMER SIMULATION PATH, kept verbatim for comparison in the same run (not used by the
// library): a seeded generator per player (SeededRandom: a 4 KiB buffer filled per player) and
// the exact table sampler for every report; Algorithm 7 with a full m x m GEMM per block.
namespace former {

template <class Fill>
VectorEstimate laplace_average(std::uint64_t n, std::size_t d, double eps, std::uint64_t seed, Fill&& fill, int threads) {
  const LaplaceRandomizer rnd(eps, d);
  std::vector<std::int64_t> total(d, 0);
  constexpr std::uint64_t kBlock = 1024;
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int64_t> sum(d, 0), report(d);
    std::vector<double> u(d);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint64_t end = std::min<std::uint64_t>(n, (static_cast<std::uint64_t>(b) + 1) * kBlock);
      for (std::uint64_t i = static_cast<std::uint64_t>(b) * kBlock; i < end; ++i) {
        fill(i, std::span<double>(u));
        SeededRandom rng(derive_seed(seed, i));  // player i's own stream
        rnd.report(u, report, rng);
        for (std::size_t j = 0; j < d; ++j) sum[j] += report[j];
      }
    }
#pragma omp critical(privrace_ldp_merge_former)
    for (std::size_t j = 0; j < d; ++j) total[j] += sum[j];
  }
  VectorEstimate est;
  est.players = n;
  est.mean.resize(d);
  est.reports.assign(d, n);
  for (std::size_t j = 0; j < d; ++j)
    est.mean[j] = n ? rnd.decode(static_cast<double>(total[j]), static_cast<double>(n)) : 0.5;
  return est;
}

// The path before the summed noise: every player's report formed from her counter-based
// words (lattice_laplace with the noise), the reports summed.
template <class Fill>
VectorEstimate per_player_noise_average(std::uint64_t n, std::size_t d, double eps, std::uint64_t seed, Fill&& fill,
                                        int threads) {
  const LaplaceRandomizer rnd(eps, d);
  const double L = static_cast<double>(rnd.levels()), scale = rnd.noise_scale();
  std::vector<std::int64_t> total(d, 0);
  constexpr std::uint64_t kBlock = 1024;
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int64_t> sum(d, 0);
    std::vector<double> u(d), report(d);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint64_t end = std::min<std::uint64_t>(n, (static_cast<std::uint64_t>(b) + 1) * kBlock);
      for (std::uint64_t i = static_cast<std::uint64_t>(b) * kBlock; i < end; ++i) {
        fill(i, std::span<double>(u));
        for (std::size_t j = 0; j < d; ++j) u[j] = std::clamp(u[j], 0.0, 1.0) * L;
        lattice_laplace(u.data(), d, scale, PlayerStream(seed, i), 0, report.data());
        for (std::size_t j = 0; j < d; ++j) sum[j] += static_cast<std::int64_t>(report[j]);
      }
    }
#pragma omp critical(privrace_ldp_merge_per_player)
    for (std::size_t j = 0; j < d; ++j) total[j] += sum[j];
  }
  VectorEstimate est;
  est.players = n;
  est.mean.resize(d);
  for (std::size_t j = 0; j < d; ++j) est.mean[j] = rnd.decode(static_cast<double>(total[j]), static_cast<double>(n));
  return est;
}

// A player's Algorithm 2 losses as grid_losses computed them for the squared loss before its
// additive tensor build: each grid point decoded (grid_point), mapped to theta and loss() / b.
inline void grid_losses_direct(const ErmProblem& pr, int k, const double* x, double y, double* out) {
  const std::size_t p = static_cast<std::size_t>(pr.p);
  const double inv_b = 1.0 / pr.loss_bound();
  std::vector<double> t(p), theta(p);
  for (std::size_t j = 0; j < grid_points(k, pr.p); ++j) {
    grid_point(j, k, pr.p, t.data());
    pr.theta_from_unit(t.data(), theta.data());
    out[j] = pr.loss(theta.data(), x, y) * inv_b;
  }
}

// Largest |eigenvalue| of a symmetric operator by power iteration (a few % high for safety).
double former_operator_norm(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply, Eigen::Index d) {
  Eigen::VectorXd v = Eigen::VectorXd::Ones(d) / std::sqrt(static_cast<double>(d));
  double L = 0;
  for (int it = 0; it < 200; ++it) {
    const Eigen::VectorXd u = apply(v);
    const double nu = u.norm();
    if (nu == 0) break;
    if (std::abs(nu - L) < 1e-6 * nu) {
      L = nu;
      break;
    }
    L = nu;
    v = u / nu;
  }
  return 1.05 * L;
}

HighDimResult former_compressed_regression(const SparseRows& X, const Eigen::VectorXd& y, int m, double eps, SparseSet set,
                                           double r, std::uint64_t seed, double z_max, int threads) {
  check_epsilon(eps);
  if (!(z_max > 0)) throw UsageError("compressed regression: z_max must be > 0");
  if (threads <= 0) threads = omp_get_max_threads();
  const Eigen::Index n = X.rows(), d = X.cols();
  const Eigen::MatrixXd Phi = gaussian_projection(m, static_cast<int>(d), derive_seed(seed, 1));  // public
  HighDimResult out;
  const bool noisy = std::isfinite(eps);
  // Lattice and noise (exact discrete Laplace on integers, no floating-point Laplace).
  // z: stochastic rounding of z / Delta to k in Z^m, |k_j - z_j / Delta| < 1. For any two
  // records (clipped to ||z||_2 <= z_max) and any roundings k, k' of them,
  //   ||k - k'||_1 < ||z - z'||_1 / Delta + 2m <= sqrt(m) ||z - z'||_2 / Delta + 2m
  //                <= 2 sqrt(m) z_max / Delta + 2m,
  // so Lambda_z = ceil(2 sqrt(m) z_max / Delta) + 2m bounds the L1 sensitivity after rounding;
  // noise DiscreteLaplace(Lambda_z / (eps/2)) gives P(o | k) <= e^(eps/2) P(o | k') for every
  // pair of roundings, hence for the mixtures over the rounding: (eps/2)-LDP for z.
  // y (|y| <= 1): the same with Lambda_y = ceil(2 / Delta_y) + 2 and eps/2. Composition: eps.
  const double delta = z_max / 16384.0, delta_y = 1.0 / 16384.0;
  const double lambda_z = std::ceil(2 * std::sqrt(static_cast<double>(m)) * z_max / delta) + 2.0 * m;
  const double lambda_y = std::ceil(2 / delta_y) + 2;
  std::unique_ptr<DiscreteLaplace> noise_z, noise_y;
  std::shared_ptr<const ExactGeometric> table_z, table_y;
  double var_z = 0, var_y = 0;  // noise variance in lattice units
  if (noisy) {
    noise_z = std::make_unique<DiscreteLaplace>(lambda_z / (eps / 2));
    noise_y = std::make_unique<DiscreteLaplace>(lambda_y / (eps / 2));
    table_z = noise_z->bulk_sampler();
    table_y = noise_y->bulk_sampler();
    var_z = noise_z->variance();
    var_y = noise_y->variance();
    out.noise_scale = noise_z->scale() * delta;
    out.noise_scale_y = noise_y->scale() * delta_y;
  }
  out.lattice_step = delta;
  // Fixed chunks of players (independent of the thread count); each chunk's partial moments
  // in integer-valued doubles per block, then summed in chunk order: thread-invariant.
  constexpr Eigen::Index kBlock = 1024;
  const Eigen::Index chunks = std::min<Eigen::Index>(64, std::max<Eigen::Index>(1, (n + kBlock - 1) / kBlock));
  const Eigen::Index per_chunk = (n + chunks - 1) / chunks;
  std::vector<Eigen::MatrixXd> S_part(static_cast<std::size_t>(chunks), Eigen::MatrixXd::Zero(m, m));
  std::vector<Eigen::VectorXd> g_part(static_cast<std::size_t>(chunks), Eigen::VectorXd::Zero(m));
  std::vector<std::size_t> clipped(static_cast<std::size_t>(chunks), 0);
  const std::uint64_t player_seed = derive_seed(seed, 2);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (Eigen::Index c = 0; c < chunks; ++c) {
    const Eigen::Index begin = c * per_chunk, end = std::min(n, begin + per_chunk);
    Eigen::MatrixXd Zb(kBlock, m);
    Eigen::VectorXd Yb(kBlock);
    std::vector<std::int64_t> k(static_cast<std::size_t>(m)), ky(1);
    Eigen::VectorXd z(m);
    for (Eigen::Index b = begin; b < end; b += kBlock) {
      const Eigen::Index rows = std::min(kBlock, end - b);
      for (Eigen::Index q = 0; q < rows; ++q) {
        const Eigen::Index i = b + q;
        z.setZero();
        for (SparseRows::InnerIterator it(X, i); it; ++it) z += it.value() * Phi.col(it.col());
        const double nz = z.norm();
        if (nz > z_max) {
          z *= z_max / nz;
          ++clipped[static_cast<std::size_t>(c)];
        }
        const double yi = std::clamp(y(i), -1.0, 1.0);
        SeededRandom rng(derive_seed(player_seed, static_cast<std::uint64_t>(i)));  // player i's stream
        for (Eigen::Index j = 0; j < m; ++j) {
          const double u = z(j) / delta, f = std::floor(u);
          k[static_cast<std::size_t>(j)] = static_cast<std::int64_t>(f) + (rng.unit() < u - f ? 1 : 0);
        }
        {
          const double u = yi / delta_y, f = std::floor(u);
          ky[0] = static_cast<std::int64_t>(f) + (rng.unit() < u - f ? 1 : 0);
        }
        if (noisy) {
          noise_z->add_to(k, rng, table_z.get());
          noise_y->add_to(ky, rng, table_y.get());
        }
        for (Eigen::Index j = 0; j < m; ++j) Zb(q, j) = static_cast<double>(k[static_cast<std::size_t>(j)]);
        Yb(q) = static_cast<double>(ky[0]);
      }
      // Lattice units here; scaled by Delta at the end.
      S_part[static_cast<std::size_t>(c)].noalias() += Zb.topRows(rows).transpose() * Zb.topRows(rows);
      g_part[static_cast<std::size_t>(c)].noalias() += Zb.topRows(rows).transpose() * Yb.head(rows);
    }
  }
  Eigen::MatrixXd S = Eigen::MatrixXd::Zero(m, m);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(m);
  for (Eigen::Index c = 0; c < chunks; ++c) {
    S += S_part[static_cast<std::size_t>(c)];
    g += g_part[static_cast<std::size_t>(c)];
    out.clipped += clipped[static_cast<std::size_t>(c)];
  }
  const double nn = static_cast<double>(std::max<Eigen::Index>(n, 1));
  S *= delta * delta / nn;
  g *= delta * delta_y / nn;
  // Unbiased second moment: E[z~ z~^T] = z z^T + Delta^2 (Var(noise) + rounding variance) I.
  // The noise variance is known and removed; the rounding variance p(1 - p) <= 1/4 of a step^2
  // depends on the data and is left in (a bias below Delta^2 / 4 = z_max^2 2^-30, negligible).
  // The noise on y is independent of z, so g is unbiased as it is.
  (void)var_y;
  S.diagonal().array() -= delta * delta * var_z;
  // theta = argmin over Phi C of theta^T S theta - 2 g^T theta, with theta = Phi v, v in C
  // (accelerated projected gradient in v; Q v = Phi^T S Phi v applied in factored form).
  auto apply = [&](const Eigen::VectorXd& v) -> Eigen::VectorXd { return Phi.transpose() * (S * (Phi * v)); };
  const Eigen::VectorXd c = Phi.transpose() * g;
  const Eigen::VectorXd v = constrained_quadratic(apply, c, former_operator_norm(apply, d), set, r);
  const Eigen::VectorXd theta = Phi * v;
  out.w = constrained_least_squares(Phi, theta, set, r);
  return out;
}

}  // namespace former
// ------------------------------------------------------------------------------------------

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
// threads, the players' losses as ldp_bernstein computes them (grid_losses). Arg 0: the former
// path (seeded generator per player, exact table sampler); 1: counter-based words, every
// player's report formed with its noise (lattice_laplace); 2: the library's (rounding per
// player, the noise summed per coordinate at once).
static void BM_Alg2_Collection_1e6(benchmark::State& state) {
  const int path = static_cast<int>(state.range(0));
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
    const VectorEstimate e = path == 2   ? laplace_average(n, d, 1.0, ++seed, fill, 2)
                             : path == 1 ? former::per_player_noise_average(n, d, 1.0, ++seed, fill, 2)
                                         : former::laplace_average(n, d, 1.0, ++seed, fill, 2);
    benchmark::DoNotOptimize(e.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n * d));
}
BENCHMARK(BM_Alg2_Collection_1e6)->DenseRange(0, 2)->Iterations(1)->Repetitions(3)->Unit(benchmark::kSecond)->UseRealTime();

// A player's squared-loss values at every grid point (ldp_erm_linear's Algorithm 2), one
// thread, per player: Arg 0 the former direct path, 1 the library's (grid_losses). k as
// Theorem 3 picks it at n = 10^6 or 10^7 and eps = 1-4 (p = 1: 112, p = 2: 12, p = 3: 6).
static void BM_GridLossesSquared(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), k = p == 1 ? 112 : (p == 2 ? 12 : 6);
  const bool library = state.range(1) != 0;
  ErmProblem pr = problem(p);
  pr.kind = Loss::Squared;
  const Players pl = generate_players(Loss::Squared, 4096, static_cast<std::size_t>(p), 5, 0.8);
  std::vector<double> out(grid_points(k, p)), scratch(static_cast<std::size_t>(k) + 1);
  std::size_t i = 0;
  for (auto _ : state) {
    if (library) grid_losses(pr, k, pl.row(i), pl.y[i], out.data(), scratch.data());
    else former::grid_losses_direct(pr, k, pl.row(i), pl.y[i], out.data());
    benchmark::DoNotOptimize(out.data());
    i = (i + 1) % pl.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_GridLossesSquared)->ArgsProduct({{1, 2, 3}, {0, 1}});

// An Algorithm 3 cell as ldp_erm_logistic runs it at n = 10^7 (p = 1, eps = 1, k by Theorem 3,
// players' bits + server + the risk of the result), both threads. The one-bit protocol was
// already counter-based (one derive_seed word a player), so there is no former path to compare.
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
// scaled to 10^6 players (the former path needs minutes at 10^7), both threads: the records of
// the experiment's generator (2 entries +-1/sqrt 2 of d = 1000, half of them in a block of 10).
// Arg 0: the former path, Arg 1: the current library call.
static void BM_Alg7_Compressed_1e6_m200(benchmark::State& state) {
  const bool fast = state.range(0) != 0;
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
    const HighDimResult r = fast ? ldp_compressed_regression(data.first, data.second, 200, 1.0, SparseSet::Simplex, 2.0, ++seed, 1.5, 2)
                                 : former::former_compressed_regression(data.first, data.second, 200, 1.0, SparseSet::Simplex,
                                                                        2.0, ++seed, 1.5, 2);
    benchmark::DoNotOptimize(r.w.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * data.second.size()));
}
BENCHMARK(BM_Alg7_Compressed_1e6_m200)->Arg(0)->Arg(1)->Iterations(1)->Repetitions(3)->Unit(benchmark::kSecond)->UseRealTime();

BENCHMARK_MAIN();
