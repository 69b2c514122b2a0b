// PrivBayes' fast paths against their definitions: the sparse mutual information equals the
// dense-joint computation, the noisy conditionals keep the discrete Laplace law on every cell
// (zero cells included, clipped at 0), and sampling is deterministic per seed for any thread
// count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "privrace/baselines/privbayes.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

// Correlated columns in [0, 1): column j mixes column j-1 with fresh noise.
DenseMatrix correlated_table(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom g(seed);
  DenseMatrix t(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < t.rows(); ++i) {
    double prev = g.unit();
    for (Eigen::Index j = 0; j < t.cols(); ++j) {
      const double v = j == 0 ? prev : std::fmod(0.7 * prev + 0.5 * g.unit() * g.unit(), 1.0);
      t(i, j) = static_cast<Real>(std::min(v, 0.999999));
      prev = v;
    }
  }
  return t;
}

// The mutual information over the dense joint, as the original implementation summed it.
double dense_mi(const PrivBayes& pb, int x, const std::vector<int>& parents, std::size_t bins, std::size_t n_rows) {
  const std::vector<double> joint = pb.joint_counts(x, parents);
  const std::size_t b = bins, np = joint.size() / b;
  std::vector<double> px(b, 0.0), pp(np, 0.0);
  for (std::size_t p = 0; p < np; ++p)
    for (std::size_t v = 0; v < b; ++v) px[v] += joint[p * b + v], pp[p] += joint[p * b + v];
  const double n = static_cast<double>(n_rows);
  double mi = 0;
  for (std::size_t p = 0; p < np; ++p)
    for (std::size_t v = 0; v < b; ++v) {
      const double c = joint[p * b + v];
      if (c > 0) mi += c / n * std::log2(c * n / (px[v] * pp[p]));
    }
  return mi;
}

TEST(PrivBayesFast, SparseMutualInformationEqualsDense) {
  // bins 4 (counted directly), 16 with up to 4 parents (16^5 cells > n: the radix-sort path).
  for (const int bins : {4, 16}) {
    const std::size_t n = 3000, d = 6;
    const DenseMatrix t = correlated_table(n, d, 5 + static_cast<std::uint64_t>(bins));
    PrivBayesOptions o;
    o.degree = 4;
    o.bins = bins;
    const PrivBayes pb(t, TableBox::uniform(d, 0, 1), o);
    const std::vector<std::vector<int>> parent_sets = {{}, {0}, {1, 3}, {0, 2, 4}, {0, 1, 2, 3}, {1, 2, 3, 4}};
    for (const auto& ps : parent_sets)
      for (int x = 0; x < static_cast<int>(d); ++x) {
        if (std::find(ps.begin(), ps.end(), x) != ps.end()) continue;
        const double dense = dense_mi(pb, x, ps, static_cast<std::size_t>(bins), n);
        const double sparse = pb.mutual_information(x, ps);
        EXPECT_NEAR(sparse, dense, 1e-12) << "bins " << bins << " x " << x << " |parents| " << ps.size();
      }
  }
}

TEST(PrivBayesFast, NoiseFreeDistributionsAreTheJointCounts) {
  const std::size_t n = 2000, d = 4;
  const DenseMatrix t = correlated_table(n, d, 11);
  PrivBayesOptions o;
  o.degree = 2;
  o.bins = 8;
  const PrivBayes pb(t, TableBox::uniform(d, 0, 1), o);
  const PrivBayesModel m = pb.fit(1.0, nullptr);
  for (std::size_t i = m.first(); i < d; ++i) {
    const std::vector<double> joint = pb.joint_counts(m.network().order[i], m.distribution_parents(i));
    const std::span<const double> p = m.distribution(i);
    ASSERT_EQ(p.size(), joint.size());
    for (std::size_t c = 0; c < p.size(); ++c) ASSERT_EQ(p[c], joint[c] / static_cast<double>(n));
  }
}

// Chi-square of the noisy values of cells whose true count is 0 against max(Z, 0), Z discrete
// Laplace of the mechanism's scale: P(0) = P(Z <= 0), P(y) = pmf(y) for y > 0.
double chi_square_zero_cells(const std::vector<double>& values, const DiscreteLaplace& z, std::size_t& samples) {
  constexpr int kTop = 30;  // values 0..kTop-1 one by one, the rest together
  std::vector<double> seen(kTop + 1, 0.0);
  samples = values.size();
  for (const double v : values) ++seen[static_cast<std::size_t>(std::min<double>(v, kTop))];
  std::vector<double> prob(kTop + 1, 0.0);
  double below = 0.5 + 0.5 * z.pmf(0);  // P(Z <= 0)
  prob[0] = below;
  double acc = below;
  for (int y = 1; y < kTop; ++y) acc += (prob[static_cast<std::size_t>(y)] = z.pmf(y));
  prob[kTop] = 1 - acc;
  double chi = 0;
  for (std::size_t i = 0; i <= kTop; ++i) {
    const double e = prob[i] * static_cast<double>(samples);
    chi += (seen[i] - e) * (seen[i] - e) / e;
  }
  return chi;
}

TEST(PrivBayesFast, NoisyConditionalsKeepTheDiscreteLaplaceLaw) {
  // d = 2, k = 1: one distribution (the joint), noise scale 4 / (0.7 eps) counts per cell. All
  // rows fall in one cell, so every other cell's released count is max(Z, 0).
  const std::size_t n = 500;
  DenseMatrix t = DenseMatrix::Zero(static_cast<Eigen::Index>(n), 2);
  for (const int bins : {16, 512}) {  // 256 cells (one draw at a time), 262,144 (the table sampler)
    PrivBayesOptions o;
    o.degree = 1;
    o.bins = bins;
    const PrivBayes pb(t, TableBox::uniform(2, 0, 1), o);
    const double eps = 1.0;
    const DiscreteLaplace z(pb.conditional_noise_scale(eps) * static_cast<double>(n));
    std::vector<double> zero_cells;
    double shift_sum = 0, shift_sq = 0;
    int fits = 0;
    for (std::uint64_t seed = 1; zero_cells.size() < 200000; ++seed, ++fits) {
      SeededRandom rng(seed);
      const PrivBayesModel m = pb.fit(eps, &rng);
      const std::span<const double> p = m.distribution(m.first());
      ASSERT_EQ(p.size(), static_cast<std::size_t>(bins * bins));
      for (std::size_t c = 1; c < p.size(); ++c) zero_cells.push_back(std::round(p[c] * static_cast<double>(n)));
      const double noise = std::round(p[0] * static_cast<double>(n)) - static_cast<double>(n);  // n >> scale: never clipped
      shift_sum += noise;
      shift_sq += noise * noise;
    }
    std::size_t samples = 0;
    const double chi = chi_square_zero_cells(zero_cells, z, samples);
    EXPECT_LT(chi, 80.0) << "bins " << bins << ", " << samples << " zero cells (30 degrees of freedom)";
    // The one occupied cell: mean 0, variance 2a / (1 - a)^2 (bins 16: ~800 fits; bins 512: one).
    if (fits < 100) continue;
    const double mean = shift_sum / fits;
    EXPECT_LT(std::abs(mean), 6 * std::sqrt(z.variance() / fits)) << "bins " << bins;
    EXPECT_GT(shift_sq / fits, 0.3 * z.variance());
    EXPECT_LT(shift_sq / fits, 3.0 * z.variance());
  }
}

TEST(PrivBayesFast, ConcurrentFitsOnOneObjectEqualSerialFits) {
  // The two-job runner shares one PrivBayes (its table and score cache) between jobs, so fits
  // run concurrently on one object, each filling the cache. Their networks and conditionals
  // must equal those of fits made one at a time on a fresh object. (Under TSan,
  // PRIVRACE_SANITIZE=thread scripts/test.sh, this also checks the cache's locking.)
  const std::size_t n = 3000, d = 6;
  const DenseMatrix t = correlated_table(n, d, 33);
  PrivBayesOptions o;
  o.degree = 2;
  o.bins = 8;
  const double eps[] = {0.5, 1.0, 2.0, 4.0};
  std::vector<PrivBayesModel> serial;
  {
    const PrivBayes pb(t, TableBox::uniform(d, 0, 1), o);
    for (int j = 0; j < 4; ++j) {
      SeededRandom r(100 + static_cast<std::uint64_t>(j));
      serial.push_back(pb.fit(eps[j], &r));
    }
  }
  const PrivBayes shared(t, TableBox::uniform(d, 0, 1), o);
  std::vector<PrivBayesModel> concurrent(4, serial[0]);
#ifdef _OPENMP
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);  // each fit single-threaded, as in a job of a two-job run
#endif
#pragma omp parallel for num_threads(4) schedule(static, 1)
  for (int j = 0; j < 4; ++j) {
    SeededRandom r(100 + static_cast<std::uint64_t>(j));
    concurrent[static_cast<std::size_t>(j)] = shared.fit(eps[j], &r);
  }
#ifdef _OPENMP
  omp_set_num_threads(before);
#endif
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(concurrent[j].network().order, serial[j].network().order) << "fit " << j;
    EXPECT_EQ(concurrent[j].network().parents, serial[j].network().parents) << "fit " << j;
    for (std::size_t i = serial[j].first(); i < d; ++i)
      EXPECT_TRUE(std::ranges::equal(concurrent[j].distribution(i), serial[j].distribution(i))) << "fit " << j;
  }
  EXPECT_GT(shared.score_evaluations(), 0u);
}

TEST(PrivBayesFast, SamplingIsDeterministicPerSeedForAnyThreadCount) {
  const std::size_t n = 4000, d = 5;
  const DenseMatrix t = correlated_table(n, d, 21);
  PrivBayesOptions o;
  o.degree = 2;
  o.bins = 16;
  const PrivBayes pb(t, TableBox::uniform(d, 0, 1), o);
  SeededRandom noise(3);
  const PrivBayesModel m = pb.fit(2.0, &noise);
  const std::size_t rows = 20000;  // several sampling blocks
  auto sample_with = [&](int threads, std::uint64_t seed) {
#ifdef _OPENMP
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    SeededRandom s(seed);
    DoubleMatrix out = m.sample(rows, s);
#ifdef _OPENMP
    omp_set_num_threads(before);
#endif
    return out;
  };
  const DoubleMatrix a = sample_with(1, 9), b = sample_with(2, 9), c = sample_with(3, 9), e = sample_with(2, 10);
  ASSERT_EQ(a.rows(), static_cast<Eigen::Index>(rows));
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == c);
  EXPECT_FALSE(a == e);
  // The seeded fit is reproducible too (network and noise from the same stream).
  SeededRandom noise2(3);
  const PrivBayesModel m2 = pb.fit(2.0, &noise2);
  EXPECT_EQ(m2.network().order, m.network().order);
  EXPECT_EQ(m2.network().parents, m.network().parents);
  for (std::size_t i = m.first(); i < d; ++i) EXPECT_TRUE(std::ranges::equal(m2.distribution(i), m.distribution(i)));
  // Sampled marginals follow the model: the first attribute's bin frequencies vs its distribution.
  const int x0 = m.network().order[0];
  std::vector<double> freq(16, 0.0), model_freq(16, 0.0);
  for (Eigen::Index r = 0; r < a.rows(); ++r) ++freq[static_cast<std::size_t>(std::min(15.0, a(r, x0) * 16))];
  const std::span<const double> joint = m.distribution(m.first());
  double total = 0;
  for (double v : joint) total += v;
  std::size_t stride = 1;
  for (std::size_t i = 0; i < m.first(); ++i) stride *= 16;  // order[0] is the slowest index of the joint
  for (std::size_t c = 0; c < joint.size(); ++c) model_freq[c / stride] += joint[c] / total;
  for (std::size_t v = 0; v < 16; ++v)
    EXPECT_NEAR(freq[v] / static_cast<double>(rows), model_freq[v], 0.015) << "bin " << v;
}

}  // namespace
}  // namespace privrace::baselines
