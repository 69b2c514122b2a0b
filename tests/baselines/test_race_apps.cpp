// Section-4 applications of the private RACE sketch: mode finding, anomaly detection,
// diversity sampling and near-neighbour search (tasks/race_apps.hpp).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <map>

#include "privrace/core/error.hpp"
#include "privrace/baselines/histogram.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/tasks/race_apps.hpp"
#include "test_util.hpp"

namespace privrace {
namespace {

MixtureSpec three_components() {
  MixtureSpec s;
  s.dim = 2;
  s.components = 3;
  s.sd = 1.0;
  s.box = 20.0;
  s.min_separation = 8.0;
  s.seed = 7;
  return s;
}

RaceSketch exact_sketch(const DenseMatrix& x, double bandwidth, std::size_t rows, std::uint64_t seed) {
  FamilySpec fs;
  fs.kernel = Kernel::L2;
  fs.bandwidth = bandwidth;
  fs.rows = rows;
  fs.dim = static_cast<std::size_t>(x.cols());
  fs.seed = seed;
  RaceSketch sketch(make_family(fs), 1000);
  build_dense(sketch, x);
  return sketch;
}

SearchBox box_of(const MixtureSpec& s) {
  return SearchBox{std::vector<double>(s.dim, -4 * s.sd), std::vector<double>(s.dim, s.box + 4 * s.sd)};
}

TEST(Modes, ExactKdeRecoversPlantedModesWithinATenthOfTheBandwidth) {
  const MixtureSpec spec = three_components();
  const Mixture mix = sample_mixture(spec, 30000);
  const KernelSpec kernel{Kernel::L2, 2.0, 1};
  const ExactKde kde(mix.points, kernel);
  ModeSearchOptions o;
  o.modes = 3;
  o.starts = 16;
  o.grid = 12;
  o.initial_step = kernel.bandwidth;
  o.x_tolerance = 1e-3;
  o.min_separation = 2 * kernel.bandwidth;
  const auto res = find_modes([&](const DenseRef& p) { return kde(p); }, box_of(spec), o);
  ASSERT_EQ(res.modes.size(), 3u);
  const ModeMatch m = match_modes(res.modes, mix.means, 0.1 * kernel.bandwidth);
  EXPECT_EQ(m.recovered, 3u);
  EXPECT_LT(m.max_distance, 0.1 * kernel.bandwidth);
}

TEST(Modes, RaceOnExactCountsRecoversPlantedModes) {
  // epsilon = infinity: the sketch's own LSH sampling error only (R = 400 rows).
  const MixtureSpec spec = three_components();
  const Mixture mix = sample_mixture(spec, 30000);
  const RaceSketch sketch = exact_sketch(mix.points, 2.0, 400, 11);
  const RaceDensity f(sketch);
  ModeSearchOptions o;
  o.modes = 3;
  o.starts = 16;
  o.grid = 12;
  o.initial_step = 2.0;
  o.min_separation = 4.0;
  const auto res = find_modes([&](const DenseRef& p) { return f(p); }, box_of(spec), o);
  const ModeMatch m = match_modes(res.modes, mix.means, 0.5 * 2.0);
  EXPECT_EQ(m.recovered, 3u);
  EXPECT_LT(m.max_distance, 0.5 * 2.0);
}

TEST(Modes, ResultDoesNotDependOnTheThreadCount) {
  const MixtureSpec spec = three_components();
  const Mixture mix = sample_mixture(spec, 3000);
  const ExactKde kde(mix.points, KernelSpec{Kernel::L2, 2.0, 1});
  ModeSearchOptions o;
  o.starts = 8;
  o.initial_step = 2.0;
  o.min_separation = 4.0;
  const auto f = [&](const DenseRef& p) { return kde(p); };
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = find_modes(f, box_of(spec), o);
  omp_set_num_threads(3);
  const auto three = find_modes(f, box_of(spec), o);
  omp_set_num_threads(saved);
  ASSERT_EQ(one.modes.size(), three.modes.size());
  for (std::size_t i = 0; i < one.modes.size(); ++i) {
    EXPECT_EQ(one.modes[i].point, three.modes[i].point);
    EXPECT_EQ(one.modes[i].density, three.modes[i].density);
  }
  EXPECT_EQ(one.evaluations, three.evaluations);
}

TEST(Modes, BadInputIsRefused) {
  const auto f = [](const DenseRef& p) { return std::vector<double>(static_cast<std::size_t>(p.rows()), 1.0); };
  ModeSearchOptions o;
  o.modes = 0;
  try {
    find_modes(f, SearchBox{{0, 0}, {1, 1}}, o);
    FAIL() << "k = 0 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("k = 0"), std::string::npos) << e.what();
  }
  o.modes = 2;
  try {
    find_modes(f, SearchBox{{0, 3}, {1, 3}}, o);  // coordinate 2 is [3, 3]: empty
    FAIL() << "empty box accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("coordinate 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(find_modes(f, SearchBox{{0, 1}, {1, 0}}, o), UsageError);  // lower > upper
  EXPECT_THROW(find_modes(f, SearchBox{{0}, {1, 1}}, o), UsageError);     // dimensions differ
  EXPECT_THROW(find_modes(f, SearchBox{{0, 0}, {1, std::nan("")}}, o), UsageError);
}

// The ROC AUC itself (ties, one-class rule): tests/experiments/test_metrics.cpp.

TEST(Anomaly, PlantedOutliersScoreAbove095AtInfiniteEpsilon) {
  MixtureSpec spec = three_components();
  const Mixture mix = sample_mixture(spec, 6000);
  const SearchBox box = box_of(spec);
  SeededRandom rng(3);
  DenseMatrix test(600, 2);
  std::vector<int> anomalous;
  for (Eigen::Index i = 0; i < 600; ++i) {
    if (i < 60) {  // planted outliers, uniform in the box
      for (Eigen::Index j = 0; j < 2; ++j)
        test(i, j) = static_cast<Real>(box.lower[0] + rng.unit() * (box.upper[0] - box.lower[0]));
      anomalous.push_back(1);
    } else {
      test.row(i) = mix.points.row(i);  // normal points (also in the sketch: unsupervised)
      anomalous.push_back(0);
    }
  }
  const RaceSketch sketch = exact_sketch(mix.points, 2.0, 200, 5);
  const RaceDensity race(sketch);
  const ExactKde exact(mix.points, KernelSpec{Kernel::L2, 2.0, 1});
  for (const auto& f : {DensityFunction([&](const DenseRef& q) { return race(q); }),
                        DensityFunction([&](const DenseRef& q) { return exact(q); })}) {
    auto score = f(test);
    for (auto& s : score) s = -s;
    EXPECT_GT(privrace::testing::reference_auc(score, anomalous), 0.95);
  }
}

TEST(Diversity, InverseDensityCoversMoreComponentsThanUniformAtInfiniteEpsilon) {
  MixtureSpec spec;
  spec.dim = 2;
  spec.components = 8;
  for (int c = 0; c < 8; ++c) spec.weights.push_back(std::pow(0.5, c));  // 1, 1/2, ..., 1/128
  spec.box = 40;
  spec.min_separation = 8;
  spec.seed = 9;
  const Mixture mix = sample_mixture(spec, 20000);
  const RaceSketch sketch = exact_sketch(mix.points, 2.0, 200, 13);
  const auto density = RaceDensity(sketch)(mix.points);
  const std::vector<double> ones(density.size(), 1.0);
  double race = 0, uniform = 0;
  for (std::uint64_t t = 0; t < 100; ++t) {
    SeededRandom a(derive_seed(21, t)), b(derive_seed(22, t));
    race += component_coverage(inverse_density_sample(density, 10, 1e-4, a), mix.labels, 8);
    uniform += component_coverage(inverse_density_sample(ones, 10, 1e-4, b), mix.labels, 8);
  }
  // Measured 0.60 vs 0.46 (sd of each mean about 0.01).
  EXPECT_GT(race / 100, uniform / 100 + 0.08) << race / 100 << " vs " << uniform / 100;
}

TEST(Diversity, FirstDrawFollowsInverseDensity) {
  // One draw from weights 1/f with f = (1, 2, 4): probabilities (4, 2, 1) / 7, chi-square.
  const std::vector<double> f = {1, 2, 4};
  std::map<long long, long long> counts;
  const long long n = 70000;
  SeededRandom rng(5);
  for (long long t = 0; t < n; ++t) ++counts[static_cast<long long>(inverse_density_sample(f, 1, 1e-9, rng)[0])];
  const auto [stat, df] = testing::chi_square(counts, [](long long k) { return (k == 0 ? 4.0 : k == 1 ? 2.0 : 1.0) / 7.0; }, 0, 2, n);
  EXPECT_LE(df, 3.0);      // 3 bins (+ an empty tail bin)
  EXPECT_LT(stat, 16.3);  // chi-square(3) 0.999 quantile
  // Without replacement: k = n returns a permutation; the floor replaces f <= 0.
  SeededRandom r2(6);
  auto all = inverse_density_sample(std::vector<double>{-1.0, 0.0, 3.0}, 3, 0.5, r2);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_THROW(inverse_density_sample(f, 4, 1e-9, r2), UsageError);
  EXPECT_THROW(inverse_density_sample(f, 1, 0.0, r2), UsageError);
}

TEST(Neighbors, CollisionRankingFindsNeighboursAndRecallIsExact) {
  const Mixture mix = sample_mixture(three_components(), 3000);
  const DenseMatrix queries = mix.points.topRows(20);
  const DenseMatrix candidates = mix.points.bottomRows(2980);
  const auto truth = exact_neighbors(candidates, queries, 10);
  EXPECT_DOUBLE_EQ(recall_at_k(truth, truth), 1.0);
  const RaceSketch sketch = exact_sketch(candidates, 0.5, 300, 17);
  const auto s = sketch_neighbors(sketch, candidates, queries, 10);
  // Random top-10 of 2980 has expected recall 10/2980; collisions with R = 300 do far better.
  EXPECT_GT(recall_at_k(s.by_collisions, truth), 0.3);
  EXPECT_EQ(s.by_weighted.size(), 20u);
  // exact_neighbors: the query itself, when it is a candidate, comes first.
  const auto self = exact_neighbors(candidates, candidates.topRows(5), 1);
  for (std::size_t q = 0; q < 5; ++q) EXPECT_EQ(self[q][0], q);
}

TEST(Densities, ExactKdeMatchesTheTaskGroundTruthAndHistogramCellsMatchItsCounts) {
  Mixture mix = sample_mixture(three_components(), 2000);
  mix.points.bottomRows(500) = mix.points.topRows(500);  // duplicates are merged with weights
  const DenseMatrix queries = mix.points.middleRows(700, 50);
  const KernelSpec kernel{Kernel::L2, 2.0, 2};
  const auto truth = exact_kernel_sums(mix.points, queries, kernel);
  const auto mine = ExactKde(mix.points, kernel)(queries);
  for (std::size_t j = 0; j < mine.size(); ++j) EXPECT_NEAR(mine[j], truth[j] / 2000.0, 1e-9 * (1 + truth[j] / 2000.0));
  EXPECT_EQ(ExactKde(mix.points, kernel).distinct_rows(), 1500u);
  EXPECT_THROW(ExactKde(mix.points, KernelSpec{Kernel::Angular, 1.0, 1}), UsageError);
  // cell_of places every row where the histogram counted it.
  const baselines::HistogramRelease hist(mix.points, baselines::Domain{-4, 24}, 6);
  std::vector<std::int64_t> counts(hist.cells(), 0);
  for (Eigen::Index i = 0; i < mix.points.rows(); ++i) ++counts[hist.cell_of(mix.points, i)];
  EXPECT_EQ(counts, hist.counts());
}

TEST(Mixture, MeansAreSeparatedAndLabelsMatchWeights) {
  MixtureSpec s = three_components();
  s.weights = {2, 1, 1};
  const Mixture m = sample_mixture(s, 40000);
  for (Eigen::Index a = 0; a < 3; ++a)
    for (Eigen::Index b = a + 1; b < 3; ++b) EXPECT_GE((m.means.row(a) - m.means.row(b)).norm(), 8.0);
  std::size_t first = 0;
  for (const int l : m.labels) first += l == 0;
  EXPECT_NEAR(static_cast<double>(first) / 40000, 0.5, 0.01);
  s.min_separation = 100;  // impossible in [0, 20]^2
  EXPECT_THROW(sample_mixture(s, 10), UsageError);
}

}  // namespace
}  // namespace privrace
