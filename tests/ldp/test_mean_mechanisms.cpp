// LDP mean mechanisms: Duchi's 1-D mechanism, PM and HM (Wang et al., ICDE 2019) with their
// multidimensional sampling, and PrivUnit with the Asi-Feldman-Talwar parameters. Seeded; the
// statistical tolerances are 5 standard errors of the sample size used (or the 0.1% critical
// value of the KS statistic), so a correct mechanism fails with probability below about 1e-5 per
// check, and with a fixed seed never flakes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <boost/math/special_functions/beta.hpp>

#include "privrace/core/error.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"

using namespace privrace;
using namespace privrace::ldp;

namespace {

struct Moments {
  double mean = 0, var = 0, m4 = 0;  // mean, variance, fourth central moment
  std::size_t n = 0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  m.n = x.size();
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(m.n);
  for (double v : x) {
    const double d2 = (v - m.mean) * (v - m.mean);
    m.var += d2;
    m.m4 += d2 * d2;
  }
  m.var /= static_cast<double>(m.n - 1);
  m.m4 /= static_cast<double>(m.n);
  return m;
}

// Unbiased mean and the variance formula, each within 5 standard errors (of the mean: sqrt(var/n);
// of the sample variance: sqrt((mu4 - var^2) / n), and the term below).
void expect_mean_and_variance(const std::vector<double>& x, double mean, double variance, const std::string& what) {
  const Moments m = moments(x);
  const double n = static_cast<double>(m.n);
  EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(variance / n)) << what;
  // The sample variance's fluctuation, plus its squared-mean term (n/(n-1)) (xbar - mean)^2, which
  // is below 25 var / n at 5 standard errors and is all there is for a two-point law (Duchi at t = 0).
  EXPECT_NEAR(m.var, variance, 5 * std::sqrt(std::max(m.m4 - m.var * m.var, 0.0) / n) + 25 * variance / n) << what;
}

// One-sample Kolmogorov-Smirnov statistic sqrt(n) D_n against a continuous CDF.
double ks_one_sample(std::vector<double> x, const std::function<double(double)>& cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(x[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return std::sqrt(n) * d;
}

// Two-sample KS statistic sqrt(n m / (n + m)) D.
double ks_two_sample(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double v = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= v) ++i;
    while (j < b.size() && b[j] <= v) ++j;
    d = std::max(d, std::abs(static_cast<double>(i) / a.size() - static_cast<double>(j) / b.size()));
  }
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  return std::sqrt(na * nb / (na + nb)) * d;
}
constexpr double kKs999 = 1.95;  // P(sqrt(n) D > 1.95) ~ 0.001 (Kolmogorov distribution)

}  // namespace

// ---------------------------------------------------------------------------------------------
// Constants and exact density ratios

TEST(MeanMechanisms, PiecewiseConstantsAndCdfMatchThePaper) {
  for (double eps : {0.1, 0.5, 1.0, 2.0, 4.0, 8.0}) {
    const PiecewiseMechanism pm(eps);
    const double h = std::exp(eps / 2);
    EXPECT_NEAR(pm.bound(), (h + 1) / (h - 1), 1e-12 * pm.bound());
    EXPECT_NEAR(pm.high_density(), (std::exp(eps) - h) / (2 * h + 2), 1e-14);
    EXPECT_NEAR(pm.high_density() / pm.low_density(), std::exp(eps), 1e-12 * std::exp(eps));
    for (double t : {-1.0, -0.4, 0.0, 0.3, 1.0}) {
      EXPECT_NEAR(pm.right(t) - pm.left(t), pm.bound() - 1, 1e-12 * pm.bound());
      EXPECT_GE(pm.left(t), -pm.bound() - 1e-12);
      EXPECT_LE(pm.right(t), pm.bound() + 1e-12);
      EXPECT_NEAR(pm.cdf(t, pm.bound()), 1.0, 1e-12);
      // P(high interval) = e^{eps/2} / (e^{eps/2} + 1)
      EXPECT_NEAR(pm.cdf(t, pm.right(t)) - pm.cdf(t, pm.left(t)), h / (h + 1), 1e-12);
      // The inverse CDF inverts the CDF.
      for (double u : {0.0, 0.1, 0.37, 0.5, 0.81, 0.999999})
        EXPECT_NEAR(pm.cdf(t, pm.from_uniform(t, u)), u, 1e-12);
    }
  }
}

TEST(MeanMechanisms, DuchiIsTheProjectsBitRandomizer) {
  // The vectorisable bit is BitRandomizer::report's, word for word; the output is +-1 / (p_hi - p_lo).
  for (double eps : {0.1, 1.0, 3.0}) {
    const DuchiMechanism dm(eps);
    const BitRandomizer& bit = dm.bit();
    EXPECT_NEAR(dm.bound(), (std::exp(eps) + 1) / (std::exp(eps) - 1), 1e-12 * dm.bound());
    SeededRandom rng(12);
    for (int i = 0; i < 200000; ++i) {
      const double t = i % 7 == 0 ? (i % 2 ? 1.0 : -1.0) : 2 * rng.unit() - 1;
      const std::uint64_t w = i % 5 == 0 ? (bit.threshold(0.5 * (t + 1)) << 12) - (i % 2) : rng.next();  // at the threshold too
      ASSERT_EQ(dm.from_word(t, w) > 0, bit.report(0.5 * (t + 1), w)) << t << " " << w;
    }
  }
}

TEST(MeanMechanisms, PiecewiseAndHybridDensityRatioNeverExceedsEpsilon) {
  // PM's density is constant between the breakpoints {-C, l(t), r(t), l(t'), r(t'), C}: checking
  // every breakpoint and every midpoint between consecutive ones checks every output.
  for (double eps : {0.05, 0.3, 0.61, 0.62, 1.0, 2.0, 4.0, 10.0}) {
    const PiecewiseMechanism pm(eps);
    const HybridMechanism hm(eps);
    const double bound = std::exp(eps) * (1 + 1e-12);
    double max_ratio = 0;
    for (int a = 0; a <= 40; ++a)
      for (int b = 0; b <= 40; ++b) {
        const double t = -1 + a / 20.0, t2 = -1 + b / 20.0;
        std::vector<double> cuts = {-pm.bound(), pm.left(t), pm.right(t), pm.left(t2), pm.right(t2), pm.bound()};
        std::sort(cuts.begin(), cuts.end());
        std::vector<double> ys = cuts;
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i) ys.push_back(0.5 * (cuts[i] + cuts[i + 1]));
        for (double y : ys) {
          const double r = pm.density(t, y) / pm.density(t2, y);
          EXPECT_LE(r, bound) << "eps " << eps << " t " << t << " t' " << t2 << " y " << y;
          max_ratio = std::max(max_ratio, r);
          // HM: the continuous part alpha f_PM, the same ratio (when alpha > 0).
          if (hm.alpha() > 0) {
            EXPECT_LE(hm.alpha() * pm.density(t, y) / (hm.alpha() * pm.density(t2, y)), bound);
          }
        }
        // HM's atoms at +-B: (1 - alpha) P_Duchi(+- | t).
        const DuchiMechanism& dm = hm.duchi();
        EXPECT_LE(dm.prob_plus(t) / dm.prob_plus(t2), bound);
        EXPECT_LE((1 - dm.prob_plus(t)) / (1 - dm.prob_plus(t2)), bound);
      }
    EXPECT_NEAR(max_ratio, std::exp(eps), 1e-9 * std::exp(eps)) << "the bound is attained (t = -1, t' = 1)";
    // HM's switch at eps* ~ 0.61.
    EXPECT_EQ(hm.alpha() > 0, eps > HybridMechanism::threshold_epsilon());
  }
  EXPECT_NEAR(HybridMechanism::threshold_epsilon(), 0.61, 0.005);
}

// ---------------------------------------------------------------------------------------------
// Unbiasedness and the papers' variances

TEST(MeanMechanisms, ScalarReportsAreUnbiasedWithThePapersVariance) {
  const std::size_t n = 100000;
  SeededRandom rng(20190408);
  std::vector<double> x(n);
  for (double eps : {0.5, 1.0, 4.0}) {
    const PiecewiseMechanism pm(eps);
    const HybridMechanism hm(eps);
    const DuchiMechanism dm(eps);
    const double h = std::exp(eps / 2), e = std::exp(eps);
    // The papers' closed forms, independently of the classes' own variance().
    const double duchi_b = (e + 1) / (e - 1);
    for (double t : {-1.0, -0.3, 0.0, 0.7, 1.0}) {
      const double var_pm = t * t / (h - 1) + (h + 3) / (3 * (h - 1) * (h - 1));
      const double var_duchi = duchi_b * duchi_b - t * t;
      const double var_hm = eps > 0.61 ? (h + 3) / (3 * h * (h - 1)) + (e + 1) * (e + 1) / (h * (e - 1) * (e - 1))
                                       : var_duchi;
      EXPECT_NEAR(pm.variance(t), var_pm, 1e-9 * var_pm);
      EXPECT_NEAR(dm.variance(t), var_duchi, 1e-9 * var_duchi);
      EXPECT_NEAR(hm.variance(t), var_hm, 1e-9 * var_hm);
      const std::string at = " eps " + std::to_string(eps) + " t " + std::to_string(t);
      for (auto& v : x) v = pm.report(t, rng);
      expect_mean_and_variance(x, t, var_pm, "PM" + at);
      for (auto& v : x) v = hm.report(t, rng);
      expect_mean_and_variance(x, t, var_hm, "HM" + at);
      for (auto& v : x) v = dm.report(t, rng);
      expect_mean_and_variance(x, t, var_duchi, "Duchi" + at);
    }
  }
}

TEST(MeanMechanisms, MultidimensionalSamplingIsUnbiasedWithThePapersVariance) {
  EXPECT_EQ(sampled_coordinates(10, 1.0), 1u);
  EXPECT_EQ(sampled_coordinates(10, 5.0), 2u);
  EXPECT_EQ(sampled_coordinates(10, 7.6), 3u);
  EXPECT_EQ(sampled_coordinates(2, 20.0), 2u);
  const std::vector<double> t = {-1.0, -0.5, 0.0, 0.25, 0.9};
  const std::size_t d = t.size(), n = 100000;
  for (double eps : {1.0, 5.5, 20.0}) {  // k = 1, 2, 5
    const PiecewiseVector pm(d, eps);
    const HybridVector hm(d, eps);
    SeededRandom rng(7 + static_cast<std::uint64_t>(eps));
    std::vector<std::vector<double>> a(d, std::vector<double>(n)), b(d, std::vector<double>(n));
    std::vector<double> out(d);
    for (std::size_t i = 0; i < n; ++i) {
      pm.report(t.data(), rng, out.data());
      std::size_t nonzero = 0;
      for (std::size_t j = 0; j < d; ++j) {
        a[j][i] = out[j];
        nonzero += out[j] != 0;
      }
      ASSERT_LE(nonzero, pm.k());
      hm.report(t.data(), rng, out.data());
      for (std::size_t j = 0; j < d; ++j) b[j][i] = out[j];
    }
    for (std::size_t j = 0; j < d; ++j) {
      // Var = (d / k) Var_M(t_j; eps / k) + (d / k - 1) t_j^2
      const double s = static_cast<double>(d) / static_cast<double>(pm.k());
      const double h = std::exp(eps / pm.k() / 2);
      const double var1 = t[j] * t[j] / (h - 1) + (h + 3) / (3 * (h - 1) * (h - 1));
      EXPECT_NEAR(pm.variance(t[j]), s * var1 + (s - 1) * t[j] * t[j], 1e-9 * pm.variance(t[j]));
      expect_mean_and_variance(a[j], t[j], pm.variance(t[j]), "PM vector coordinate " + std::to_string(j));
      expect_mean_and_variance(b[j], t[j], hm.variance(t[j]), "HM vector coordinate " + std::to_string(j));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Distribution of PM against its exact CDF

TEST(MeanMechanisms, PiecewiseOutputFollowsItsExactCdf) {
  for (double eps : {0.5, 2.0}) {
    for (double t : {-1.0, 0.4}) {
      const PiecewiseMechanism pm(eps);
      SeededRandom rng(31 + static_cast<std::uint64_t>(10 * eps));
      std::vector<double> x(100000);
      for (auto& v : x) v = pm.report(t, rng);
      EXPECT_LT(ks_one_sample(x, [&](double y) { return pm.cdf(t, y); }), kKs999) << eps << " " << t;
    }
  }
  // Power: the same sample against the CDF at another input is rejected.
  const PiecewiseMechanism pm(2.0);
  SeededRandom rng(5);
  std::vector<double> x(100000);
  for (auto& v : x) v = pm.report(0.4, rng);
  EXPECT_GT(ks_one_sample(x, [&](double y) { return pm.cdf(0.3, y); }), kKs999);
}

// ---------------------------------------------------------------------------------------------
// Bulk simulation

TEST(MeanMechanisms, BulkReportsFollowTheSameLawAsPerPlayerReports) {
  const std::size_t n = 60000, d = 3;
  const std::vector<double> t = {0.6, -0.2, 1.0};
  for (double eps : {1.0, 6.0}) {  // k = 1 and 2
    const PiecewiseVector pm(d, eps);
    const HybridVector hm(d, eps);
    SeededRandom rng(99);
    std::vector<double> out(d);
    std::vector<std::vector<double>> per[2], bulk[2];
    for (int m = 0; m < 2; ++m) {
      per[m].assign(d, std::vector<double>(n));
      bulk[m].assign(d, std::vector<double>(n));
    }
    for (std::size_t i = 0; i < n; ++i) {
      pm.report(t.data(), rng, out.data());
      for (std::size_t j = 0; j < d; ++j) per[0][j][i] = out[j];
      hm.report(t.data(), rng, out.data());
      for (std::size_t j = 0; j < d; ++j) per[1][j][i] = out[j];
      pm.report_from_stream(t.data(), PlayerStream(1234, i), out.data());
      for (std::size_t j = 0; j < d; ++j) bulk[0][j][i] = out[j];
      hm.report_from_stream(t.data(), PlayerStream(4321, i), out.data());
      for (std::size_t j = 0; j < d; ++j) bulk[1][j][i] = out[j];
    }
    for (int m = 0; m < 2; ++m)
      for (std::size_t j = 0; j < d; ++j)
        EXPECT_LT(ks_two_sample(per[m][j], bulk[m][j]), kKs999) << (m ? "HM" : "PM") << " eps " << eps << " j " << j;
  }
  // PrivUnit: the projections on u and on a direction orthogonal to it.
  const PrivUnit pu(4, 2.0);
  const std::vector<double> u = {0.5, 0.5, 0.5, 0.5}, g = {0.3, 0.0, -0.4, 0.0};
  SeededRandom rng(3);
  std::vector<double> out(4), p1(n), p2(n), b1(n), b2(n), q1(n), q2(n);
  for (std::size_t i = 0; i < n; ++i) {
    pu.report(u.data(), rng, out.data());
    p1[i] = std::inner_product(out.begin(), out.end(), u.begin(), 0.0);
    p2[i] = out[0] - out[1];
    pu.report_from_stream(u.data(), PlayerStream(8, i), out.data());
    b1[i] = std::inner_product(out.begin(), out.end(), u.begin(), 0.0);
    b2[i] = out[0] - out[1];
    // Inside the ball: the per-player rounding against the bulk one.
    pu.report_ball(g.data(), rng, out.data());
    q1[i] = out[0] - out[2];
    pu.report_from_stream(g.data(), PlayerStream(9, i), out.data());
    q2[i] = out[0] - out[2];
  }
  EXPECT_LT(ks_two_sample(p1, b1), kKs999);
  EXPECT_LT(ks_two_sample(p2, b2), kKs999);
  EXPECT_LT(ks_two_sample(q1, q2), kKs999);
}

TEST(MeanMechanisms, BulkMeanIsUnbiasedAndIndependentOfThreads) {
  const std::uint64_t n = 300000;
  const std::size_t d = 4;
  auto value = [](std::uint64_t i, std::size_t j) { return std::sin(0.001 * static_cast<double>(i) + static_cast<double>(j)); };
  std::vector<double> truth(d, 0.0);
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) truth[j] += value(i, j) / static_cast<double>(n);
  for (double eps : {1.0, 6.0}) {
    const PiecewiseVector pm(d, eps);
    const HybridVector hm(d, eps);
    const auto a1 = simulate_sampled_mean(pm, n, 11, value, 1), a2 = simulate_sampled_mean(pm, n, 11, value, 2),
               a3 = simulate_sampled_mean(pm, n, 11, value, 3);
    const auto h1 = simulate_sampled_mean(hm, n, 11, value, 1), h3 = simulate_sampled_mean(hm, n, 11, value, 3);
    for (std::size_t j = 0; j < d; ++j) {
      EXPECT_EQ(a1.mean[j], a2.mean[j]);
      EXPECT_EQ(a1.mean[j], a3.mean[j]);
      EXPECT_EQ(h1.mean[j], h3.mean[j]);
      // Unbiased: within 5 SE of the mean of the values (the worst-case variance bounds each report's).
      EXPECT_NEAR(a1.mean[j], truth[j], 5 * std::sqrt(pm.variance(1.0) / n));
      EXPECT_NEAR(h1.mean[j], truth[j], 5 * std::sqrt(std::max(hm.variance(0.0), hm.variance(1.0)) / n));
    }
  }
  // One dimension (the scalar mechanisms without sampling), and Duchi's mechanism.
  const DuchiSampledVector dm(1, 1.0);
  const PiecewiseVector pm1(1, 1.0);
  const auto v1 = simulate_sampled_mean(pm1, n, 5, value, 1), v2 = simulate_sampled_mean(pm1, n, 5, value, 2);
  EXPECT_EQ(v1.mean[0], v2.mean[0]);
  EXPECT_NEAR(v1.mean[0], truth[0], 5 * std::sqrt(pm1.variance(1.0) / n));
  EXPECT_NEAR(simulate_sampled_mean(dm, n, 5, value, 2).mean[0], truth[0], 5 * std::sqrt(dm.variance(0.0) / n));
  // PrivUnit over vectors in the unit ball.
  const PrivUnit pu(3, 2.0);
  auto fill = [](std::uint64_t i, double* g) {
    g[0] = 0.6 * std::cos(0.01 * static_cast<double>(i));
    g[1] = 0.6 * std::sin(0.01 * static_cast<double>(i));
    g[2] = 0.3;
  };
  const std::uint64_t np = 40000;
  const auto p1 = simulate_privunit_mean(pu, np, 17, fill, 1), p2 = simulate_privunit_mean(pu, np, 17, fill, 2);
  std::vector<double> ptruth(3, 0.0), g(3);
  for (std::uint64_t i = 0; i < np; ++i) {
    fill(i, g.data());
    for (std::size_t j = 0; j < 3; ++j) ptruth[j] += g[j] / static_cast<double>(np);
  }
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(p1.mean[j], p2.mean[j]);
    // Each coordinate's second moment is at most ||Z||^2 = 1 / m^2.
    EXPECT_NEAR(p1.mean[j], ptruth[j], 5 * pu.norm() / std::sqrt(static_cast<double>(np)));
  }
}

// ---------------------------------------------------------------------------------------------
// PrivUnit

TEST(MeanMechanisms, PrivUnitParametersMeetTheDensityRatioBound) {
  for (std::size_t d : {1, 2, 3, 10, 100, 1000}) {
    for (double eps : {0.25, 1.0, 2.0, 4.0, 8.0}) {
      const PrivUnit pu(d, eps);
      // The two density levels relative to the uniform law: cap p / q, elsewhere (1 - p) / (1 - q).
      const double ratio = pu.cap_density() / pu.rest_density();
      EXPECT_LE(ratio, std::exp(eps) * (1 + 1e-12)) << "d " << d << " eps " << eps;
      EXPECT_LE(pu.privacy_loss(), eps + 1e-12);
      EXPECT_GT(pu.privacy_loss(), eps - 1e-6) << "the budget is spent";
      EXPECT_GE(pu.p(), 0.5);
      EXPECT_GE(pu.gamma(), 0.0);
      EXPECT_GT(pu.m(), 0.0);
      EXPECT_NEAR(pu.eps0() + pu.eps1(), eps, 1e-12);
      if (d > 1) {
        // The cap's measure two ways: (1 + W) / 2 ~ Beta(a, a) and W^2 ~ Beta(1/2, (d-1)/2).
        const double dd = static_cast<double>(d);
        EXPECT_NEAR(pu.cap_probability(),
                    0.5 * boost::math::ibetac(0.5, 0.5 * (dd - 1), pu.gamma() * pu.gamma()), 1e-12);
        // Optimised: at least as good as fixed splits.
        for (double share : {0.0, 0.25, 0.5, 0.75, 1.0})
          EXPECT_GE(pu.m(), PrivUnit::with_split(d, share * eps, (1 - share) * eps).m() * (1 - 1e-9));
      } else {
        EXPECT_NEAR(pu.m(), std::tanh(eps / 2), 1e-12);  // 2p - 1
      }
    }
  }
  // The bound is on the parameters: a split spends exactly its sum.
  const PrivUnit s = PrivUnit::with_split(20, 0.7, 1.3);
  EXPECT_NEAR(s.privacy_loss(), 2.0, 1e-9);
  EXPECT_NEAR(s.p(), std::exp(0.7) / (1 + std::exp(0.7)), 1e-15);
}

TEST(MeanMechanisms, PrivUnitInThreeDimensionsProjectsOntoThePiecewiseMechanism) {
  // In d = 3, <V, u> is uniform on [-1, 1] (Archimedes), so <Z, u> has PM's two-level density;
  // the optimised split is eps0 = eps / 2 with gamma = m = 1 / C, and <Z, u> for a unit u has
  // exactly the law of PM's report at t = 1: an independent check of m, the search and the
  // variance formulas of both papers.
  for (double eps : {0.25, 1.0, 2.0, 4.0, 8.0}) {
    const PrivUnit pu(3, eps);
    const PiecewiseMechanism pm(eps);
    EXPECT_NEAR(pu.eps0(), eps / 2, 1e-6 * eps) << eps;
    EXPECT_NEAR(pu.m(), 1 / pm.bound(), 1e-9) << eps;
    EXPECT_NEAR(pu.gamma(), 1 / pm.bound(), 1e-7) << eps;  // gamma: the search and the safety nudge
    EXPECT_NEAR(pu.projection_variance(), pm.variance(1.0), 1e-7 * pm.variance(1.0)) << eps;
  }
}

TEST(MeanMechanisms, PrivUnitIsUnbiasedWithItsVarianceAndCap) {
  for (std::size_t d : {2, 5, 50}) {
    const double eps = d == 50 ? 4.0 : 2.0;
    const PrivUnit pu(d, eps);
    std::vector<double> u(d);
    for (std::size_t j = 0; j < d; ++j) u[j] = static_cast<double>(j + 1);
    const double un = std::sqrt(std::inner_product(u.begin(), u.end(), u.begin(), 0.0));
    for (auto& v : u) v /= un;
    const std::size_t n = 60000;
    SeededRandom rng(400 + d);
    std::vector<double> z(d), proj(n), dist2(n), first(n), dots_cap, dots_rest;
    std::size_t in_cap = 0;
    for (std::size_t i = 0; i < n; ++i) {
      pu.report(u.data(), rng, z.data());
      const double dot = std::inner_product(z.begin(), z.end(), u.begin(), 0.0);
      proj[i] = dot;
      first[i] = z[0];
      double s = 0;
      for (std::size_t j = 0; j < d; ++j) s += (z[j] - u[j]) * (z[j] - u[j]);
      dist2[i] = s;
      EXPECT_NEAR(std::sqrt(std::inner_product(z.begin(), z.end(), z.begin(), 0.0)), pu.norm(), 1e-9 * pu.norm());
      const double w = dot * pu.m();
      if (w >= pu.gamma()) {
        ++in_cap;
        dots_cap.push_back(w);
      } else {
        dots_rest.push_back(w);
      }
    }
    const std::string at = "d " + std::to_string(d);
    expect_mean_and_variance(proj, 1.0, pu.projection_variance(), "PrivUnit <Z, u>, " + at);
    // Unbiased in another coordinate too (variance estimated from the sample).
    const Moments mf = moments(first);
    EXPECT_NEAR(mf.mean, u[0], 5 * std::sqrt(mf.var / n)) << at;
    // E ||Z - u||^2 = 1 / m^2 - 1.
    const Moments md = moments(dist2);
    EXPECT_NEAR(md.mean, pu.total_variance(), 5 * std::sqrt(md.var / n)) << at;
    // The cap is hit with probability p, and <V, u> follows the truncated Beta law in each branch.
    const double sd = std::sqrt(pu.p() * (1 - pu.p()) / n);
    EXPECT_NEAR(static_cast<double>(in_cap) / n, pu.p(), 5 * sd) << at;
    EXPECT_LT(ks_one_sample(dots_cap, [&](double w) { return pu.dot_cdf(w, true); }), kKs999) << at;
    EXPECT_LT(ks_one_sample(dots_rest, [&](double w) { return pu.dot_cdf(w, false); }), kKs999) << at;
  }
}

// ---------------------------------------------------------------------------------------------
// Refusals

TEST(MeanMechanisms, BadInputIsAClearError) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (double eps : {0.0, -1.0, nan, inf}) {
    EXPECT_THROW(PiecewiseMechanism{eps}, UsageError);
    EXPECT_THROW(HybridMechanism{eps}, UsageError);
    EXPECT_THROW(DuchiMechanism{eps}, UsageError);
    EXPECT_THROW(PiecewiseVector(3, eps), UsageError);
    EXPECT_THROW(PrivUnit(3, eps), UsageError);
  }
  EXPECT_THROW(PiecewiseVector(0, 1.0), UsageError);
  EXPECT_THROW(PrivUnit(0, 1.0), UsageError);
  EXPECT_THROW(PrivUnit::with_split(3, -0.1, 1.0), UsageError);
  try {
    PiecewiseMechanism pm(-2.0);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a finite epsilon > 0"), std::string::npos) << e.what();
  }
  SeededRandom rng(1);
  const PiecewiseMechanism pm(1.0);
  const HybridMechanism hm(1.0);
  const DuchiMechanism dm(1.0);
  for (double t : {1.5, -1.0000001, nan, inf}) {
    EXPECT_THROW(pm.report(t, rng), InputError);
    EXPECT_THROW(hm.report(t, rng), InputError);
    EXPECT_THROW(dm.report(t, rng), InputError);
  }
  try {
    pm.report(2.0, rng);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a value in [-1, 1]"), std::string::npos) << e.what();
  }
  const PiecewiseVector pv(2, 1.0);
  const double bad[2] = {0.0, 3.0};
  double out[3];
  EXPECT_THROW(pv.report(bad, rng, out), InputError);
  EXPECT_THROW(simulate_sampled_mean(pv, 10000, 1, [](std::uint64_t i, std::size_t j) { return i == 5000 && j == 1 ? 2.0 : 0.0; }),
               InputError);
  // PrivUnit: the zero vector and non-unit vectors are refused by report; report_ball takes the
  // zero vector (rounded to +-e_1) but no norm above 1.
  const PrivUnit pu(3, 1.0);
  const double zero[3] = {0, 0, 0}, two[3] = {2, 0, 0}, half[3] = {0.5, 0, 0};
  try {
    pu.report(zero, rng, out);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a unit vector"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pu.report(two, rng, out), InputError);
  EXPECT_THROW(pu.report(half, rng, out), InputError);
  EXPECT_THROW(pu.report_ball(two, rng, out), InputError);
  EXPECT_NO_THROW(pu.report_ball(zero, rng, out));
  EXPECT_NEAR(std::sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2]), pu.norm(), 1e-9);
  EXPECT_THROW(simulate_privunit_mean(pu, 100, 1, [](std::uint64_t, double* g) { g[0] = 1.5; }), InputError);
  EXPECT_THROW(parse_gradient_mechanism("duchi"), UsageError);
}

// ---------------------------------------------------------------------------------------------
// LDP-SGD with the mean mechanisms

TEST(MeanMechanisms, SgdWithEachMechanismLearnsAndIsReproducible) {
  ErmProblem pr;
  pr.kind = Loss::Logistic;
  pr.p = 2;
  pr.lo = -3;
  pr.hi = 3;
  const Players pl = generate_players(Loss::Logistic, 20000, 2, 1, 1.5);
  const ErmResult opt = nonprivate_erm(pr, pl);
  const std::vector<double> zero(2, 0.0);
  const double start = empirical_risk(pr, pl, zero.data());
  for (auto m : {GradientMechanism::Piecewise, GradientMechanism::Hybrid, GradientMechanism::PrivUnit}) {
    const ErmResult a = ldp_sgd_mean_mechanism(pr, pl, 4.0, m, 42), b = ldp_sgd_mean_mechanism(pr, pl, 4.0, m, 42);
    EXPECT_EQ(a.theta, b.theta);
    EXPECT_TRUE(std::isfinite(a.risk));
    EXPECT_GE(a.risk, opt.risk - 1e-9);
    // Closer to the optimum than theta = 0 (the starting point) at eps = 4, n = 20000.
    EXPECT_LT(a.risk - opt.risk, 0.5 * (start - opt.risk)) << static_cast<int>(m);
  }
  EXPECT_THROW(ldp_sgd_mean_mechanism(pr, pl, 0.0, GradientMechanism::Hybrid, 1), UsageError);
}
