// Noise mechanisms: each one's distribution is checked against its definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "test_util.hpp"

using namespace privrace;
using privrace::testing::chi_square;
using privrace::testing::chi_square_critical;

TEST(BernoulliExp, FrequencyMatchesExpMinusGamma) {
  SeededRandom rng(11);
  for (const auto& [num, den] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 3}, {1, 1}, {7, 2}, {0, 5}}) {
    const int n = 200000;
    int hits = 0;
    for (int i = 0; i < n; ++i) hits += bernoulli_exp(rng, num, den);
    const double p = std::exp(-static_cast<double>(num) / static_cast<double>(den));
    const double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(hits) / n, p, 5 * sd + 1e-12) << num << "/" << den;
  }
}

class DiscreteLaplaceScales : public ::testing::TestWithParam<double> {};

TEST_P(DiscreteLaplaceScales, MatchesPmfAndVariance) {
  const double scale = GetParam();
  const DiscreteLaplace noise(scale);
  EXPECT_GE(noise.scale(), scale);  // rounded up: never less noise than asked
  EXPECT_LT(noise.scale(), scale * (1 + 3e-4));
  SeededRandom rng(static_cast<std::uint64_t>(scale * 1000) + 7);
  const long long n = 200000;
  std::map<long long, long long> hist;
  double sum = 0, sum2 = 0;
  for (long long i = 0; i < n; ++i) {
    const auto y = noise.sample(rng);
    ++hist[y];
    sum += static_cast<double>(y);
    sum2 += static_cast<double>(y) * static_cast<double>(y);
  }
  const long long k = static_cast<long long>(std::ceil(6 * scale)) + 2;
  const auto [stat, df] = chi_square(hist, [&](long long y) { return noise.pmf(y); }, -k, k, n);
  EXPECT_LT(stat, chi_square_critical(df)) << "chi-square " << stat << " with " << df << " df at scale " << scale;
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(noise.variance() / n));
  // Var of the sample variance ~ (kurtosis) var^2 / n; 6 var / sqrt(n) is a loose 5-sigma band.
  EXPECT_NEAR(var / noise.variance(), 1.0, 6.0 * std::sqrt(6.0 / n) + 0.01);
}

INSTANTIATE_TEST_SUITE_P(Scales, DiscreteLaplaceScales, ::testing::Values(0.3, 1.0, 2.5, 17.0, 1000.0));

TEST(DiscreteLaplace, HugeScaleKeepsVarianceAndSymmetry) {
  // R / epsilon = 1000 / 1e-4 = 1e7: the regime of the paper's smallest epsilons.
  const DiscreteLaplace noise(1e7);
  SeededRandom rng(5);
  const int n = 50000;
  double sum2 = 0;
  int positive = 0;
  for (int i = 0; i < n; ++i) {
    const auto y = static_cast<double>(noise.sample(rng));
    sum2 += y * y;
    positive += y > 0;
  }
  EXPECT_NEAR(sum2 / n / noise.variance(), 1.0, 0.1);
  EXPECT_NEAR(positive / static_cast<double>(n), 0.5, 0.01);
}

TEST(DiscreteLaplace, SumOfDrawsFollowsTheConvolutionOfItsPmf) {
  // sample_sum(n) against the exact pmf of n independent draws (the n-fold convolution of pmf,
  // truncated where its mass is below 1e-15), chi-square; and the moments at many players.
  for (const auto& [scale, n] : {std::pair{0.7, 1ULL}, {1.5, 3ULL}, {4.0, 7ULL}}) {
    const DiscreteLaplace noise(scale);
    const long long M = 400;
    std::vector<double> one(2 * M + 1), conv = {1.0};  // conv: pmf of the sum on [-c, c]
    for (long long y = -M; y <= M; ++y) one[static_cast<std::size_t>(y + M)] = noise.pmf(y);
    for (std::uint64_t k = 0; k < n; ++k) {
      std::vector<double> next(conv.size() + one.size() - 1, 0.0);
      for (std::size_t a = 0; a < conv.size(); ++a)
        for (std::size_t b = 0; b < one.size(); ++b) next[a + b] += conv[a] * one[b];
      conv = std::move(next);
    }
    const long long c = static_cast<long long>(conv.size() / 2);
    SeededRandom rng(17 + n);
    const long long draws = 200000;
    std::map<long long, long long> hist;
    for (long long i = 0; i < draws; ++i) ++hist[noise.sample_sum(n, rng)];
    const auto [stat, df] = privrace::testing::chi_square(
        hist, [&](long long y) { return conv[static_cast<std::size_t>(y + c)]; }, -200, 200, draws);
    EXPECT_GT(df, 10) << "scale " << scale;
    EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "scale " << scale << " n " << n << " df " << df;
  }
  // 10^7 players at the largest LDP-ERM scale: mean 0 and variance n Var(one draw).
  const DiscreteLaplace big(65536.0 * 113 / 0.5);
  const std::uint64_t players = 10000000;
  SeededRandom rng(3);
  const int draws = 20000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < draws; ++i) {
    const auto y = static_cast<double>(big.sample_sum(players, rng));
    sum += y;
    sum2 += y * y;
  }
  const double var = big.variance() * static_cast<double>(players);
  EXPECT_NEAR(sum / draws / std::sqrt(var), 0.0, 5.0 / std::sqrt(draws));
  EXPECT_NEAR(sum2 / draws / var, 1.0, 5.0 * std::sqrt(2.0 / draws));
  EXPECT_EQ(big.sample_sum(0, rng), 0);
}

TEST(DiscreteLaplace, RejectsBadScales) {
  EXPECT_THROW(DiscreteLaplace(0.0), UsageError);
  EXPECT_THROW(DiscreteLaplace(-1.0), UsageError);
  EXPECT_THROW(DiscreteLaplace(std::nan("")), UsageError);
  EXPECT_THROW(DiscreteLaplace(1e300), UsageError);
}

TEST(ContinuousLaplace, FlooredMatchesCdfDifferences) {
  // floor(Lap(b)) has P(k) = F(k+1) - F(k), F the Laplace cdf.
  const double b = 2.0;
  SeededRandom rng(3);
  const long long n = 200000;
  std::map<long long, long long> hist;
  for (long long i = 0; i < n; ++i) ++hist[static_cast<long long>(std::floor(sample_laplace(rng, b)))];
  auto cdf = [&](double x) { return x < 0 ? 0.5 * std::exp(x / b) : 1 - 0.5 * std::exp(-x / b); };
  const auto [stat, df] = chi_square(hist, [&](long long k) { return cdf(k + 1.0) - cdf(static_cast<double>(k)); }, -15, 15, n);
  EXPECT_LT(stat, chi_square_critical(df));
}

TEST(ContinuousLaplace, FlooredVarianceIsTheExactSumOverItsPmf) {
  // The variance recorded for floor(c + Lap(b)) against the sum over P(k) = F(k+1) - F(k); the
  // old 2 b^2 + 1/12 is off by 0.0081 at b = 1 (the thorough audit's eps = 4 case) and by less
  // than 1e-3 relative from b = 2 on.
  for (const double b : {0.25, 0.5, 1.0, 2.0, 8.0, 40.0}) {
    auto cdf = [&](double x) { return x < 0 ? 0.5 * std::exp(x / b) : 1 - 0.5 * std::exp(-x / b); };
    double mean = 0, second = 0;
    const long long reach = static_cast<long long>(60 * b) + 60;
    for (long long k = -reach; k <= reach; ++k) {
      const double p = cdf(k + 1.0) - cdf(static_cast<double>(k));
      mean += p * static_cast<double>(k);
      second += p * static_cast<double>(k) * static_cast<double>(k);
    }
    EXPECT_NEAR(mean, -0.5, 1e-9) << b;
    EXPECT_NEAR(floored_laplace_variance(b), second - mean * mean, 1e-9 * (1 + 2 * b * b)) << b;
  }
  EXPECT_GT(floored_laplace_variance(1.0) - (2.0 + 1.0 / 12.0), 0.008);
  // And the sampler: 4e6 seeded draws at b = 1 land within 4 standard errors of it.
  SeededRandom rng(5);
  const long long n = 4000000;
  double sum = 0, sum2 = 0;
  for (long long i = 0; i < n; ++i) {
    const double y = std::floor(sample_laplace(rng, 1.0));
    sum += y;
    sum2 += y * y;
  }
  const double m = sum / static_cast<double>(n), var = sum2 / static_cast<double>(n) - m * m;
  EXPECT_NEAR(var, floored_laplace_variance(1.0), 4 * std::sqrt(25.0 / static_cast<double>(n)));
}

TEST(Gaussian, NormalSamplerHasUnitVarianceAndGaussianTails) {
  SeededRandom rng(9);
  const int n = 200000;
  double s = 0, s2 = 0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = sample_normal(rng);
    s += z;
    s2 += z * z;
    beyond2 += std::abs(z) > 2.0;
  }
  EXPECT_NEAR(s / n, 0.0, 0.015);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
  EXPECT_NEAR(beyond2 / static_cast<double>(n), std::erfc(2.0 / std::sqrt(2.0)), 0.003);  // 4.55%
}

TEST(Gaussian, BulkNormalsFollowTheNormalLaw) {
  // Kolmogorov-Smirnov against Phi on 200,000 draws (critical value at level 1e-3: 1.95 / sqrt(n)),
  // moments and both tails; and the draws are a stream: seeded, reproducible, not repeated.
  SeededRandom rng(17);
  const std::size_t n = 200000;
  std::vector<double> z(n);
  fill_normal(rng, z.data(), 1000);  // in pieces, as the callers draw them
  fill_normal(rng, z.data() + 1000, n - 1000);
  double s = 0, s2 = 0, s4 = 0;
  for (const double v : z) s += v, s2 += v * v, s4 += v * v * v * v;
  EXPECT_NEAR(s / n, 0.0, 0.015);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
  EXPECT_NEAR(s4 / n, 3.0, 0.1);
  std::sort(z.begin(), z.end());
  double ks = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double F = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    ks = std::max({ks, std::abs(F - static_cast<double>(i) / n), std::abs(F - static_cast<double>(i + 1) / n)});
  }
  EXPECT_LT(ks, 1.95 / std::sqrt(static_cast<double>(n)));
  const auto tail = [&](double t) {
    return static_cast<double>(std::count_if(z.begin(), z.end(), [&](double v) { return std::abs(v) > t; })) / n;
  };
  EXPECT_NEAR(tail(2.0), std::erfc(2.0 / std::sqrt(2.0)), 0.003);
  EXPECT_NEAR(tail(3.5), std::erfc(3.5 / std::sqrt(2.0)), 2.5e-4);  // the ziggurat's tail region
  SeededRandom a(5), b(5);
  double x[4], y[4];
  fill_normal(a, x, 4);
  fill_normal(b, y, 4);
  EXPECT_TRUE(std::equal(x, x + 4, y));
  fill_normal(a, y, 4);
  EXPECT_FALSE(std::equal(x, x + 4, y));
}

TEST(Gaussian, AnalyticSigmaMeetsDeltaAndBeatsClassicBound) {
  for (const double eps : {0.1, 0.5, 1.0, 4.0}) {
    const double delta = 1e-5, l2 = 3.0;
    const double sigma = analytic_gaussian_sigma(eps, delta, l2);
    auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    auto achieved = [&](double s) { return phi(l2 / (2 * s) - eps * s / l2) - std::exp(eps) * phi(-l2 / (2 * s) - eps * s / l2); };
    EXPECT_LE(achieved(sigma), delta * (1 + 1e-9));
    EXPECT_GT(achieved(sigma * 0.99), delta);  // the smallest such sigma, not just any
    if (eps < 1) {
      EXPECT_LT(sigma, l2 * std::sqrt(2 * std::log(1.25 / delta)) / eps);
    }
  }
}

TEST(Sensitivity, DerivedValues) {
  auto s = race_sensitivity(100, 1, NeighborRelation::AddRemove);
  EXPECT_DOUBLE_EQ(s.l1, 100);
  EXPECT_DOUBLE_EQ(s.l2, 10);
  s = race_sensitivity(100, 1, NeighborRelation::Replace);
  EXPECT_DOUBLE_EQ(s.l1, 200);  // replace-one doubles the L1 sensitivity
  EXPECT_NEAR(s.l2, std::sqrt(200.0), 1e-12);
  s = race_sensitivity(100, 2, NeighborRelation::AddRemove);  // regression sketch inserts x and -x
  EXPECT_DOUBLE_EQ(s.l1, 200);
}

TEST(PrivacySpec, ValidatesFields) {
  PrivacySpec p;
  p.epsilon = 0;
  EXPECT_THROW(p.validate(), UsageError);
  p.epsilon = -1;
  EXPECT_THROW(p.validate(), UsageError);
  p.epsilon = std::nan("");
  EXPECT_THROW(p.validate(), UsageError);
  p.epsilon = 1;
  p.mechanism = NoiseMechanism::Gaussian;
  EXPECT_THROW(p.validate(), UsageError);  // needs delta
  p.delta = 1e-6;
  EXPECT_NO_THROW(p.validate());
  EXPECT_THROW(parse_mechanism("laplace?"), UsageError);
  EXPECT_THROW(parse_neighbors("swap"), UsageError);
}

TEST(RandomSource, BelowIsUniform) {
  SeededRandom rng(1);
  std::map<long long, long long> hist;
  const long long n = 120000;
  for (long long i = 0; i < n; ++i) ++hist[static_cast<long long>(rng.below(12))];
  const auto [stat, df] = chi_square(hist, [](long long) { return 1.0 / 12; }, 0, 11, n);
  EXPECT_LT(stat, chi_square_critical(df));
  CryptoRandom os;
  EXPECT_TRUE(os.cryptographic());
  EXPECT_NE(os.next(), os.next());
}

TEST(DiscreteGaussian, SamplesAtTheTopOfItsRangeWhereSigmaSquaredTimesQOverflowed) {
  // sigma^2 q above 2^64 (sigma near 10^7, q = 2^20) made p 0 and the sampler divide by zero
  // (SIGFPE in an AIM cell of kde_codrna at eps = 1e-6). Now a smaller q is taken: the sample
  // standard deviation is sigma's (4,000 draws: its own sd is about 1.1%, the bound is 8%).
  for (const double sigma : {4.3e6, 1e7}) {
    const DiscreteGaussian g(sigma);
    SeededRandom rng(5);
    const int n = 4000;
    std::vector<double> x(n);
    for (double& v : x) v = static_cast<double>(g.sample(rng));
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
    const double sd = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0) / n - mean * mean);
    EXPECT_NEAR(sd / sigma, 1.0, 0.08) << sigma;
    EXPECT_LT(std::abs(mean), 5 * sigma / std::sqrt(static_cast<double>(n))) << sigma;
  }
}

TEST(DiscreteGaussian, MatchesItsExactPmfAndTheZcdpConversionRoundTrips) {
  // Chi-square against pmf(x) = exp(-x^2 / (2 s2)) / sum_z exp(-z^2 / (2 s2)), s2 the variance
  // the sampler uses (sigma^2 rounded up), for a small sigma (proposal scale t = 1), a middle
  // one and one with a non-dyadic sigma^2.
  for (const double sigma : {0.6, 3.0, 7.3}) {
    const DiscreteGaussian g(sigma);
    const double s2 = g.sigma2();
    EXPECT_GE(s2, sigma * sigma);
    EXPECT_LT(s2, sigma * sigma * (1 + 1e-5));
    double z = 0;
    const long long reach = static_cast<long long>(std::ceil(12 * sigma)) + 2;
    for (long long x = -reach; x <= reach; ++x) z += std::exp(-static_cast<double>(x * x) / (2 * s2));
    SeededRandom rng(static_cast<std::uint64_t>(sigma * 1000));
    std::map<long long, long long> seen;
    const long long n = 200000;
    for (long long i = 0; i < n; ++i) ++seen[g.sample(rng)];
    const auto [stat, df] = privrace::testing::chi_square(
        seen, [&](long long x) { return std::exp(-static_cast<double>(x * x) / (2 * s2)) / z; }, -reach, reach, n);
    EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "sigma " << sigma << " df " << df;
  }
  for (const double eps : {0.1, 1.0, 8.0}) EXPECT_NEAR(zcdp_epsilon(zcdp_rho(eps, 1e-6), 1e-6), eps, 1e-12 * eps);
  EXPECT_THROW(DiscreteGaussian(0.0), UsageError);
  EXPECT_THROW(zcdp_rho(1.0, 1.0), UsageError);
}
