// Local-DP randomisers, the iterated Bernstein polynomial and the LDP-ERM protocols.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <limits>
#include <map>

#include "privrace/core/error.hpp"
#include "privrace/ldp/bernstein.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/ldp/simulation.hpp"
#include "privrace/ldp/smooth.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "test_util.hpp"

using namespace privrace;
using namespace privrace::ldp;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}

TEST(LdpRandomizer, BitRandomizerSpendsAtMostEpsilonAndMatchesItsDensity) {
  for (double eps : {0.1, 0.5, 1.0, 4.0}) {
    const BitRandomizer r(eps);
    EXPECT_LE(r.effective_epsilon(), eps);
    EXPECT_GT(r.effective_epsilon(), eps - 1e-12);
    EXPECT_NEAR(r.p_hi(), std::exp(eps) / (1 + std::exp(eps)), 1e-14);
  }
  // Seeded chi-square (2 cells) of the bit at u = 0.3 and unbiasedness of the debiased mean.
  const BitRandomizer r(1.0);
  const double u = 0.3;
  const std::uint64_t n = 400000;
  std::uint64_t ones = 0;
  for (std::uint64_t i = 0; i < n; ++i) ones += r.report(u, derive_seed(77, i));
  const double q = r.prob_one(u), e1 = q * n, e0 = (1 - q) * n;
  const double chi = (ones - e1) * (ones - e1) / e1 + ((n - ones) - e0) * ((n - ones) - e0) / e0;
  EXPECT_LT(chi, privrace::testing::chi_square_critical(1));
  const double est = r.debias(static_cast<double>(ones) / n);
  EXPECT_NEAR(est, u, 5 * std::sqrt(r.report_variance(u) / n));
  EXPECT_THROW(BitRandomizer(0.0), UsageError);
  EXPECT_THROW(BitRandomizer(-1.0), UsageError);
  EXPECT_THROW(BitRandomizer(std::nan("")), UsageError);
}

TEST(LdpRandomizer, LaplaceReportIsLatticeValuePlusDiscreteLaplace) {
  // A value on the lattice is not rounded: report - L u must follow the discrete Laplace of
  // scale L * reports / eps.
  const std::uint64_t L = 16, reports = 2;
  const double eps = 1.0;
  const LaplaceRandomizer r(eps, reports, L);
  const DiscreteLaplace ref(static_cast<double>(L * reports) / eps);
  EXPECT_DOUBLE_EQ(r.noise_scale(), ref.scale());
  std::map<long long, long long> hist;
  const long long total = 200000;
  SeededRandom rng(5);
  const double u[2] = {0.25, 0.75};
  std::int64_t out[2];
  for (long long i = 0; i < total / 2; ++i) {
    r.report(u, out, rng);
    ++hist[out[0] - 4];
    ++hist[out[1] - 12];
  }
  const auto [stat, df] = privrace::testing::chi_square(hist, [&](long long y) { return ref.pmf(y); }, -200, 200, total);
  EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "df " << df;
}

TEST(LdpRandomizer, Algorithm1AverageIsUnbiasedAndThreadInvariant) {
  const std::uint64_t n = 200000;
  auto value = [](std::uint64_t i) { return std::fmod(0.37 * static_cast<double>(i) + 0.1, 1.0); };
  double exact = 0;
  for (std::uint64_t i = 0; i < n; ++i) exact += value(i);
  exact /= n;
  auto run = [&](int threads) {
    return laplace_average(n, 1, 1.0, 99, [&](std::uint64_t i, std::span<double> u) { u[0] = value(i); }, threads);
  };
  const VectorEstimate e1 = run(1), e2 = run(2), e3 = run(3);
  EXPECT_EQ(e1.mean, e2.mean);
  EXPECT_EQ(e1.mean, e3.mean);
  const LaplaceRandomizer r(1.0, 1);
  EXPECT_NEAR(e1.mean[0], exact, 5 * std::sqrt(r.report_variance() / n));
  EXPECT_THROW(laplace_average(n, 1, 0.0, 1, [](std::uint64_t, std::span<double>) {}), UsageError);
}

TEST(LdpRandomizer, SampledBitAverageOfLemma2IsUnbiasedAndThreadInvariant) {
  const std::uint64_t n = 1000000;
  const std::size_t d = 6;
  auto value = [](std::uint64_t i, std::size_t j) {
    return 0.5 + 0.4 * std::sin(static_cast<double>(i % 1000) * 0.01 + static_cast<double>(j));
  };
  std::vector<double> exact(d, 0.0);
  for (std::uint64_t i = 0; i < 1000; ++i)
    for (std::size_t j = 0; j < d; ++j) exact[j] += value(i, j) / 1000;  // value is periodic in i with period 1000
  const VectorEstimate a = sampled_bit_average(n, d, 2.0, 11, 12, value, 1);
  const VectorEstimate b = sampled_bit_average(n, d, 2.0, 11, 12, value, 2);
  const VectorEstimate c = sampled_bit_average(n, d, 2.0, 11, 12, value, 3);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.mean, c.mean);
  const BitRandomizer r(2.0);
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < d; ++j) {
    total += a.reports[j];
    EXPECT_NEAR(static_cast<double>(a.reports[j]), static_cast<double>(n) / d, 5 * std::sqrt(static_cast<double>(n) / d));
    // Var of a debiased bit <= 1 / (4 gap^2); plus the sampling of which players land here.
    const double sd = std::sqrt(r.report_variance(0.5) / static_cast<double>(a.reports[j]) + 0.16 / a.reports[j]);
    EXPECT_NEAR(a.mean[j], exact[j], 5 * sd) << j;
  }
  EXPECT_EQ(total, n);
}

TEST(LdpRandomizer, OneBitProtocolIsUnbiasedOverRepetitions) {
  // The mean over 400 independent runs (fresh public and private coins) of a small protocol
  // matches the exact average: unbiasedness, not just consistency.
  const std::uint64_t n = 2000;
  const std::size_t d = 3;
  auto value = [](std::uint64_t i, std::size_t j) { return static_cast<double>((i * 7 + j * 3) % 11) / 10.0; };
  std::vector<double> exact(d, 0.0);
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) exact[j] += value(i, j) / n;
  std::vector<double> avg(d, 0.0), sq(d, 0.0);
  const int reps = 400;
  for (int rep = 0; rep < reps; ++rep) {
    const VectorEstimate e = sampled_bit_average(n, d, 1.0, 1000 + rep, 5000 + rep, value, 1);
    for (std::size_t j = 0; j < d; ++j) {
      avg[j] += e.mean[j] / reps;
      sq[j] += e.mean[j] * e.mean[j] / reps;
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    const double sd = std::sqrt((sq[j] - avg[j] * avg[j]) / reps);
    EXPECT_NEAR(avg[j], exact[j], 5 * sd) << j;
  }
}

TEST(LdpBernstein, ReproducesMultilinearFunctionsExactlyAndQuadraticsByFormula) {
  for (int h : {1, 2, 4}) {
    const int k = 5;
    std::vector<double> F;
    double t[2];
    for (std::uint64_t i = 0; i < grid_points(k, 2); ++i) {
      grid_point(i, k, 2, t);
      F.push_back(1 + 2 * t[0] - t[1] + 3 * t[0] * t[1]);
    }
    const IteratedBernstein P(2, k, h, F);
    for (double a : {0.0, 0.13, 0.5, 0.91})
      for (double b : {0.0, 0.27, 1.0}) {
        const double x[2] = {a, b};
        EXPECT_NEAR(P(x), 1 + 2 * a - b + 3 * a * b, 1e-12);
      }
  }
  // B_k^(h)(t^2) = t^2 + t(1-t)/k^h exactly ((I - B_k) t^2 = -t(1-t)/k, (I - B_k) t(1-t) = t(1-t)/k).
  for (int h : {1, 2, 3})
    for (int k : {3, 8}) {
      std::vector<double> F;
      for (int v = 0; v <= k; ++v) F.push_back(std::pow(static_cast<double>(v) / k, 2));
      const IteratedBernstein P(1, k, h, F);
      for (double a : {0.1, 0.4, 0.77}) EXPECT_NEAR(P(std::span<const double>(&a, 1)), a * a + a * (1 - a) / std::pow(k, h), 1e-12);
    }
  // Polynomials of degree <= k are reproduced as h grows (the iterates converge to interpolation).
  const int k = 4;
  std::vector<double> F;
  auto cubic = [](double x) { return 0.3 - x + 2 * x * x - 1.5 * x * x * x; };
  for (int v = 0; v <= k; ++v) F.push_back(cubic(static_cast<double>(v) / k));
  const IteratedBernstein P(1, k, 80, F);
  for (double a : {0.05, 0.33, 0.8}) EXPECT_NEAR(P(std::span<const double>(&a, 1)), cubic(a), 1e-10);
}

TEST(LdpBernstein, ApproximationErrorFallsAtTheorem2Rate) {
  auto f = [](double x) { return std::exp(std::sin(3 * x)); };
  for (int h : {1, 2, 3}) {
    std::vector<double> logk, loge;
    for (int k : {64, 128, 256}) {  // the O(k^-h) regime of Theorem 2 (pre-asymptotic below)
      std::vector<double> F;
      for (int v = 0; v <= k; ++v) F.push_back(f(static_cast<double>(v) / k));
      const IteratedBernstein P(1, k, h, F);
      const std::vector<double> vals = P.evaluate_grid(401);
      double err = 0;
      for (int i = 0; i < 401; ++i) err = std::max(err, std::abs(vals[i] - f(i / 400.0)));
      logk.push_back(std::log(k));
      loge.push_back(std::log(err));
    }
    const double slope = (loge.back() - loge.front()) / (logk.back() - logk.front());
    EXPECT_LT(slope, -h + 0.3) << "h = " << h;  // O(k^-h): measured -1.0, -1.9, -2.8
    EXPECT_GT(slope, -h - 1.0) << "h = " << h;
  }
}

namespace {
// Definition 6 written out directly (no matrices, no tensor algebra): the 1-D iterated basis
// b^(h)_{v,k}(x) = sum_{i=1}^h C(h,i) (-1)^(i-1) B_k^(i-1)(b_{v,k})(x), with B_k^m(g)(x) evaluated
// by its definition, sum_u B_k^(m-1)(g)(u/k) b_{u,k}(x), and the multivariate iterate
// P(t) = sum_{v in {0..k}^p} F(v/k) prod_j b^(h)_{v_j,k}(t_j).
double bernstein_basis(int k, int v, double x) {
  return std::exp(std::lgamma(k + 1.0) - std::lgamma(v + 1.0) - std::lgamma(k - v + 1.0)) * std::pow(x, v) *
         std::pow(1 - x, k - v);
}
double bernstein_power_of_basis(int m, int k, int v, double x) {  // B_k^m(b_{v,k})(x)
  if (m == 0) return bernstein_basis(k, v, x);
  double s = 0;
  for (int u = 0; u <= k; ++u) s += bernstein_power_of_basis(m - 1, k, v, static_cast<double>(u) / k) * bernstein_basis(k, u, x);
  return s;
}
double iterated_basis(int h, int k, int v, double x) {
  double s = 0;
  for (int i = 1; i <= h; ++i) {
    const double binom = std::exp(std::lgamma(h + 1.0) - std::lgamma(i + 1.0) - std::lgamma(h - i + 1.0));
    s += (i % 2 ? 1.0 : -1.0) * std::round(binom) * bernstein_power_of_basis(i - 1, k, v, x);
  }
  return s;
}
double definition6(int k, int h, const std::vector<double>& F, double x, double y) {  // p = 2
  double s = 0;
  for (int v0 = 0; v0 <= k; ++v0)
    for (int v1 = 0; v1 <= k; ++v1) s += F[v0 * (k + 1) + v1] * iterated_basis(h, k, v0, x) * iterated_basis(h, k, v1, y);
  return s;
}
}  // namespace

TEST(LdpBernstein, TwoDimensionalIterateMatchesDefinition6Directly) {
  SeededRandom rng(3);
  for (int k : {2, 3, 4})
    for (int h : {1, 2, 3}) {
      const std::size_t K = static_cast<std::size_t>(k) + 1;
      std::vector<double> F(K * K);
      for (auto& f : F) f = rng.unit();
      const IteratedBernstein P(2, k, h, F);
      // The previous construction I - (I - B (x) B)^h, for comparison: it differs for h >= 2.
      std::vector<double> M(K * K), old = F, r = F;
      for (std::size_t u = 0; u < K; ++u) IteratedBernstein::basis(k, static_cast<double>(u) / k, M.data() + u * K);
      for (int j = 1; j < h; ++j) {
        std::vector<double> mr(K * K, 0.0);
        for (std::size_t a = 0; a < K; ++a)
          for (std::size_t b = 0; b < K; ++b)
            for (std::size_t c = 0; c < K; ++c)
              for (std::size_t d = 0; d < K; ++d) mr[a * K + b] += M[a * K + c] * M[b * K + d] * r[c * K + d];
        for (std::size_t q = 0; q < K * K; ++q) {
          r[q] -= mr[q];
          old[q] += r[q];
        }
      }
      double max_old_gap = 0;
      for (double x : {0.0, 0.1, 0.37, 0.5, 0.82, 1.0})
        for (double y : {0.0, 0.23, 0.61, 0.95, 1.0}) {
          const double t[2] = {x, y};
          EXPECT_NEAR(P(t), definition6(k, h, F, x, y), 1e-12) << "k " << k << " h " << h << " at " << x << ", " << y;
          double b0[8], b1[8], o = 0;
          IteratedBernstein::basis(k, x, b0);
          IteratedBernstein::basis(k, y, b1);
          for (std::size_t a = 0; a < K; ++a)
            for (std::size_t b = 0; b < K; ++b) o += old[a * K + b] * b0[a] * b1[b];
          max_old_gap = std::max(max_old_gap, std::abs(o - P(t)));
        }
      if (h == 1) EXPECT_LT(max_old_gap, 1e-13);
      else EXPECT_GT(max_old_gap, 1e-3) << "k " << k << " h " << h;  // the two operators are not the same
    }
}

TEST(LdpBernstein, TensorIterateReproducesTheOneDimensionalFormulaOnProducts) {
  // Multilinear functions exactly (degree <= 1 per variable, for every h); on x^2 y^2 the tensor
  // iterate is the product of the 1-D iterates, (x^2 - (x^2 - x) k^-h)(y^2 - (y^2 - y) k^-h).
  for (int h : {1, 2, 3})
    for (int k : {3, 7}) {
      std::vector<double> F;
      double t[2];
      for (std::uint64_t i = 0; i < grid_points(k, 2); ++i) {
        grid_point(i, k, 2, t);
        F.push_back(t[0] * t[0] * t[1] * t[1]);
      }
      const IteratedBernstein P(2, k, h, F);
      const double kh = std::pow(k, h);
      for (double a : {0.0, 0.2, 0.55, 0.9})
        for (double b : {0.15, 0.5, 1.0}) {
          const double x[2] = {a, b};
          EXPECT_NEAR(P(x), (a * a - (a * a - a) / kh) * (b * b - (b * b - b) / kh), 1e-12);
        }
    }
}

TEST(LdpBernstein, TwoDimensionalApproximationErrorFallsWithK) {
  auto f = [](double x, double y) { return std::exp(std::sin(3 * x)) * std::cos(2 * y + 0.3); };
  for (int h : {1, 2}) {
    std::vector<double> errs;
    const std::vector<int> ks = {16, 32, 64};
    for (int k : ks) {
      std::vector<double> F;
      double t[2];
      for (std::uint64_t i = 0; i < grid_points(k, 2); ++i) {
        grid_point(i, k, 2, t);
        F.push_back(f(t[0], t[1]));
      }
      const IteratedBernstein P(2, k, h, F);
      const int m = 81;
      const std::vector<double> vals = P.evaluate_grid(m);
      double err = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) err = std::max(err, std::abs(vals[i * m + j] - f(i / (m - 1.0), j / (m - 1.0))));
      errs.push_back(err);
    }
    for (std::size_t i = 1; i < errs.size(); ++i) EXPECT_LT(errs[i], errs[i - 1]) << "h = " << h;
    const double slope = std::log(errs.back() / errs.front()) / std::log(static_cast<double>(ks.back()) / ks.front());
    EXPECT_LT(slope, -h + 0.3) << "h = " << h;  // Theorem 2: O(k^-h)
    EXPECT_GT(slope, -h - 1.0) << "h = " << h;
  }
}

TEST(LdpBernstein, MinimiserOfAPolynomialIsFound) {
  const int k = 6;
  std::vector<double> F;
  double t[2];
  for (std::uint64_t i = 0; i < grid_points(k, 2); ++i) {
    grid_point(i, k, 2, t);
    F.push_back((t[0] - 0.3) * (t[0] - 0.3) + (t[1] - 0.65) * (t[1] - 0.65));
  }
  // Plain Bernstein of this quadratic is itself + sum t(1-t)/k: minimiser known in closed form,
  // (x - 0.3)^2 + x(1-x)/k minimised at x = (0.6 - 1/k) / (2 - 2/k).
  const IteratedBernstein P(2, k, 1, F);
  const PolynomialMinimum m = minimize(P, 33);
  EXPECT_NEAR(m.t[0], (0.6 - 1.0 / k) / (2 - 2.0 / k), 1e-6);
  EXPECT_NEAR(m.t[1], (1.3 - 1.0 / k) / (2 - 2.0 / k), 1e-6);
  EXPECT_GT(m.grid_error_bound, 0);
}

namespace {
ErmProblem logistic_problem(int p) {
  ErmProblem pr;
  pr.kind = Loss::Logistic;
  pr.p = p;
  pr.lo = -3;
  pr.hi = 3;
  return pr;
}
}  // namespace

TEST(LdpErm, Algorithm2AtInfiniteEpsilonFindsTheLogisticMinimiserWithinGridResolution) {
  for (int p : {1, 2}) {
    const ErmProblem pr = logistic_problem(p);
    const Players pl = generate_players(Loss::Logistic, 20000, p, 3, 1.5);
    const ErmResult opt = nonprivate_erm(pr, pl, 2);
    BernsteinOptions o;
    o.k = p == 1 ? 24 : 12;
    o.h = 3;
    const ErmResult r = ldp_bernstein(pr, pl, kInf, o, 8, 2);
    for (int j = 0; j < p; ++j) EXPECT_NEAR(r.theta[j], opt.theta[j], (pr.hi - pr.lo) / o.k) << "p " << p;
    EXPECT_LT(r.risk - opt.risk, 1e-3);
    EXPECT_GE(r.risk - opt.risk, -1e-12);
    EXPECT_LT(r.max_grid_noise, 1e-4);  // only the 2^-16 lattice rounding
  }
}

TEST(LdpErm, NonPrivateOptimumMeetsItsGradientMappingToleranceOnInputPerturbedPlayers) {
  // Input perturbation's server fits the optimum to reports whose x carry Laplace noise of
  // scale 8 sqrt(p) and whose labels are flipped w.p. 0.44 at eps = 0.5: a flat risk near 0 whose decrease per Newton step
  // falls below the rounding of its sum. The former backtracking then halved the step 20-40
  // times a Newton iteration and stopped with a gradient mapping of 1e-8 to 1e-7.
  for (int p = 1; p <= 3; ++p)
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      ErmProblem pr = logistic_problem(p);
      pr.lo = -2;
      pr.hi = 2;
      Players pl = generate_players(Loss::Logistic, 100000, static_cast<std::size_t>(p), 1, 0.8);
      SeededRandom rng(seed);
      const double scale = 4.0 * std::sqrt(static_cast<double>(p)) / 0.5;
      for (double& x : pl.x) x += sample_laplace(rng, scale);
      for (double& y : pl.y) y = rng.unit() < 1.0 / (1.0 + std::exp(-0.25)) ? y : -y;  // y by RR at eps / 2
      const ErmResult r = nonprivate_erm(pr, pl, 2);
      std::vector<double> g(static_cast<std::size_t>(p), 0.0), gi(static_cast<std::size_t>(p));
      for (std::size_t i = 0; i < pl.size(); ++i) {
        pr.loss_gradient(r.theta.data(), pl.row(i), pl.y[i], gi.data());
        for (int j = 0; j < p; ++j) g[static_cast<std::size_t>(j)] += gi[static_cast<std::size_t>(j)];
      }
      double mapping = 0;
      for (int j = 0; j < p; ++j) {
        const double t = r.theta[static_cast<std::size_t>(j)], gj = g[static_cast<std::size_t>(j)] / static_cast<double>(pl.size());
        mapping = std::max(mapping, std::abs(std::clamp(t - gj, pr.lo, pr.hi) - t));
      }
      EXPECT_LT(mapping, 1e-10) << "p " << p << " seed " << seed;
    }
}

TEST(LdpErm, GridLossesAgreeWithTheLossAtEveryGridPoint) {
  // The players' side of Algorithm 2 (factored exponentials, vectorised logarithm) against
  // loss() / b at each grid point, for both losses, p = 1..3, a box where the factored path
  // runs and one wide enough to take the direct path.
  for (const Loss kind : {Loss::Logistic, Loss::Squared})
    for (int p = 1; p <= 3; ++p)
      for (const double radius : {8.0, 400.0}) {
        ErmProblem pr = logistic_problem(p);
        pr.kind = kind;
        pr.lo = -radius;
        pr.hi = 0.5 * radius;
        const int k = p == 1 ? 113 : (p == 2 ? 17 : 6);
        const Players pl = generate_players(kind, 50, static_cast<std::size_t>(p), 7, 1.5);
        std::vector<double> out(grid_points(k, p)), scratch(static_cast<std::size_t>(k) + 1), t(p), theta(p);
        double worst = 0;
        std::vector<double> axis(scratch.size()), kept(out.size());
        grid_axis(pr, k, axis.data());
        for (std::size_t i = 0; i < pl.size(); ++i) {
          grid_losses(pr, k, pl.row(i), pl.y[i], out.data(), scratch.data());
          grid_losses(pr, k, axis.data(), pl.row(i), pl.y[i], kept.data(), scratch.data());  // the axis made once
          ASSERT_EQ(kept, out) << "p " << p << " player " << i;
          for (std::size_t j = 0; j < out.size(); ++j) {
            grid_point(j, k, p, t.data());
            pr.theta_from_unit(t.data(), theta.data());
            worst = std::max(worst, std::abs(out[j] - pr.loss(theta.data(), pl.row(i), pl.y[i]) / pr.loss_bound()));
          }
        }
        EXPECT_LT(worst, 1e-12) << "p " << p << " radius " << radius;
      }
}

TEST(LdpErm, ResultsAreIdenticalForOneTwoAndThreeThreads) {
  const ErmProblem pr = logistic_problem(2);
  const Players pl = generate_players(Loss::Logistic, 30000, 2, 4, 1.5);
  BernsteinOptions o;
  o.k = 6;
  o.exact_grid_error = false;
  const ErmResult a1 = ldp_bernstein(pr, pl, 2.0, o, 21, 1), a2 = ldp_bernstein(pr, pl, 2.0, o, 21, 2),
                  a3 = ldp_bernstein(pr, pl, 2.0, o, 21, 3);
  EXPECT_EQ(a1.theta, a2.theta);
  EXPECT_EQ(a1.theta, a3.theta);
  EXPECT_EQ(a1.risk, a3.risk);
  const ErmResult b1 = ldp_bernstein_1bit(pr, pl, 2.0, o, 21, 1), b2 = ldp_bernstein_1bit(pr, pl, 2.0, o, 21, 2),
                  b3 = ldp_bernstein_1bit(pr, pl, 2.0, o, 21, 3);
  EXPECT_EQ(b1.theta, b2.theta);
  EXPECT_EQ(b1.theta, b3.theta);
  const ErmResult c1 = ldp_input_perturbation(pr, pl, 2.0, 5, 1), c3 = ldp_input_perturbation(pr, pl, 2.0, 5, 3);
  EXPECT_EQ(c1.theta, c3.theta);
  EXPECT_EQ(nonprivate_erm(pr, pl, 1).theta, nonprivate_erm(pr, pl, 3).theta);
}

TEST(LdpErm, PlayersCopyingTableRowsGiveTheSameResultsAsPlayersEvaluatedOneByOne) {
  // A table of 300 rows, 20,000 players drawn from it: per-row evaluation (Players::group)
  // against the same players with the rows forgotten, bit for bit.
  for (const Loss kind : {Loss::Logistic, Loss::Squared}) {
    SCOPED_TRACE(loss_name(kind));
    const Players table = generate_players(kind, 300, 2, 11, 1.5);
    const Players rows = resample_players(table.x, table.y, 2, 20000, 12);
    Players plain = rows;
    plain.forget_rows();
    ASSERT_TRUE(rows.shares_rows());
    ASSERT_FALSE(plain.shares_rows());
    ASSERT_LE(rows.first.size(), 300u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::size_t f = rows.first.at(rows.group[i]);
      ASSERT_LE(f, i);
      ASSERT_EQ(rows.y[f], rows.y[i]);
      ASSERT_TRUE(std::equal(rows.row(f), rows.row(f) + 2, rows.row(i)));
    }
    for (std::size_t g = 0; g < rows.first.size(); ++g) ASSERT_EQ(rows.group[rows.first[g]], g);  // first appearances, in order
    ErmProblem pr = logistic_problem(2);
    pr.kind = kind;
    const double theta[2] = {0.7, -1.3};
    EXPECT_EQ(empirical_risk(pr, rows, theta, 2), empirical_risk(pr, plain, theta, 2));
    BernsteinOptions o;
    o.k = 6;  // 49 grid points: Algorithm 2 tabulates every row
    const ErmResult a = ldp_bernstein(pr, rows, 2.0, o, 21, 2), b = ldp_bernstein(pr, plain, 2.0, o, 21, 2);
    EXPECT_EQ(a.theta, b.theta);
    EXPECT_EQ(a.risk, b.risk);
    o.k = 3;  // 16 points: 4 x 300 x 16 <= 20,000 players, so Algorithm 3 tabulates too
    const ErmResult c = ldp_bernstein_1bit(pr, rows, 2.0, o, 21, 2), d = ldp_bernstein_1bit(pr, plain, 2.0, o, 21, 2);
    EXPECT_EQ(c.theta, d.theta);
    EXPECT_EQ(c.risk, d.risk);
    const ErmResult e = ldp_sgd(pr, rows, 2.0, 21), f = ldp_sgd(pr, plain, 2.0, 21);
    EXPECT_EQ(e.theta, f.theta);
    EXPECT_EQ(e.risk, f.risk);
    // The SGD players' gradient without the loss: loss_gradient's, bit for bit.
    double g1[2], g2[2];
    for (std::size_t i = 0; i < 50; ++i) {
      pr.loss_gradient(theta, rows.row(i), rows.y[i], g1);
      pr.gradient(theta, rows.row(i), rows.y[i], g2);
      EXPECT_EQ(g1[0], g2[0]);
      EXPECT_EQ(g1[1], g2[1]);
    }
  }
}

TEST(LdpErm, BadInputIsRefusedWithAClearError) {
  const Players pl = generate_players(Loss::Logistic, 100, 1, 3, 1.0);
  ErmProblem pr = logistic_problem(1);
  BernsteinOptions o;
  o.k = 0;
  o.h = 2;
  EXPECT_NO_THROW(ldp_bernstein(pr, pl, 1.0, o, 1));  // k = 0 means "by Theorem 3"
  EXPECT_THROW(check_grid(0, 2, 1, 8, 1e9), UsageError);
  EXPECT_THROW(check_grid(4, 0, 1, 8, 1e9), UsageError);
  EXPECT_THROW(IteratedBernstein(1, 0, 1, {1.0}), UsageError);
  EXPECT_THROW(IteratedBernstein(1, 2, 0, {1.0, 1.0, 1.0}), UsageError);
  EXPECT_THROW(ldp_bernstein(pr, pl, 0.0, o, 1), UsageError);
  EXPECT_THROW(ldp_bernstein_1bit(pr, pl, -1.0, o, 1), UsageError);
  ErmProblem empty = pr;
  empty.lo = 1;
  empty.hi = -1;
  try {
    ldp_bernstein(empty, pl, 1.0, o, 1);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
  }
  // (k+1)^p too large: refused with the estimate before any allocation.
  ErmProblem big = logistic_problem(10);
  BernsteinOptions ob;
  ob.k = 100;
  const Players pl10 = generate_players(Loss::Logistic, 10, 10, 3, 1.0);
  try {
    ldp_bernstein(big, pl10, 1.0, ob, 1);
    FAIL();
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << e.what();
  }
  // Data outside the unit ball: refused naming the row, or clipped and counted.
  Players out = pl;
  out.x[5] = 1.5;
  out.x[7] = -2.0;
  try {
    Players copy = out;
    clip_to_unit_ball(copy, false, "players");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("row 5"), std::string::npos) << e.what();
  }
  EXPECT_EQ(clip_to_unit_ball(out, true, "players"), 2u);
  EXPECT_EQ(out.clipped, 2u);
  EXPECT_DOUBLE_EQ(out.x[5], 1.0);
  EXPECT_DOUBLE_EQ(out.x[7], -1.0);
}

TEST(LdpErm, BoxDiagnosticsBoundaryDistanceLossRangeAndGridNoise) {
  ErmProblem pr;
  pr.kind = Loss::Squared;
  pr.p = 2;
  pr.lo = -2;
  pr.hi = 2;
  EXPECT_DOUBLE_EQ(boundary_distance(pr, {0.5, -1.2}), 0.8);
  EXPECT_DOUBLE_EQ(boundary_distance(pr, {2.0, 0.0}), 0.0);
  // Two players x = (0.6, 0), (0, 0.6), y = 0.3: L is convex, its maximum over the box at a vertex.
  Players pl;
  pl.p = 2;
  pl.x = {0.6, 0.0, 0.0, 0.6};
  pl.y = {0.3, 0.3};
  const ErmResult opt = nonprivate_erm(pr, pl, 1);
  const double range = loss_range_over_box(pr, pl, opt.risk, 1);
  double brute = 0;
  for (int i = 0; i <= 40; ++i)
    for (int j = 0; j <= 40; ++j) {
      const double th[2] = {-2 + 0.1 * i, -2 + 0.1 * j};
      brute = std::max(brute, empirical_risk(pr, pl, th, 1) - opt.risk);
    }
  EXPECT_NEAR(range, brute, 1e-12);
  // Algorithm 2: b sqrt(2) (k+1)^p / (eps sqrt n); Algorithm 3: b (c_eps / 2) sqrt((k+1)^p / n).
  const double b = pr.loss_bound();
  EXPECT_NEAR(grid_value_noise_sd(pr, 10000, 1.0, 25, false), b * std::sqrt(2.0) * 25 / 100, 1e-12);
  EXPECT_NEAR(grid_value_noise_sd(pr, 10000, 1.0, 25, true),
              b * (std::exp(1.0) + 1) / (std::exp(1.0) - 1) / 2 * std::sqrt(25.0 / 10000), 1e-12);
  EXPECT_EQ(grid_value_noise_sd(pr, 10000, kInf, 25, false), 0.0);
}

TEST(LdpErm, DjwPrivatizerIsUnbiased) {
  SeededRandom rng(9);
  const double g[3] = {0.3, -0.2, 0.5};
  double mean[3] = {0, 0, 0}, z[3];
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    djw_l2_privatize(g, 3, 1.0, 1.0, rng, z);
    for (int j = 0; j < 3; ++j) mean[j] += z[j] / n;
  }
  const double B = djw_l2_scale(3, 1.0, 1.0);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(mean[j], g[j], 5 * B / std::sqrt(3.0 * n));
  // d = 1 is randomised response of a scaled sign: B = L (e^eps + 1)/(e^eps - 1).
  EXPECT_NEAR(djw_l2_scale(1, 1.0, 1.0), (std::exp(1.0) + 1) / (std::exp(1.0) - 1), 1e-12);
}

// A DjwL2 kept over a run of players gives djw_l2_privatize's reports bit for bit from the same
// stream (its constants and buffer are made once): d = 1, 3 and 1000, gradients of every norm
// up to L and beyond it, and a zero gradient after a non-zero one (the buffer is refilled).
TEST(LdpErm, DjwPrivatizerKeptOverPlayersGivesTheSameReports) {
  for (const std::size_t d : {1u, 3u, 1000u}) {
    SeededRandom gen(d), a(77), b(77);
    DjwL2 kept(d, 2.0, 0.7);
    EXPECT_EQ(kept.scale(), djw_l2_scale(d, 2.0, 0.7));
    std::vector<double> g(d), za(d), zb(d);
    for (int player = 0; player < 300; ++player) {
      for (auto& v : g) v = player % 7 == 3 ? 0.0 : (gen.unit() - 0.5) * 5.0 / std::sqrt(static_cast<double>(d));
      djw_l2_privatize(g.data(), d, 2.0, 0.7, a, za.data());
      kept.privatize(g.data(), b, zb.data());
      for (std::size_t j = 0; j < d; ++j) ASSERT_EQ(za[j], zb[j]) << "d " << d << " player " << player << " j " << j;
    }
  }
  EXPECT_THROW(DjwL2(0, 1.0, 1.0), UsageError);
}

TEST(LdpErm, OneBitErrorMatchesAlgorithm2UpToConstants) {
  // Same k, h and players: the 1-bit grid noise is within a constant of Algorithm 2's
  // (here smaller: sqrt((k+1)^p) against (k+1)^p in the per-point standard deviation).
  const ErmProblem pr = logistic_problem(1);
  const Players pl = generate_players(Loss::Logistic, 200000, 1, 6, 1.5);
  BernsteinOptions o;
  o.k = 8;
  o.h = 1;
  o.exact_grid_error = true;  // the diagnostic is off by default
  const ErmResult a = ldp_bernstein(pr, pl, 1.0, o, 31, 2), b = ldp_bernstein_1bit(pr, pl, 1.0, o, 31, 2);
  EXPECT_GT(a.max_grid_noise, 0);
  EXPECT_LT(b.max_grid_noise, 3 * a.max_grid_noise);
  EXPECT_GT(b.max_grid_noise, a.max_grid_noise / 30);
}

#include "privrace/ldp/marginals.hpp"

namespace {
BinaryData random_binary(std::size_t n, std::size_t d, std::uint64_t seed) {
  BinaryData b;
  b.n = n;
  b.d = d;
  b.x.resize(n * d);
  SeededRandom rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const bool cls = rng.bit();  // two latent classes: correlated attributes
    for (std::size_t a = 0; a < d; ++a) b.x[i * d + a] = rng.unit() < (cls ? 0.8 - 0.03 * a : 0.3 + 0.02 * a);
  }
  return b;
}
}  // namespace

TEST(LdpMarginals, ChebyshevMarginalsAtInfiniteEpsilonMatchExactMarginals) {
  const BinaryData data = random_binary(3000, 9, 4);
  for (int k : {2, 3}) {
    const ChebyshevMarginals cm(9, k);  // t = k: exact
    std::vector<double> means(cm.monomials(), 0.0);  // the exact monomial averages (no noise)
    for (std::size_t i = 0; i < data.n; ++i)
      for (std::size_t j = 0; j < cm.monomials(); ++j) means[j] += cm.monomial_value(j, data.row(i)) / data.n;
    const auto queries = subsets_of_size(9, k);
    const auto exact = exact_conjunctions(data, queries);
    for (std::size_t q = 0; q < queries.size(); ++q) EXPECT_NEAR(cm.answer(means, queries[q]), exact[q], 1e-12);
    // The whole protocol at eps = inf: bits are the values; only the sampling of players remains.
    const BinaryData big = random_binary(200000, 9, 6);
    const auto big_exact = exact_conjunctions(big, queries);
    const auto est = ldp_chebyshev_marginals(big, queries, k, 0, kInf, 3, 2);
    // Only the sampling of players per monomial remains: each of the 2^k - 1 terms (c_j = +-1
    // for t = k) averages about n / D players, sd <= 0.5 sqrt(D / n) each.
    const double sd = std::sqrt((std::pow(2.0, k) - 1) * 0.25 * static_cast<double>(cm.monomials()) / big.n);
    for (std::size_t q = 0; q < queries.size(); ++q) EXPECT_NEAR(est[q], big_exact[q], 5 * sd);
    const auto central = central_histogram_marginals(data, queries, kInf, 1);
    for (std::size_t q = 0; q < queries.size(); ++q) EXPECT_NEAR(central[q], exact[q], 1e-12);
  }
  EXPECT_THROW(ChebyshevMarginals(4, 5), UsageError);
  EXPECT_THROW(ChebyshevMarginals(8, 3, 4), UsageError);
}

TEST(LdpMarginals, LowerDegreeChebyshevErrorIsBoundedByItsApproximation) {
  const int d = 12, k = 6, t = 3;
  const ChebyshevMarginals cm(d, k, t);
  EXPECT_EQ(cm.monomials(), 12u + 66u + 220u);
  // |p(z)| <= 1 / T_t(k/(k-1)) on 1..k; T_3(x) = 4x^3 - 3x.
  const double x = 6.0 / 5.0;
  EXPECT_LE(cm.approximation_error(), 1.0 / (4 * x * x * x - 3 * x) + 1e-12);
  const BinaryData data = random_binary(2000, d, 5);
  std::vector<double> means(cm.monomials(), 0.0);
  for (std::size_t i = 0; i < data.n; ++i)
    for (std::size_t j = 0; j < cm.monomials(); ++j) means[j] += cm.monomial_value(j, data.row(i)) / data.n;
  const auto queries = subsets_of_size(d, k);
  const auto exact = exact_conjunctions(data, queries);
  for (std::size_t q = 0; q < queries.size(); ++q)
    EXPECT_LE(std::abs(cm.answer(means, queries[q]) - exact[q]), cm.approximation_error() + 1e-12);
}

#include "privrace/ldp/highdim.hpp"

TEST(LdpHighDim, ProjectionsOntoL1BallAndSimplex) {
  Eigen::VectorXd w(4);
  w << 0.9, -0.6, 0.2, 0.0;
  Eigen::VectorXd a = w;
  project_l1_ball(a, 1.0);
  EXPECT_NEAR(a.lpNorm<1>(), 1.0, 1e-12);
  // Soft threshold at 0.25: (0.65, -0.35, 0, 0).
  EXPECT_NEAR(a(0), 0.65, 1e-12);
  EXPECT_NEAR(a(1), -0.35, 1e-12);
  EXPECT_EQ(a(2), 0.0);
  Eigen::VectorXd s = w;
  project_simplex(s, 1.0);
  EXPECT_NEAR(s.sum(), 1.0, 1e-12);
  EXPECT_GE(s.minCoeff(), 0.0);
  EXPECT_NEAR(s(0), 0.85, 1e-12);  // threshold 0.05 on (0.9, 0.2)
}

TEST(LdpHighDim, SimplexProjectionMatchesTheSortedThreshold) {
  // Against the sort-based threshold of Duchi et al. (2008) on random vectors of several sizes,
  // radii and signs, including vectors already inside (only a shift) and ties.
  SeededRandom rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.next() % 400);
    const double r = 0.1 + 3 * rng.unit();
    Eigen::VectorXd w(d);
    for (Eigen::Index i = 0; i < d; ++i) w(i) = trial % 7 == 0 ? std::round(4 * sample_normal(rng)) / 4 : sample_normal(rng) / (1 + trial % 5);
    std::vector<double> u(w.data(), w.data() + d);
    std::sort(u.begin(), u.end(), std::greater<>());
    double cum = 0, tau = 0;
    for (std::size_t j = 0; j < u.size(); ++j) {
      cum += u[j];
      const double t = (cum - r) / static_cast<double>(j + 1);
      if (u[j] - t > 0) tau = t;
    }
    Eigen::VectorXd got = w;
    project_simplex(got, r);
    for (Eigen::Index i = 0; i < d; ++i) ASSERT_NEAR(got(i), std::max(w(i) - tau, 0.0), 1e-12) << "trial " << trial;
    EXPECT_NEAR(got.sum(), r, 1e-9);
  }
}

TEST(LdpHighDim, SimplexProjectionEndsWhereRoundingWouldCycleBetweenTwoSets) {
  // The absolute values of a FISTA iterate of ldp_highdim (Compressed, m = 10, repetition 1,
  // eps = 1), reduced to the 44 values that still cycle: their sum is r + 3e-11, so the
  // thresholds of the 43- and 44-value sets round across one value and the fixed point went
  // 43, 44, 43, ... for ever (that cell never ended). Now it stops with the sorted threshold.
  const std::vector<double> values = {
      0x1.1b03de64ffcdp-43,  0x1.1f5388ba5b65cp-43, 0x1.7f294bbf78d1ep-43, 0x1.a670e1a5e8747p-43, 0x1.f742e319ab69ep-44,
      0x1.16a7a5b541bbap-41, 0x1.fb984f65c40f3p-44, 0x1.cf6a21954443cp-37, 0x1.0c25029586763p-43, 0x1.16dfa40543df4p-43,
      0x1.19f1e26990e76p-43, 0x1.feee3bd47a4cfp-44, 0x1.14ed09901354bp-43, 0x1.0a494d166fb1fp-43, 0x1.718de5e8bb42dp-40,
      0x1.0feadbc3829cp-43,  0x1.a457d692c764fp-39, 0x1.452ab94fe615p-40,  0x1.2751e712d45b2p-43, 0x1.04e33ce722d6dp-43,
      0x1.14dae40552e6ep-43, 0x1.61512bfbb34fdp-4,  0x1.705bc673551f6p-40, 0x1.102eba688ba93p-43, 0x1.04ea8284a5c49p-43,
      0x1.6f3c32e1bfa86p-41, 0x1.83e06494404d4p-40, 0x1.cd7d2e083bab9p-43, 0x1.fee2dbf8c55ecp-44, 0x1.fcf9a4cd6be3fp-44,
      0x1.4143b3249b4c7p-43, 0x1.a4fc6e689dafap-43, 0x1.014a50d984535p-43, 0x1.c4ac618fe6562p-38, 0x1.77564761f792cp-42,
      0x1.47de640ed9adbp-37, 0x1.8325c92140b8ap-41, 0x1.720f877c43ffap-42, 0x1.a7abb5005e088p-2,  0x1.04dd1f456b71ep-43,
      0x1.9c8c4972a1fc4p-42, 0x1.7783c5927a243p-39, 0x1.03af78828f22bp-43, 0x1.0357056b07bdep-43};
  const double r = 0.5;
  Eigen::VectorXd w = Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  Eigen::VectorXd got = w;
  project_simplex(got, r);  // before the fix: never returns (ctest's timeout fails the test)
  EXPECT_GE(got.minCoeff(), 0.0);
  EXPECT_NEAR(got.sum(), r, 1e-14);
  for (Eigen::Index i = 0; i < w.size(); ++i) EXPECT_NEAR(got(i), w(i), 1e-12);  // tau is below 1e-12
  Eigen::VectorXd l1 = w;
  project_l1_ball(l1, r);
  EXPECT_NEAR(l1.lpNorm<1>(), r, 1e-14);
}

TEST(LdpHighDim, CompressedSensingRecoversAPlantedSparseVectorWithoutNoise) {
  const int d = 1000, m = 200;
  const Eigen::MatrixXd Phi = gaussian_projection(m, d, 3);
  for (SparseSet set : {SparseSet::L1Ball, SparseSet::Simplex}) {
    Eigen::VectorXd w = Eigen::VectorXd::Zero(d);
    w(7) = 0.4;
    w(123) = set == SparseSet::L1Ball ? -0.3 : 0.3;
    w(555) = 0.2;
    w(990) = 0.1;  // ||w||_1 = 1: on the boundary of the set of radius 1
    const Eigen::VectorXd rec = constrained_least_squares(Phi, Phi * w, set, 1.0, 5000);
    EXPECT_LT((rec - w).norm(), 1e-4) << (set == SparseSet::L1Ball ? "l1 ball" : "simplex");
  }
  EXPECT_THROW(constrained_least_squares(Phi, Phi * Eigen::VectorXd::Zero(d), SparseSet::L1Ball, 0.0), UsageError);
}

TEST(LdpHighDim, CompressedRegressionWithoutNoiseFindsTheSparseModel) {
  const int n = 4000, d = 300, m = 100;
  SeededRandom rng(8);
  // Records in the L1 ball (three entries of +-1/3): the inner products <Phi w, Phi x> are
  // preserved only on sets of small Gaussian width (Lemma 6), for the data as for C.
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (int q = 0; q < 3; ++q) X(i, static_cast<Eigen::Index>(rng.below(d))) = rng.bit() ? 1.0 / 3 : -1.0 / 3;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d);
  w(3) = 0.5;
  w(40) = -0.3;
  w(200) = 0.2;
  const Eigen::VectorXd y = X * w;
  const SparseRows Xs = X.sparseView();
  // Theorem 11 bounds the excess risk (not the parameter) by terms in w(C) / sqrt(m) (the
  // distortion delta of Lemma 6 on the data and C): without noise the risk must fall as m grows.
  const double risk0 = y.squaredNorm() / n;
  double last = risk0;
  for (int mm : {m / 4, m, 3 * m}) {
    const HighDimResult r = ldp_compressed_regression(Xs, y, mm, kInf, SparseSet::L1Ball, 1.0, 5);
    const double risk = (X * r.w - y).squaredNorm() / n;
    std::printf("compressed regression at eps = inf, m = %d: risk %.3e (risk of 0: %.3e)\n", mm, risk, risk0);
    EXPECT_LT(risk, last);
    last = risk;
  }
  EXPECT_LT(last, 0.25 * risk0);  // measured 0.20 at m = d = 300
  EXPECT_GT(gaussian_width(SparseSet::L1Ball, 1000, 200, 1), gaussian_width(SparseSet::L1Ball, 10, 200, 1));
  EXPECT_THROW(ldp_compressed_regression(Xs, y, m, 0.0, SparseSet::L1Ball, 1.0, 5), UsageError);
  // The non-private constrained regression on sparse rows finds the planted model (noiseless y).
  EXPECT_LT((constrained_regression(Xs, y, SparseSet::L1Ball, 1.0, 20000) - w).norm(), 1e-3);
}

TEST(LdpHighDim, CompressedReleaseIsThreadInvariantAndItsNoiseIsTheDerivedDiscreteLaplace) {
  const int n = 6000, d = 200, m = 20;
  SeededRandom rng(9);
  std::vector<Eigen::Triplet<double>> e;
  for (int i = 0; i < n; ++i)
    for (int q = 0; q < 2; ++q) e.emplace_back(i, static_cast<int>(rng.below(d)), rng.bit() ? 0.7 : -0.7);
  SparseRows X(n, d);
  X.setFromTriplets(e.begin(), e.end());
  Eigen::VectorXd y = Eigen::VectorXd::Zero(n);
  for (int i = 0; i < n; ++i) y(i) = std::clamp(0.3 * X.row(i).sum(), -1.0, 1.0);
  const HighDimResult a = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 3, 1.5, 1);
  const HighDimResult b = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 3, 1.5, 2);
  const HighDimResult c = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 3, 1.5, 3);
  EXPECT_EQ(a.w, b.w);
  EXPECT_EQ(a.w, c.w);
  // Lambda_z = ceil(2 sqrt(m) z_max / Delta) + 2m lattice steps, scale Lambda_z / (eps/2) (>=, the
  // sampler rounds the scale up), expressed in units of z.
  const double delta = 1.5 / 16384, lambda = std::ceil(2 * std::sqrt(20.0) * 1.5 / delta) + 40;
  EXPECT_EQ(a.lattice_step, delta);
  EXPECT_GE(a.noise_scale, lambda / 0.5 * delta);
  EXPECT_LT(a.noise_scale, lambda / 0.5 * delta * (1 + 1e-6));
  EXPECT_GE(a.noise_scale_y, (std::ceil(2 * 16384.0) + 2) / 0.5 / 16384);
}

namespace {
PointData smooth_points(std::size_t n, std::uint64_t seed) {
  PointData p;
  p.n = n;
  p.d = 2;
  p.x.resize(2 * n);
  SeededRandom rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    p.x[2 * i] = std::clamp(0.3 + 0.3 * sample_normal(rng), -1.0, 1.0);
    p.x[2 * i + 1] = 2 * rng.unit() - 1;
  }
  return p;
}
}  // namespace

TEST(LdpSmooth, TrigonometricBasisReproducesLowDegreePolynomialsExactly) {
  const TrigonometricBasis basis(2, 5);
  EXPECT_EQ(basis.terms(), 25u);
  EXPECT_EQ(basis.sent(), 24u);
  // Degree <= 4 per variable: in the span of T_0..T_4 x T_0..T_4, reproduced to rounding.
  auto f = [](const double* x) { return 0.3 + x[0] * x[0] * x[1] - 0.5 * std::pow(x[1], 4) + 0.2 * std::pow(x[0], 3); };
  const auto c = basis.coefficients(f);
  EXPECT_LT(basis.approximation_error(f, c), 1e-13);
  // T_2(x0) T_1(x1): a single coefficient 1 at r = (2, 1) (index 2 * 5 + 1).
  const auto c21 = basis.coefficients([](const double* x) { return (2 * x[0] * x[0] - 1) * x[1]; });
  for (std::size_t j = 0; j < c21.size(); ++j) EXPECT_NEAR(c21[j], j == 11 ? 1.0 : 0.0, 1e-14) << j;
  // value(j) is the (j+1)-th entry of values(): cos(r_0 acos x0) cos(r_1 acos x1).
  const double x[2] = {0.37, -0.81};
  std::vector<double> all(basis.terms());
  basis.values(x, all.data());
  for (std::size_t j = 0; j < basis.sent(); ++j) {
    EXPECT_EQ(basis.value(j, x), all[j + 1]);
    const int r0 = static_cast<int>((j + 1) / 5), r1 = static_cast<int>((j + 1) % 5);
    EXPECT_NEAR(all[j + 1], std::cos(r0 * std::acos(x[0])) * std::cos(r1 * std::acos(x[1])), 1e-13);
  }
}

TEST(LdpSmooth, KernelQueriesAreExactAtInfiniteEpsilonUpToTheApproximationError) {
  const PointData data = smooth_points(3000, 4);
  const auto queries = kde_query_family(2, 4, {0.2, 0.5});
  const auto exact = exact_kernel_answers(data, queries, 1);
  double last_worst = 1e300;
  for (int t : {6, 12, 20}) {
    const TrigonometricBasis basis(2, t, queries.size());
    std::vector<std::vector<double>> coeffs;
    double worst_approx = 0;
    for (const auto& q : queries) {
      coeffs.push_back(basis.coefficients([&](const double* x) { return q(x); }));
      worst_approx = std::max(worst_approx, basis.approximation_error([&](const double* x) { return q(x); }, coeffs.back()));
    }
    // The approximation error of analytic kernels falls fast with the degree.
    EXPECT_LT(worst_approx, last_worst);
    last_worst = worst_approx;
    // The server's answer from the exact basis means: |answer - exact| <= max over the data of
    // |f - p| (the grid's max is within a hair of it for these smooth f).
    const auto means = basis.exact_means(data);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      double data_max = 0;
      for (std::size_t i = 0; i < data.n; ++i) {
        std::vector<double> v(basis.terms());
        basis.values(data.row(i), v.data());
        double p = 0;
        for (std::size_t j = 0; j < v.size(); ++j) p += coeffs[q][j] * v[j];
        data_max = std::max(data_max, std::abs(p - queries[q](data.row(i))));
      }
      EXPECT_LE(std::abs(basis.answer(coeffs[q], means) - exact[q]), data_max + 1e-12) << q;
      EXPECT_LE(data_max, worst_approx * 1.05 + 1e-12);
    }
    // Algorithm 1 at eps = inf: only the unbiased lattice rounding (2^-16 steps) is left.
    const SmoothRelease rel = ldp_trigonometric_queries(data, basis, coeffs, kInf, SmoothProtocol::Laplace, 9, 1);
    for (std::size_t q = 0; q < queries.size(); ++q)
      EXPECT_NEAR(rel.answers[q], exact[q], worst_approx + 1e-4) << "t = " << t << ", query " << q;
  }
  EXPECT_LT(last_worst, 1e-3);  // t = 20 for sigma >= 0.2 (measured 2e-5)
}

TEST(LdpSmooth, OneBitAndPerQueryAnswersAreUnbiased) {
  const PointData data = smooth_points(2000, 5);
  const auto queries = kde_query_family(2, 2, {0.3});
  const TrigonometricBasis basis(2, 6, queries.size());
  std::vector<std::vector<double>> coeffs;
  for (const auto& q : queries) coeffs.push_back(basis.coefficients([&](const double* x) { return q(x); }));
  const auto means = basis.exact_means(data);
  const auto exact = exact_kernel_answers(data, queries, 1);
  const int reps = 300;
  std::vector<double> avg(queries.size(), 0.0), sq(queries.size(), 0.0), avg_pq(queries.size(), 0.0),
      sq_pq(queries.size(), 0.0);
  for (int rep = 0; rep < reps; ++rep) {
    const auto a = ldp_trigonometric_queries(data, basis, coeffs, 1.0, SmoothProtocol::Bit, 100 + rep, 1).answers;
    const auto b = ldp_per_query_kernel_answers(data, queries, 1.0, 900 + rep, 1);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      avg[q] += a[q] / reps;
      sq[q] += a[q] * a[q] / reps;
      avg_pq[q] += b[q] / reps;
      sq_pq[q] += b[q] * b[q] / reps;
    }
  }
  for (std::size_t q = 0; q < queries.size(); ++q) {
    // Unbiased for the polynomial's average (the approximation error is the only bias).
    EXPECT_NEAR(avg[q], basis.answer(coeffs[q], means), 5 * std::sqrt((sq[q] - avg[q] * avg[q]) / reps)) << q;
    EXPECT_NEAR(avg_pq[q], exact[q], 5 * std::sqrt((sq_pq[q] - avg_pq[q] * avg_pq[q]) / reps)) << q;
  }
}

TEST(LdpSmooth, ResultsAreIdenticalForOneTwoAndThreeThreads) {
  const PointData data = smooth_points(50000, 6);
  const auto queries = kde_query_family(2, 3, {0.25, 0.5});
  const TrigonometricBasis basis(2, 8, queries.size());
  std::vector<std::vector<double>> coeffs;
  for (const auto& q : queries) coeffs.push_back(basis.coefficients([&](const double* x) { return q(x); }));
  for (SmoothProtocol p : {SmoothProtocol::Bit, SmoothProtocol::Laplace}) {
    const auto a = ldp_trigonometric_queries(data, basis, coeffs, 2.0, p, 7, 1).answers;
    EXPECT_EQ(a, ldp_trigonometric_queries(data, basis, coeffs, 2.0, p, 7, 2).answers);
    EXPECT_EQ(a, ldp_trigonometric_queries(data, basis, coeffs, 2.0, p, 7, 3).answers);
  }
  const auto b = ldp_per_query_kernel_answers(data, queries, 2.0, 7, 1);
  EXPECT_EQ(b, ldp_per_query_kernel_answers(data, queries, 2.0, 7, 3));
  EXPECT_EQ(exact_kernel_answers(data, queries, 1), exact_kernel_answers(data, queries, 3));
}

TEST(LdpSmooth, BadInputIsRefusedWithAClearError) {
  EXPECT_THROW(TrigonometricBasis(2, 0), UsageError);
  EXPECT_THROW(TrigonometricBasis(0, 4), UsageError);
  try {  // 1000^6 terms: refused with the estimate, nothing allocated
    TrigonometricBasis(6, 1000, 100);
    FAIL();
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kde_query_family(2, 3, {0.2, 0.0}), UsageError);
  EXPECT_THROW(kde_query_family(2, 0, {0.2}), UsageError);
  PointData data = smooth_points(100, 7);
  const auto queries = kde_query_family(2, 2, {0.3});
  const TrigonometricBasis basis(2, 4);
  const std::vector<std::vector<double>> coeffs(queries.size(), std::vector<double>(basis.terms(), 0.0));
  EXPECT_THROW(ldp_trigonometric_queries(data, basis, coeffs, 0.0, SmoothProtocol::Bit, 1), UsageError);
  EXPECT_THROW(ldp_trigonometric_queries(data, basis, coeffs, -1.0, SmoothProtocol::Laplace, 1), UsageError);
  EXPECT_THROW(ldp_per_query_kernel_answers(data, queries, 0.0, 1), UsageError);
  EXPECT_THROW(parse_smooth_protocol("gauss"), UsageError);
  // Outside [-1, 1]^d: refused naming row and coordinate, or clamped with the rows counted.
  data.x[2 * 5 + 1] = 1.5;
  data.x[2 * 9] = -3.0;
  try {
    PointData copy = data;
    clip_to_cube(copy, false, "players");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("row 5, coordinate 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(clip_to_cube(data, true, "players"), 2u);
  EXPECT_EQ(data.clipped, 2u);
  EXPECT_EQ(data.x[11], 1.0);
  EXPECT_EQ(data.x[18], -1.0);
}

// ------------------------------------------------------------------------------------------
// The simulation's fast path (simulation.hpp): counter-based player words and the report
// "stochastic rounding + discrete Laplace" drawn by inversion.

namespace {
// The former simulation of one Algorithm 1/2 player, kept as the reference: her own seeded
// generator and LaplaceRandomizer::report (the engine's exact table sampler).
std::vector<std::int64_t> former_reports(const LaplaceRandomizer& r, std::span<const double> u, std::uint64_t seed,
                                         std::uint64_t player) {
  SeededRandom rng(derive_seed(seed, player));
  std::vector<std::int64_t> out(u.size());
  r.report(u, out, rng);
  return out;
}
// Exact pmf of R(x) + N: floor(x) + Bernoulli(x - floor(x)) plus discrete Laplace.
double rounded_laplace_pmf(const DiscreteLaplace& dl, double x, long long y) {
  const double f = std::floor(x), p = x - f;
  const auto fl = static_cast<long long>(f);
  return (1 - p) * dl.pmf(y - fl) + p * dl.pmf(y - fl - 1);
}
}  // namespace

TEST(LdpSimulation, VectorisedLogIsWithinOneUlpOfTheLibraryLog) {
  SeededRandom rng(31);
  double worst = 0;
  auto check = [&](double u) {
    const double a = log_normal_positive(u), b = std::log(u);
    const double ulp = std::abs(std::nextafter(b, b < 0 ? -1e300 : 1e300) - b);
    worst = std::max(worst, b == 0 ? std::abs(a) : std::abs(a - b) / ulp);
  };
  for (int i = 0; i < 1000000; ++i) {
    check(1.0 - unit53(rng.next()));                      // the sampler's inputs, (0, 1]
    check(1.0 - std::ldexp(unit53(rng.next()), -20));     // near 1, where cancellation bites
    check(std::ldexp(1.0 + unit53(rng.next()), -(i % 1000)));  // every binade down to 2^-1000
  }
  for (double u : {1.0, 0x1.0p-53, 0.5, 0x1.fffffffffffffp-1, std::sqrt(0.5), std::sqrt(2.0)}) check(u);
  EXPECT_LE(worst, 1.0);
  EXPECT_EQ(log_normal_positive(1.0), 0.0);
}

TEST(LdpSimulation, PlayerWordsAreUniformAndIndependentAcrossPlayersAndPositions) {
  // Seeded chi-square: the top 4 bits of word t for 2^18 players (16 cells), and the joint top
  // 3 bits of (player i, word 0) with (player i + 1, word 0) and with (player i, word 1) (64 cells).
  const std::uint64_t n = 1u << 18;
  std::map<long long, long long> single, across, within;
  for (std::uint64_t i = 0; i < n; ++i) {
    const PlayerStream a(5, i), b(5, i + 1);
    ++single[static_cast<long long>(a.word(7) >> 60)];
    ++across[static_cast<long long>((a.word(0) >> 61) * 8 + (b.word(0) >> 61))];
    ++within[static_cast<long long>((a.word(0) >> 61) * 8 + (a.word(1) >> 61))];
  }
  const auto [s1, d1] = privrace::testing::chi_square(single, [](long long) { return 1.0 / 16; }, 0, 15, n);
  const auto [s2, d2] = privrace::testing::chi_square(across, [](long long) { return 1.0 / 64; }, 0, 63, n);
  const auto [s3, d3] = privrace::testing::chi_square(within, [](long long) { return 1.0 / 64; }, 0, 63, n);
  EXPECT_LT(s1, privrace::testing::chi_square_critical(d1));
  EXPECT_LT(s2, privrace::testing::chi_square_critical(d2));
  EXPECT_LT(s3, privrace::testing::chi_square_critical(d3));
  // Reproducible, and a different seed or player gives other words.
  EXPECT_EQ(PlayerStream(5, 9).word(3), PlayerStream(5, 9).word(3));
  EXPECT_NE(PlayerStream(5, 9).word(3), PlayerStream(6, 9).word(3));
  EXPECT_NE(PlayerStream(5, 9).word(3), PlayerStream(5, 10).word(3));
}

TEST(LdpSimulation, LatticeLaplaceReportHasTheExactDistribution) {
  // Seeded chi-square of R(x) + N against its exact pmf, one coordinate per player, at small
  // scales (where "-0" is redrawn often: (1 - a)/2 = 0.38 at scale 0.7) and moderate ones, on
  // and off the lattice, with the noise in several coordinates of one player.
  const long long total = 300000;
  for (double scale : {0.7, 2.5, 40.0}) {
    const DiscreteLaplace dl(scale);
    for (double x : {3.0, 3.25, -7.6}) {
      std::map<long long, long long> hist[3];
      const double xs[3] = {x, x + 100, x - 50};  // three coordinates of each player
      double out[3];
      for (long long i = 0; i < total; ++i) {
        lattice_laplace(xs, 3, dl.scale(), PlayerStream(77, static_cast<std::uint64_t>(i)), 0, out);
        for (int c = 0; c < 3; ++c) ++hist[c][static_cast<long long>(out[c])];
      }
      for (int c = 0; c < 3; ++c) {
        const long long centre = static_cast<long long>(std::floor(xs[c]));
        const long long w = static_cast<long long>(30 * scale) + 10;
        const auto [stat, df] = privrace::testing::chi_square(
            hist[c], [&](long long y) { return rounded_laplace_pmf(dl, xs[c], y); }, centre - w, centre + w, total);
        EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "scale " << scale << " x " << xs[c] << " df " << df;
      }
    }
  }
  // Without noise: only the stochastic rounding, P(up) = x - floor(x).
  std::map<long long, long long> hist;
  for (long long i = 0; i < total; ++i) {
    const double x = 12.3;
    double out;
    lattice_laplace(&x, 1, 0.0, PlayerStream(78, static_cast<std::uint64_t>(i)), 0, &out);
    ++hist[static_cast<long long>(out)];
  }
  EXPECT_EQ(hist.size(), 2u);
  const double up = static_cast<double>(hist[13]) / total;
  EXPECT_NEAR(up, 0.3, 5 * std::sqrt(0.21 / total));
}

// The rounding (lattice_laplace at scale 0, a vectorised loop) gives, coordinate by
// coordinate, floor(x) + [U < x - floor(x)]
// with U = unit53 of the player's word: lengths that leave every vector remainder, values with
// and without a fractional part, negative ones, and offsets into the player's words.
TEST(LdpSimulation, RoundingEqualsTheCoordinateFormulaAtEveryLength) {
  SeededRandom gen(5);
  for (std::size_t d = 1; d <= 70; ++d)
    for (const std::uint64_t first : {0ULL, 3ULL, 1000ULL}) {
      std::vector<double> x(d), out(d);
      for (std::size_t j = 0; j < d; ++j) x[j] = j % 5 == 0 ? std::floor(40 * gen.unit() - 20) : 40 * gen.unit() - 20;
      const PlayerStream s(99, d * 7 + first);
      lattice_laplace(x.data(), d, 0.0, s, first, out.data());
      for (std::size_t j = 0; j < d; ++j) {
        const double f = std::floor(x[j]);
        ASSERT_EQ(out[j], f + (unit53(s.word(first + j)) < x[j] - f ? 1.0 : 0.0)) << "d " << d << " j " << j;
      }
    }
}

TEST(LdpSimulation, RoundingIsExactWhenItsFirstTenBitsTie) {
  // With noise, the rounding reads 10 bits of the noise word and a fresh word when they tie
  // with floor(1024 p) (probability 2^-10). p = 300.95 / 1024 puts 0.95 / 1024 of P(up) in the
  // ties: 2 10^7 roundings measure P(up) to 1.0e-4, so losing the ties would be 9 SD off.
  // Scale 10^-3: the noise is 0 (after its "-0" redraws), so the report is the rounding alone.
  const double p = 300.95 / 1024, x0 = 5 + p;
  const std::size_t d = 1000, players = 20000;
  std::vector<double> x(d, x0), out(d);
  double ups = 0;
  for (std::size_t i = 0; i < players; ++i) {
    lattice_laplace(x.data(), d, 1e-3, PlayerStream(80, i), 0, out.data());
    for (double v : out) {
      ASSERT_TRUE(v == 5 || v == 6) << v;
      ups += v - 5;
    }
  }
  const double n = static_cast<double>(d * players);
  EXPECT_NEAR(ups / n, p, 5 * std::sqrt(p * (1 - p) / n));
}

TEST(LdpSimulation, LargeScaleNoiseMatchesTheExactCdf) {
  // The scales of Algorithm 7 (about 2 10^5 .. 2 10^6 lattice steps): Kolmogorov-Smirnov
  // distance of 2 10^5 reports to the exact CDF of R(x) + N (conservative for a discrete law;
  // critical value 1.95 / sqrt(n), p = 0.001), and the variance against DiscreteLaplace's.
  const std::size_t n = 200000;
  for (double scale : {231900.0, 1855000.0}) {
    const DiscreteLaplace dl(scale);
    const double a = std::exp(-1.0 / dl.scale());
    auto laplace_cdf = [&](double y) {  // P(N <= y), y integer
      return y >= 0 ? 1 - std::pow(a, y + 1) / (1 + a) : std::pow(a, -y) / (1 + a);
    };
    const double x = 1234.75;
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) lattice_laplace(&x, 1, dl.scale(), PlayerStream(79, i), 0, &v[i]);
    std::sort(v.begin(), v.end());
    double ks = 0, sum2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double F = 0.25 * laplace_cdf(v[i] - 1234) + 0.75 * laplace_cdf(v[i] - 1235);
      ks = std::max({ks, std::abs(F - static_cast<double>(i + 1) / n), std::abs(F - static_cast<double>(i) / n)});
      sum2 += (v[i] - x) * (v[i] - x);
    }
    EXPECT_LT(ks, 1.95 / std::sqrt(static_cast<double>(n))) << "scale " << scale;
    // Var(N) + rounding variance 3/16; the sample variance's SD is about sqrt(5) Var / sqrt(n) (kurtosis 6).
    const double var = dl.variance() + 0.1875;
    EXPECT_NEAR(sum2 / n, var, 5 * std::sqrt(5.0) * var / std::sqrt(static_cast<double>(n))) << "scale " << scale;
  }
}

TEST(LdpSimulation, Algorithm2ReportsMatchTheFormerSimulation) {
  // Two-sample chi-square: the fast path against the former one (a seeded generator per player
  // and LaplaceRandomizer's exact table sampler), same randomiser, values off the lattice.
  const std::uint64_t L = 16, reports = 2, n = 150000;
  const double eps = 1.0;
  const LaplaceRandomizer r(eps, reports, L);
  const double u[2] = {0.3, 0.8};
  std::map<long long, long long> now, before;
  for (std::uint64_t i = 0; i < n; ++i) {
    double x[2], out[2];
    for (int j = 0; j < 2; ++j) x[j] = u[j] * static_cast<double>(L);
    lattice_laplace(x, 2, r.noise_scale(), PlayerStream(3, i), 0, out);
    const auto old = former_reports(r, u, 4, i);
    for (int j = 0; j < 2; ++j) {
      ++now[j * 100000 + static_cast<long long>(out[j])];
      ++before[j * 100000 + old[static_cast<std::size_t>(j)]];
    }
  }
  // Pool the tails (fewer than 20 expected in either sample) into one cell per coordinate and side.
  std::map<long long, std::pair<double, double>> cells;
  for (int j = 0; j < 2; ++j)
    for (long long y = -400; y <= 400; ++y) {
      const long long key = j * 100000 + y;
      const double a = now.count(key) ? now[key] : 0, b = before.count(key) ? before[key] : 0;
      const long long cell = a + b < 40 ? j * 100000 + (y < 8 ? -1000 : 1000) : key;
      cells[cell].first += a;
      cells[cell].second += b;
    }
  double stat = 0;
  for (const auto& [k, ab] : cells) {
    const auto [a, b] = ab;
    if (a + b > 0) stat += (a - b) * (a - b) / (a + b);  // equal sample sizes
  }
  const double df = static_cast<double>(cells.size()) - 1;
  EXPECT_GT(df, 50);
  EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "df " << df;
}

TEST(LdpSimulation, SummedReportsMatchThePlayersReportsSummed) {
  // laplace_average forms no report: it draws the rounded values per player and the n noises'
  // sum at once. Its total against the sum of n players' LaplaceRandomizer reports (a seeded
  // generator each, the exact table sampler), two-sample Kolmogorov-Smirnov per coordinate.
  const std::uint64_t n = 3;
  const std::size_t d = 2;
  const double eps = 2.0, u[2][3] = {{0.3, 0.71, 0.05}, {0.999, 0.5, 0.25}};
  const LaplaceRandomizer r(eps, d);
  const double L = static_cast<double>(r.levels());
  const int runs = 20000;
  std::vector<double> fast[2], reference[2];
  for (int k = 0; k < runs; ++k) {
    const VectorEstimate e = laplace_average(
        n, d, eps, 1000 + static_cast<std::uint64_t>(k),
        [&](std::uint64_t i, std::span<double> v) {
          for (std::size_t j = 0; j < d; ++j) v[j] = u[j][i];
        },
        1);
    std::int64_t sum[2] = {0, 0};
    for (std::uint64_t i = 0; i < n; ++i) {
      const double v[2] = {u[0][i], u[1][i]};
      const auto rep = former_reports(r, v, 5000 + static_cast<std::uint64_t>(k), i);
      for (std::size_t j = 0; j < d; ++j) sum[j] += rep[j];
    }
    for (std::size_t j = 0; j < d; ++j) {
      fast[j].push_back(std::round(e.mean[j] * static_cast<double>(n) * L));
      reference[j].push_back(static_cast<double>(sum[j]));
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    std::sort(fast[j].begin(), fast[j].end());
    std::sort(reference[j].begin(), reference[j].end());
    double D = 0;
    for (std::size_t a = 0, b = 0; a < fast[j].size() && b < reference[j].size();) {
      const double x = std::min(fast[j][a], reference[j][b]);
      while (a < fast[j].size() && fast[j][a] <= x) ++a;
      while (b < reference[j].size() && reference[j][b] <= x) ++b;
      D = std::max(D, std::abs(static_cast<double>(a) - static_cast<double>(b)) / runs);
    }
    EXPECT_LT(D, 2.23 * std::sqrt(2.0 / runs)) << "coordinate " << j;  // alpha = 1e-4
    // and the means agree with the players' total (the rounding is unbiased, the noise centred)
    const double exact = (u[j][0] + u[j][1] + u[j][2]) * L;
    const double m = std::accumulate(fast[j].begin(), fast[j].end(), 0.0) / runs;
    EXPECT_NEAR(m, exact, 5 * std::sqrt(n * r.report_variance() / runs) * L);
  }
}

TEST(LdpSimulation, SeededRunsAreReproducibleAndSeedsMatter) {
  const std::uint64_t n = 50000;
  auto value = [](std::uint64_t i, std::span<double> u) {
    for (std::size_t j = 0; j < u.size(); ++j) u[j] = std::fmod(0.11 * static_cast<double>(i + 3 * j), 1.0);
  };
  const VectorEstimate a = laplace_average(n, 5, 2.0, 41, value, 2), b = laplace_average(n, 5, 2.0, 41, value, 3),
                       c = laplace_average(n, 5, 2.0, 42, value, 2);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_NE(a.mean, c.mean);
  // A fill that points at a table's rows (values out of [0, 1] included, clamped as written
  // ones are) gives the estimate of a fill that writes them.
  std::vector<double> table(7 * 5);
  for (std::size_t k = 0; k < table.size(); ++k) table[k] = std::fmod(0.37 * static_cast<double>(k), 1.3) - 0.1;
  const auto writes = [&](std::uint64_t i, std::span<double> u) {
    std::copy_n(table.data() + (i % 7) * 5, 5, u.data());
  };
  const auto points = [&](std::uint64_t i, std::span<double>) -> const double* { return table.data() + (i % 7) * 5; };
  const VectorEstimate w = laplace_average(n, 5, 2.0, 43, writes, 2), p = laplace_average(n, 5, 2.0, 43, points, 3);
  EXPECT_EQ(w.mean, p.mean);
  EXPECT_NE(w.mean, laplace_average(n, 5, 2.0, 43, value, 2).mean);
  const int nh = 5000, d = 100, m = 10;
  SeededRandom rng(10);
  std::vector<Eigen::Triplet<double>> e;
  for (int i = 0; i < nh; ++i) e.emplace_back(i, static_cast<int>(rng.below(d)), rng.bit() ? 0.7 : -0.7);
  SparseRows X(nh, d);
  X.setFromTriplets(e.begin(), e.end());
  const Eigen::VectorXd y = Eigen::VectorXd::Constant(nh, 0.2);
  const HighDimResult h1 = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 3, 1.5, 1);
  const HighDimResult h2 = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 3, 1.5, 3);
  const HighDimResult h3 = ldp_compressed_regression(X, y, m, 1.0, SparseSet::L1Ball, 1.0, 4, 1.5, 2);
  EXPECT_EQ(h1.w, h2.w);
  EXPECT_NE(h1.w, h3.w);
}
