// Private RACE classifier and objective-perturbation logistic regression: real properties,
// seeded and deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "privrace/baselines/objective_perturbation.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/tasks/classify.hpp"

namespace privrace {
namespace {

// Two well separated Gaussian blobs inside the unit cube, 70% / 30%.
void blobs(std::size_t n, std::size_t d, std::uint64_t seed, DenseMatrix& x, std::vector<int>& y) {
  SeededRandom rng(seed);
  x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int c = rng.unit() < 0.7 ? 0 : 1;
    y[i] = c;
    for (std::size_t j = 0; j < d; ++j)
      x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) =
          static_cast<Real>(std::clamp((c == 0 ? 0.3 : 0.7) + 0.08 * sample_normal(rng), 0.0, 1.0));
  }
}

double majority_accuracy(const std::vector<int>& y) {
  const double ones = static_cast<double>(std::accumulate(y.begin(), y.end(), 0));
  return std::max(ones, static_cast<double>(y.size()) - ones) / static_cast<double>(y.size());
}

TEST(RaceClassifier, BeatsMajorityOnSeparableDataExactAndPrivate) {
  DenseMatrix xtr, xte;
  std::vector<int> ytr, yte;
  blobs(6000, 4, 1, xtr, ytr);
  blobs(1000, 4, 2, xte, yte);
  RaceClassifierSpec spec;
  spec.rows = 100;
  spec.width = 100;
  spec.bandwidth = 0.3;
  spec.seed = 7;
  RaceClassifier clf(spec, 4, 2);
  clf.fit(xtr, ytr);
  const double maj = majority_accuracy(yte);
  const double exact_ml = accuracy(clf.predict(xte, DecisionRule::MaxLikelihood), yte);
  const double exact_map = accuracy(clf.predict(xte, DecisionRule::Map), yte);
  EXPECT_GT(exact_ml, 0.97);
  EXPECT_GT(exact_map, 0.97);
  EXPECT_LT(maj, 0.75);
  RaceClassifier priv = clf;
  PrivacySpec ps;
  ps.epsilon = 1.0;
  priv.privatize(ps, NoiseSource{true, 11});
  EXPECT_GT(accuracy(priv.predict(xte, DecisionRule::MaxLikelihood), yte), maj + 0.15);
  // Non-private limit: huge epsilon reproduces the exact predictions.
  RaceClassifier nearly_exact = clf;
  ps.epsilon = 1e9;
  nearly_exact.privatize(ps, NoiseSource{true, 12});
  EXPECT_EQ(nearly_exact.predict(xte, DecisionRule::MaxLikelihood), clf.predict(xte, DecisionRule::MaxLikelihood));
  // A released classifier is not released again (its counts carry noise).
  EXPECT_THROW(priv.privatize(ps, NoiseSource{true, 13}), UsageError);
}

TEST(RaceClassifier, EveryClassSpendsTheWholeEpsilonWithIndependentNoise) {
  DenseMatrix x;
  std::vector<int> y;
  blobs(3000, 3, 3, x, y);
  RaceClassifierSpec spec;
  spec.rows = 50;
  spec.width = 200;
  spec.bandwidth = 0.5;
  RaceClassifier clf(spec, 3, 2);
  clf.fit(x, y);
  RaceClassifier priv = clf;
  PrivacySpec ps;
  ps.epsilon = 2.0;
  priv.privatize(ps, NoiseSource{true, 5});
  const DiscreteLaplace dl(static_cast<double>(spec.rows) / ps.epsilon);  // L1 sensitivity R, whole eps
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(privacy_record_json(priv.sketch(c).privacy()).at("noise_scale").get<double>(), 25.0, 1e-6);
    // Empirical variance of the noise matches the discrete Laplace variance (10^4 cells: the
    // relative standard error of the variance estimate is about 2.5%; allow 4 of them).
    double s2 = 0;
    const auto a = priv.sketch(c).counts(), b = clf.sketch(c).counts();
    for (std::size_t i = 0; i < a.size(); ++i) s2 += std::pow(static_cast<double>(a[i] - b[i]), 2);
    EXPECT_NEAR(s2 / static_cast<double>(a.size()) / dl.variance(), 1.0, 0.1);
  }
  // The two classes' noise differs (independent streams).
  const auto a0 = priv.sketch(0).counts(), e0 = clf.sketch(0).counts();
  const auto a1 = priv.sketch(1).counts(), e1 = clf.sketch(1).counts();
  int same = 0;
  for (std::size_t i = 0; i < 100; ++i) same += (a0[i] - e0[i]) == (a1[i] - e1[i]);
  EXPECT_LT(same, 20);
}

TEST(RaceClassifier, BandwidthSearchKeepsTheBestValidatedPoint) {
  DenseMatrix xf, xv;
  std::vector<int> yf, yv;
  blobs(3000, 4, 4, xf, yf);
  blobs(600, 4, 5, xv, yv);
  RaceClassifierSpec spec;
  spec.rows = 50;
  const auto res = search_bandwidth(xf, yf, xv, yv, 2, spec, 5);
  ASSERT_EQ(res.trace.size(), 10u);
  double best = 0;
  for (const auto& [w, acc] : res.trace) {
    EXPECT_GT(w, 0.0);
    EXPECT_LT(w, 1.0);
    best = std::max(best, acc);
  }
  EXPECT_EQ(res.validation_accuracy, best);
  EXPECT_GT(best, 0.95);
}

// ---- objective perturbation ---------------------------------------------------------------

void logistic_data(std::size_t n, std::size_t d, std::uint64_t seed, DoubleMatrix& x, Eigen::VectorXd& y) {
  SeededRandom rng(seed);
  x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  y.resize(static_cast<Eigen::Index>(n));
  Eigen::VectorXd w(static_cast<Eigen::Index>(d));
  for (Eigen::Index j = 0; j < w.size(); ++j) w(j) = sample_normal(rng);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = sample_normal(rng);
    x.row(i) /= std::max(1.0, x.row(i).norm());
    const double p = 1 / (1 + std::exp(-4 * x.row(i).dot(w)));
    y(i) = rng.unit() < p ? 1.0 : -1.0;
  }
}

TEST(ObjectivePerturbation, LargeEpsilonConvergesToTheNonPrivateSolution) {
  DoubleMatrix x;
  Eigen::VectorXd y;
  logistic_data(2000, 5, 21, x, y);
  SeededRandom rng(1);
  const auto np = objective_perturbation_logistic(x, y, 0.0, 0.01, rng);  // eps <= 0: non-private
  double prev = 1e300;
  for (const double eps : {1.0, 100.0, 1e4, 1e6}) {
    SeededRandom r(2);
    const auto p = objective_perturbation_logistic(x, y, eps, 0.01, r);
    const double dist = (p.w - np.w).norm();
    EXPECT_LT(dist, prev * 1.5);  // shrinking (noise norm ~ 2d/eps')
    prev = dist;
  }
  EXPECT_LT(prev, 1e-3);
  // Optimality of the non-private fit: the gradient vanishes.
  Eigen::VectorXd g = 0.01 * np.w;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double m = y(i) * x.row(i).dot(np.w);
    g -= (y(i) / (1 + std::exp(m)) / static_cast<double>(x.rows())) * x.row(i).transpose();
  }
  EXPECT_LT(g.norm(), 1e-8);
}

TEST(ObjectivePerturbation, EpsilonPrimeCorrectionFollowsAlgorithm2) {
  DoubleMatrix x;
  Eigen::VectorXd y;
  logistic_data(200, 3, 22, x, y);
  const double n = 200, c = 0.25;
  // Branch 1: eps' = eps - log(1 + 2c/(n L) + c^2/(n L)^2) > 0, no extra regulariser.
  SeededRandom r1(3);
  const auto a = objective_perturbation_logistic(x, y, 1.0, 0.1, r1);
  EXPECT_NEAR(a.epsilon_prime, 1.0 - std::log(1 + 2 * c / (n * 0.1) + c * c / (n * n * 0.01)), 1e-12);
  EXPECT_EQ(a.extra_reg, 0.0);
  // Branch 2: tiny eps and lambda make eps' <= 0: Delta = c / (n (e^{eps/4} - 1)) - lambda, eps' = eps / 2.
  SeededRandom r2(4);
  const auto b = objective_perturbation_logistic(x, y, 0.01, 1e-4, r2);
  EXPECT_NEAR(b.epsilon_prime, 0.005, 1e-15);
  EXPECT_NEAR(b.extra_reg, c / (n * std::expm1(0.01 / 4)) - 1e-4, 1e-12);
}

TEST(ObjectivePerturbation, NoiseNormIsGammaDTwoOverEpsPrime) {
  // ||b|| ~ Gamma(d, 2/eps'): mean 2d/eps', variance d (2/eps')^2. 4000 draws, seeded.
  SeededRandom rng(9);
  const int d = 6;
  const double scale = 2 / 0.7;
  double s = 0, s2 = 0;
  const int m = 4000;
  for (int i = 0; i < m; ++i) {
    const double v = sample_gamma_integer(rng, d, scale);
    s += v;
    s2 += v * v;
  }
  const double mean = s / m, var = s2 / m - mean * mean;
  EXPECT_NEAR(mean / (d * scale), 1.0, 4 * std::sqrt(1.0 / (d * m)));
  EXPECT_NEAR(var / (d * scale * scale), 1.0, 0.1);
}

TEST(ObjectivePerturbation, RefusesConditionsThePrivacyProofNeeds) {
  DoubleMatrix x;
  Eigen::VectorXd y;
  logistic_data(50, 3, 23, x, y);
  SeededRandom rng(1);
  EXPECT_THROW(objective_perturbation_logistic(x, y, 1.0, 0.0, rng), UsageError);  // lambda = 0
  DoubleMatrix big = x * 3.0;
  EXPECT_THROW(objective_perturbation_logistic(big, y, 1.0, 0.1, rng), UsageError);  // ||x|| > 1
}

}  // namespace
}  // namespace privrace
