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
    const std::vector<double> p = m.distribution(i);
    ASSERT_EQ(p.size(), joint.size());
    for (std::size_t c = 0; c < p.size(); ++c) ASSERT_EQ(p[c], joint[c] / static_cast<double>(n));
  }
}

// The scores the greedy search computes (grouped by parent set, from the parents' cell index
// formed once; four interleaved histograms for joints up to 4096 cells) and caches (in the flat
// cache indexed by the parent set's rank) equal, bit for bit, the score of one (x, parent set)
// computed alone from its sparse joint (as the former search computed every score), for every
// (x, parent set) a search can meet: the same scores, so the same networks. Both are within
// 1e-12 of the dense sum (written here, compiled with other contractions into FMAs).
TEST(PrivBayesFast, GroupedCachedScoresEqualDense) {
  struct Shape {
    int bins, degree;
    std::size_t d;
  };
  // 4 bins k 2 (64 cells: four histograms), 16 bins k 2 (4096), 16 bins k 3 (65536: one
  // histogram), 16 bins k 4 (16^5 > n: sorted one by one), 3 bins k 5 (d 9: small cells).
  for (const Shape sh : {Shape{4, 2, 7}, Shape{16, 2, 6}, Shape{16, 3, 6}, Shape{16, 4, 6}, Shape{3, 5, 9}}) {
    const std::size_t n = 2503;  // not a multiple of 4: the histograms' tail
    const DenseMatrix t = correlated_table(n, sh.d, 40 + static_cast<std::uint64_t>(sh.bins * 10 + sh.degree));
    PrivBayesOptions o;
    o.degree = sh.degree;
    o.bins = sh.bins;
    const PrivBayes pb(t, TableBox::uniform(sh.d, 0, 1), o);
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {  // random first attributes and choices
      SeededRandom r(seed);
      pb.fit(0.5 * static_cast<double>(seed), &r);
    }
    pb.fit(1.0, nullptr);
    const std::size_t computed = pb.score_evaluations();
    ASSERT_GT(computed, sh.d);
    // Every ascending parent set of size min(k, |V|) - here all of size <= k - and every x
    // outside it: the cached ones (the greedy search's) and the rest (computed one at a time).
    std::vector<std::vector<int>> sets = {{}};
    for (std::size_t size = 1; size <= static_cast<std::size_t>(sh.degree); ++size) {
      std::vector<std::vector<int>> next;
      for (const auto& s : sets)
        if (s.size() == size - 1)
          for (int a = s.empty() ? 0 : s.back() + 1; a < static_cast<int>(sh.d); ++a) {
            next.push_back(s);
            next.back().push_back(a);
          }
      sets.insert(sets.end(), next.begin(), next.end());
    }
    const PrivBayes alone(t, TableBox::uniform(sh.d, 0, 1), o);  // empty cache: every score alone
    for (const auto& ps : sets)
      for (int x = 0; x < static_cast<int>(sh.d); ++x) {
        if (std::find(ps.begin(), ps.end(), x) != ps.end()) continue;
        const double cached = pb.mutual_information(x, ps);
        ASSERT_EQ(cached, alone.mutual_information(x, ps))
            << "bins " << sh.bins << " k " << sh.degree << " x " << x << " |parents| " << ps.size();
        ASSERT_NEAR(cached, dense_mi(pb, x, ps, static_cast<std::size_t>(sh.bins), n), 1e-12);
      }
    EXPECT_GT(pb.score_evaluations(), computed);  // some were not cached: both paths checked
    // An unsorted parent set is its own key (its joint sums in another order).
    const std::vector<int> rev = {2, 0};
    EXPECT_EQ(pb.mutual_information(1, rev), alone.mutual_information(1, rev));
  }
}

// The former sampler, written from the model's public accessors: the joint's cell by
// std::upper_bound over the running sums of all its frequencies, then each attribute by inversion
// of its conditional slice, blocks of 4096 rows from streams derived from one sampler word.
DoubleMatrix reference_sample(const PrivBayesModel& m, std::size_t bins, std::size_t rows, RandomSource& sampler) {
  const auto draw = [](const double* p, std::size_t len, RandomSource& rng) -> std::size_t {
    double total = 0;
    for (std::size_t i = 0; i < len; ++i) total += p[i];
    if (!(total > 0)) return static_cast<std::size_t>(rng.below(len));
    double u = rng.unit() * total;
    for (std::size_t i = 0; i < len; ++i) {
      if (u < p[i]) return i;
      u -= p[i];
    }
    return len - 1;
  };
  const PrivBayesNetwork& net = m.network();
  const std::size_t d = net.order.size(), b = bins, i0 = m.first();
  std::vector<std::vector<double>> dist(d);
  for (std::size_t i = i0; i < d; ++i) dist[i] = m.distribution(i);
  const std::vector<double>& joint = dist[i0];
  std::vector<double> cdf(joint.size());
  double run = 0;
  for (std::size_t c = 0; c < joint.size(); ++c) cdf[c] = (run += joint[c]);
  DoubleMatrix out(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
  const std::uint64_t base = sampler.next();
  std::vector<std::size_t> bin(d);
  for (std::size_t blk = 0; blk * 4096 < rows; ++blk) {
    SeededRandom rng(derive_seed(base, blk));
    for (std::size_t s = blk * 4096; s < std::min(rows, (blk + 1) * 4096); ++s) {
      std::size_t cell;
      if (!(run > 0)) {
        cell = static_cast<std::size_t>(rng.below(joint.size()));
      } else {
        const double u = rng.unit() * run;
        cell = std::min<std::size_t>(static_cast<std::size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()),
                                     joint.size() - 1);
      }
      for (std::size_t i = i0 + 1; i-- > 0;) {
        bin[static_cast<std::size_t>(net.order[i])] = cell % b;
        cell /= b;
      }
      for (std::size_t i = i0 + 1; i < d; ++i) {
        std::size_t idx = 0;
        for (int p : m.distribution_parents(i)) idx = idx * b + bin[static_cast<std::size_t>(p)];
        bin[static_cast<std::size_t>(net.order[i])] = draw(&dist[i][idx * b], b, rng);
      }
      for (std::size_t j = 0; j < d; ++j)
        out(static_cast<Eigen::Index>(s), static_cast<Eigen::Index>(j)) = (static_cast<double>(bin[j]) + rng.unit()) / static_cast<double>(b);
    }
  }
  return out;
}

TEST(PrivBayesFast, SamplingEqualsTheFullRunningSumInversion) {
  // Joints of 8^4 = 4096 cells (64 blocks of running sums) and 16^4 = 65536 with heavy noise
  // (many clipped cells, u in every part of the table), and the exact model; rows span blocks.
  struct Case {
    int bins;
    double eps;  // 0: no noise
  };
  for (const Case cs : {Case{8, 0.0}, Case{8, 0.05}, Case{16, 1.0}, Case{16, 1e-3}}) {
    const std::size_t n = 3000, d = 6;
    const DenseMatrix t = correlated_table(n, d, 77);
    PrivBayesOptions o;
    o.degree = 3;
    o.bins = cs.bins;
    const PrivBayes pb(t, TableBox::uniform(d, 0, 1), o);
    SeededRandom noise(5);
    const PrivBayesModel m = cs.eps > 0 ? pb.fit(cs.eps, &noise) : pb.fit(1.0, nullptr);
    SeededRandom s1(99), s2(99);
    const DoubleMatrix fast = m.sample(9000, s1);
    const DoubleMatrix ref = reference_sample(m, static_cast<std::size_t>(cs.bins), 9000, s2);
    EXPECT_TRUE(fast == ref) << "bins " << cs.bins << " eps " << cs.eps;
    EXPECT_EQ(s1.next(), s2.next());
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
      const std::vector<double> p = m.distribution(m.first());
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
  const std::vector<double> joint = m.distribution(m.first());
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
