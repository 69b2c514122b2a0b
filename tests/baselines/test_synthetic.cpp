// Synthetic-data generators (baselines/synthetic.hpp): DP-Copula and PrivBayes behind the
// generator interface. Seeded and fast.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <numbers>

#include "privrace/baselines/dp_copula.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/baselines/synthetic_generators.hpp"
#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

// PrivBayes's options of network degree `degree` and `bins` bins per column.
SyntheticOptions privbayes_options(int degree, int bins) {
  SyntheticOptions o;
  o.privbayes.degree = degree;
  o.privbayes.bins = bins;
  return o;
}

// n rows of a zero-mean Gaussian with unit variances and the given correlation matrix.
DenseMatrix gaussian_table(std::size_t n, const Eigen::MatrixXd& corr, std::uint64_t seed) {
  SeededRandom rng(seed);
  const Eigen::MatrixXd l = Eigen::LLT<Eigen::MatrixXd>(corr).matrixL();
  DenseMatrix x(static_cast<Eigen::Index>(n), corr.rows());
  Eigen::VectorXd g(corr.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < g.size(); ++j) g(j) = sample_normal(rng);
    x.row(i) = (l * g).transpose().cast<Real>();
  }
  return x;
}

Eigen::VectorXd column_means(const DoubleMatrix& x) { return x.colwise().mean().transpose(); }
Eigen::MatrixXd pearson(const DoubleMatrix& x) {
  const Eigen::MatrixXd c = x.rowwise() - x.colwise().mean();
  Eigen::MatrixXd cov = c.transpose() * c / static_cast<double>(x.rows());
  const Eigen::VectorXd s = cov.diagonal().cwiseSqrt().cwiseInverse();
  return s.asDiagonal() * cov * s.asDiagonal();
}

// O(n^2) reference for S = concordant - discordant.
std::int64_t brute_concordance(const std::vector<double>& x, const std::vector<double>& y) {
  std::int64_t s = 0;
  auto sgn = [](double v) { return (v > 0) - (v < 0); };
  for (std::size_t a = 0; a < x.size(); ++a)
    for (std::size_t b = a + 1; b < x.size(); ++b) s += sgn(x[a] - x[b]) * sgn(y[a] - y[b]);
  return s;
}

TEST(DpCopula, KendallConcordanceMatchesBruteForceWithTies) {
  SeededRandom rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 1 + rng.below(300);
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<double>(rng.below(trial % 2 ? 5 : 1000));  // heavy ties on odd trials
      y[i] = static_cast<double>(rng.below(trial % 3 ? 7 : 1000)) + 0.1 * x[i];
    }
    EXPECT_EQ(kendall_concordance(x, y), brute_concordance(x, y)) << "trial " << trial;
  }
  const std::vector<double> c(50, 0.25), v = [] { std::vector<double> r(50); for (int i = 0; i < 50; ++i) r[i] = i; return r; }();
  EXPECT_EQ(kendall_concordance(c, v), 0);  // a constant column is tied in every pair
  EXPECT_EQ(kendall_concordance(v, v), 50 * 49 / 2);
}

TEST(DpCopula, NearestCorrelationIsAPositiveDefiniteCorrelationMatrix) {
  Eigen::MatrixXd a(3, 3);
  a << 1, 0.9, -0.9, 0.9, 1, 0.9, -0.9, 0.9, 1;  // not PSD (eigenvalue -0.8)
  const Eigen::MatrixXd p = nearest_correlation(a, 1e-6);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p(i, i), 1.0, 1e-12);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(p).eigenvalues().minCoeff(), 0.0);
  EXPECT_LT((p - a).norm(), (Eigen::MatrixXd::Identity(3, 3) - a).norm());  // nearer than the identity
  // A valid correlation matrix is kept.
  Eigen::MatrixXd b(2, 2);
  b << 1, 0.3, 0.3, 1;
  EXPECT_LT((nearest_correlation(b, 1e-6) - b).norm(), 1e-9);
}

TEST(DpCopula, LargeEpsilonReproducesMarginalsAndCorrelation) {
  Eigen::MatrixXd corr(3, 3);
  corr << 1, 0.6, -0.3, 0.6, 1, 0.2, -0.3, 0.2, 1;
  const DenseMatrix data = gaussian_table(20000, corr, 5);
  DpCopula gen;  // 100 bins
  SeededRandom noise(6);
  gen.fit(data, TableBox::uniform(3, -5, 5), {1e5, 0}, noise);
  const DoubleMatrix syn = gen.sample(40000, 7);
  ASSERT_EQ(syn.rows(), 40000);
  ASSERT_EQ(syn.cols(), 3);
  EXPECT_GE(syn.minCoeff(), -5.0);
  EXPECT_LE(syn.maxCoeff(), 5.0);
  const DoubleMatrix real = data.cast<double>();
  // Tolerances: bins of width 0.1 (uniform inside: +0.1^2/12 variance), sampling error of
  // 40k synthetic rows (sd of a mean 0.005, of a correlation ~0.004) and of tau on 20k rows.
  const Eigen::VectorXd dm = column_means(syn) - column_means(real);
  EXPECT_LT(dm.cwiseAbs().maxCoeff(), 0.03);
  const Eigen::MatrixXd ps = pearson(syn), pr = pearson(real);
  EXPECT_LT((ps - pr).cwiseAbs().maxCoeff(), 0.03) << ps << "\n" << pr;
  for (Eigen::Index j = 0; j < 3; ++j) {
    const double sd_syn = std::sqrt((syn.col(j).array() - syn.col(j).mean()).square().mean());
    const double sd_real = std::sqrt((real.col(j).array() - real.col(j).mean()).square().mean());
    EXPECT_NEAR(sd_syn, sd_real, 0.03);
    // Marginal quantiles: the fraction below -1, 0, 1 (Kolmogorov-style check at 3 points).
    for (const double q : {-1.0, 0.0, 1.0}) {
      const double fs = (syn.col(j).array() <= q).cast<double>().mean(), fr = (real.col(j).array() <= q).cast<double>().mean();
      EXPECT_NEAR(fs, fr, 0.015) << "column " << j << " at " << q;
    }
  }
  // The released correlation is sin(pi tau / 2) of the data's tau, essentially unchanged.
  EXPECT_LT((gen.correlation() - corr).cwiseAbs().maxCoeff(), 0.03);
  // Deterministic per seed, different for another seed.
  EXPECT_EQ(gen.sample(100, 7), syn.topRows(100));
  EXPECT_NE(gen.sample(100, 8), syn.topRows(100));
}

TEST(DpCopula, NoiseScalesFollowTheSensitivitiesAndTheBudgetSplit) {
  const std::size_t n = 500, m = 4;
  Eigen::MatrixXd corr = Eigen::MatrixXd::Identity(m, m);
  const DenseMatrix data = gaussian_table(n, corr, 9);
  const double eps = 2.0;
  DpCopulaOptions o;
  o.bins = 10;
  o.marginal_ratio = 3.0;  // eps1 = 1.5, eps2 = 0.5
  DpCopula gen(o);
  SeededRandom first(1);
  gen.fit(data, TableBox::uniform(m, -4, 4), {eps, 0}, first);
  const double eps1 = 1.5, eps2 = 0.5;
  // Scales: replace-one L1 sensitivity 2 per histogram, m histograms at eps1 / m; S changes by
  // at most 2 (n - 1), C(m, 2) = 6 coefficients at eps2 / 6. (The discrete Laplace rounds its
  // scale UP to a dyadic rational: never less noise, at most 0.1% more here.)
  const double hist_scale = 2.0 * m / eps1, s_scale = 2.0 * (n - 1) * 6 / eps2;
  EXPECT_GE(gen.histogram_noise_scale(), hist_scale);
  EXPECT_LE(gen.histogram_noise_scale(), hist_scale * 1.001);
  EXPECT_GE(gen.concordance_noise_scale(), s_scale);
  EXPECT_LE(gen.concordance_noise_scale(), s_scale * 1.001);
  const auto rec = gen.privacy_record();
  EXPECT_DOUBLE_EQ(rec.at("budget_split").at("marginals").get<double>() + rec.at("budget_split").at("correlations").get<double>(), eps);
  EXPECT_DOUBLE_EQ(rec.at("kendall_tau_sensitivity").get<double>(), 4.0 / n);
  // Over repeated fits the released counts and concordances spread with the variance of the
  // discrete Laplace of those scales (within 10% over 400 fits x 40 counts / x 6 pairs).
  std::vector<std::int64_t> exact_counts;
  {
    // Exact histogram of column 0 (bins of width 0.8 on [-4, 4]).
    exact_counts.assign(10, 0);
    for (Eigen::Index i = 0; i < data.rows(); ++i)
      ++exact_counts[std::min<std::size_t>(9, static_cast<std::size_t>((data(i, 0) + 4.0) / 0.8))];
  }
  std::vector<double> x0(n), x1(n);
  for (std::size_t i = 0; i < n; ++i) x0[i] = data(static_cast<Eigen::Index>(i), 0), x1[i] = data(static_cast<Eigen::Index>(i), 1);
  const double s01 = static_cast<double>(kendall_concordance(x0, x1));
  double count_ss = 0, s_ss = 0;
  std::size_t count_draws = 0, s_draws = 0;
  for (int rep = 0; rep < 400; ++rep) {
    SeededRandom noise(1000 + static_cast<std::uint64_t>(rep));
    gen.fit(data, TableBox::uniform(m, -4, 4), {eps, 0}, noise);
    for (std::size_t b = 0; b < 10; ++b) {
      const double e = static_cast<double>(gen.noisy_counts()[0][b] - exact_counts[b]);
      count_ss += e * e;
      ++count_draws;
    }
    const double e = gen.noisy_concordance()(0, 1) - s01;
    s_ss += e * e;
    ++s_draws;
  }
  const double hist_var = DiscreteLaplace(gen.histogram_noise_scale()).variance();
  const double s_var = DiscreteLaplace(gen.concordance_noise_scale()).variance();
  EXPECT_NEAR(count_ss / static_cast<double>(count_draws) / hist_var, 1.0, 0.1);
  EXPECT_NEAR(s_ss / static_cast<double>(s_draws) / s_var, 1.0, 0.2);  // 400 draws: sd of the ratio ~0.11
}

// Concordances counted once (exact_concordances) and given to several fits release exactly what
// fits that count their own release; given for another table (a neighbour: one value moved) they
// are refused, never used.
TEST(DpCopula, GivenConcordancesGiveTheFitsOfAFreshCountAndAreRefusedForAnotherTable) {
  Eigen::MatrixXd corr(3, 3);
  corr << 1, 0.5, 0.1, 0.5, 1, -0.4, 0.1, -0.4, 1;
  const DenseMatrix data = gaussian_table(800, corr, 21);
  DenseMatrix other = data;
  other(17, 1) = other(18, 1) + static_cast<Real>(0.25);  // a neighbouring table: one record's value moved
  const auto box = TableBox::uniform(3, -4, 4);
  const auto fitted = [&](const DenseMatrix& table, const DpCopulaOptions& o, double eps, std::uint64_t seed) {
    DpCopula gen(o);
    SeededRandom noise(seed);
    gen.fit(table, box, {eps, 0}, noise);
    return std::make_pair(Eigen::MatrixXd(gen.noisy_concordance()), gen.sample(50, 3));
  };
  DpCopulaOptions given;
  given.concordances = std::make_shared<const ExactConcordances>(exact_concordances(data, box));
  ASSERT_EQ(given.concordances->s.size(), 3u);
  for (const double eps : {0.5, 2.0, 8.0}) {
    const auto plain = fitted(data, {}, eps, 40);
    const auto with_given = fitted(data, given, eps, 40);
    EXPECT_EQ(with_given.first, plain.first) << "eps " << eps;
    EXPECT_EQ(with_given.second, plain.second) << "eps " << eps;
  }
  // At epsilon 10^9 the noise on S is below one pair: the released S is the exact one. The
  // neighbour's differs from the first table's, so the first table's S would show in its release.
  EXPECT_NE(fitted(other, {}, 1e9, 41).first, fitted(data, {}, 1e9, 41).first);
  try {
    fitted(other, given, 1e9, 41);
    FAIL() << "a fit used the concordances of another table";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("counted on another table"), std::string::npos) << e.what();
  }
  DpCopulaOptions given_other;
  given_other.concordances = std::make_shared<const ExactConcordances>(exact_concordances(other, box));
  EXPECT_EQ(fitted(other, given_other, 1e9, 41).first, fitted(other, {}, 1e9, 41).first);
}

TEST(DpCopula, ConstantColumnIsHandledAsIndependent) {
  SeededRandom rng(12);
  DenseMatrix data(5000, 3);
  for (Eigen::Index i = 0; i < data.rows(); ++i) {
    data(i, 0) = static_cast<Real>(rng.unit());
    data(i, 1) = 0.37f;  // constant
    data(i, 2) = data(i, 0) * 0.5f + 0.5f * static_cast<Real>(rng.unit());
  }
  DpCopula gen;
  SeededRandom noise(13);
  gen.fit(data, TableBox::uniform(3, 0, 1), {1e5, 0}, noise);
  EXPECT_TRUE(gen.correlation().allFinite());
  EXPECT_NEAR(gen.correlation()(0, 1), 0.0, 1e-3);
  EXPECT_NEAR(gen.correlation()(1, 2), 0.0, 1e-3);
  EXPECT_GT(gen.correlation()(0, 2), 0.5);
  const DoubleMatrix syn = gen.sample(2000, 14);
  // Every synthetic value of the constant column lies in its bin [0.37, 0.38).
  EXPECT_GE(syn.col(1).minCoeff(), 0.37 - 1e-12);
  EXPECT_LE(syn.col(1).maxCoeff(), 0.38 + 1e-12);
}

TEST(DpCopula, BadInputIsRefusedWithTheValue) {
  const DenseMatrix data = DenseMatrix::Random(100, 2);
  DpCopula gen;
  SeededRandom noise(1);
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { gen.sample(10, 1); }).find("before fit"), std::string::npos);
  EXPECT_NE(message([&] { gen.fit(data, TableBox::uniform(2, -1, 1), {0.0, 0}, noise); }).find("epsilon"), std::string::npos);
  EXPECT_NE(message([&] { gen.fit(data, TableBox::uniform(2, -1, 1), {1.0, 1e-5}, noise); }).find("delta"), std::string::npos);
  EXPECT_NE(message([&] { gen.fit(data, TableBox::uniform(3, -1, 1), {1.0, 0}, noise); }).find("3 lower"), std::string::npos);
  EXPECT_NE(message([&] { gen.fit(data, TableBox::uniform(2, 1, 1), {1.0, 0}, noise); }).find("column 0"), std::string::npos);
  gen.fit(data, TableBox::uniform(2, -1, 1), {1.0, 0}, noise);
  EXPECT_NE(message([&] { gen.sample(0, 1); }).find("synthetic size 0"), std::string::npos);
  EXPECT_NE(message([&] { make_synthetic_generator("gan", {}); }).find("unknown generator 'gan'"), std::string::npos);
}

// ---------------------------------------------------------------- PrivBayes
TEST(PrivBayesGenerator, SamplingIsDeterministicPerSeedAndAnySize) {
  Eigen::MatrixXd corr(3, 3);
  corr << 1, 0.8, 0, 0.8, 1, 0, 0, 0, 1;
  const DenseMatrix data = gaussian_table(5000, corr, 21);
  auto gen = make_synthetic_generator("privbayes", privbayes_options(1, 8));
  SeededRandom noise(22);
  gen->fit(data, TableBox::uniform(3, -4, 4), {1.0, 0}, noise);
  const DoubleMatrix a = gen->sample(777, 5), b = gen->sample(777, 5), c = gen->sample(777, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.rows(), 777);
  EXPECT_EQ(gen->sample(1, 5).rows(), 1);
  EXPECT_EQ(gen->sample(50000, 5).rows(), 50000);
  EXPECT_GE(a.minCoeff(), -4.0);
  EXPECT_LE(a.maxCoeff(), 4.0);
  // The same noise seed releases the same model.
  auto again = make_synthetic_generator("privbayes", privbayes_options(1, 8));
  SeededRandom noise2(22);
  again->fit(data, TableBox::uniform(3, -4, 4), {1.0, 0}, noise2);
  EXPECT_EQ(again->sample(777, 5), a);
  const auto rec = gen->privacy_record();
  EXPECT_DOUBLE_EQ(rec.at("budget_split").at("network").get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(rec.at("budget_split").at("conditionals").get<double>(), 0.7);
  EXPECT_NEAR(rec.at("conditional_noise_scale").get<double>(), 4.0 * 2 / (5000 * 0.7), 1e-15);
  EXPECT_THROW(gen->sample(0, 1), UsageError);
  EXPECT_THROW(gen->fit(data, TableBox::uniform(3, -4, 4), {1.0, 1e-5}, noise), UsageError);
}

TEST(PrivBayesGenerator, LargeEpsilonKeepsTheDependence) {
  Eigen::MatrixXd corr(2, 2);
  corr << 1, 0.9, 0.9, 1;
  const DenseMatrix data = gaussian_table(20000, corr, 31);
  auto gen = make_synthetic_generator("privbayes", privbayes_options(1, 32));
  SeededRandom noise(32);
  gen->fit(data, TableBox::uniform(2, -5, 5), {1e5, 0}, noise);
  const DoubleMatrix syn = gen->sample(20000, 33);
  // Bins of width 10/32 add uniform jitter (variance 0.008): correlation 0.9 -> ~0.89.
  EXPECT_NEAR(pearson(syn)(0, 1), 0.9, 0.03);
  EXPECT_LT((column_means(syn) - column_means(data.cast<double>())).cwiseAbs().maxCoeff(), 0.03);
}

}  // namespace
}  // namespace privrace::baselines
