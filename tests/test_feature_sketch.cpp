// Private feature-map sketches (RFF, HIST, RACE) for M2M: exact sums, thread invariance, the
// noise scale of each mechanism, the budget split in the header, files and merges, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "privrace/core/error.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

using namespace privrace;
namespace fs = std::filesystem;

namespace {
DenseMatrix uniform_points(std::size_t n, std::size_t d, std::uint64_t seed, float lo = 0.0f, float hi = 1.0f) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = lo + (hi - lo) * static_cast<float>(rng.unit());
  return x;
}
FeatureSketchSpec rff_spec(std::size_t m = 20) {
  FeatureSketchSpec s;
  s.kind = "rff";
  s.features = m;
  s.sigma = 1.0;
  s.seed = 11;
  return s;
}
FeatureSketchSpec hist_spec(std::size_t bins = 10) {
  FeatureSketchSpec s;
  s.kind = "hist";
  s.bins = bins;
  s.lo = {0.0};
  s.hi = {1.0};
  s.seed = 12;
  return s;
}
FeatureSketchSpec race_spec() {
  FeatureSketchSpec s;
  s.kind = "race";
  s.rows = 8;
  s.width = 16;
  s.bandwidth = 0.5;
  s.seed = 13;
  return s;
}
}  // namespace

TEST(FeatureSketch, RffSumsMatchTheQuantisedFeatures) {
  const DenseMatrix x = uniform_points(500, 3, 1);
  const auto sums = build_feature_sums(x, rff_spec(8), 1);
  EXPECT_EQ(sums->records(), 500);
  DoubleMatrix phi;
  sums->map().features(x, phi);
  const Eigen::VectorXd exact = phi.colwise().sum().transpose();
  const Eigen::VectorXd got = sums->sums();
  ASSERT_EQ(got.size(), 8);
  // Each record's feature is rounded to the grid 2^-20 (error <= 2^-21 each) and float cos/sin
  // are within ~1e-6 of the double ones.
  for (Eigen::Index j = 0; j < 8; ++j) EXPECT_NEAR(got[j], exact[j], 500 * 3e-6) << j;
}

TEST(FeatureSketch, SumsIdenticalOnOneTwoThreeThreads) {
  const DenseMatrix x = uniform_points(20000, 5, 2);
  for (const auto& spec : {rff_spec(40), hist_spec(), race_spec()}) {
    const auto one = build_feature_sums(x, spec, 1);
    for (int t : {2, 3}) {
      const auto many = build_feature_sums(x, spec, t);
      ASSERT_EQ(one->sketch().counts().size(), many->sketch().counts().size());
      EXPECT_TRUE(std::equal(one->sketch().counts().begin(), one->sketch().counts().end(),
                             many->sketch().counts().begin()))
          << spec.kind << " on " << t << " threads";
      EXPECT_EQ(many->records(), 20000);
    }
  }
}

TEST(FeatureSketch, RffNoiseVarianceMatchesTheRecordAndTheDraws) {
  const DenseMatrix x = uniform_points(1000, 4, 3);
  const auto sums = build_feature_sums(x, rff_spec(20), 2);
  FeatureSketchPrivacy priv;
  priv.epsilon = 2.0;
  const Eigen::VectorXd exact = sums->sums();
  double sq = 0.0;
  std::size_t draws = 0;
  FeatureSketchRelease rel;
  for (std::uint64_t s = 0; s < 400; ++s) {
    rel = release_feature_sketch(*sums, priv, NoiseSource{true, 1000 + s});
    sq += (rel.sums - exact).squaredNorm();
    draws += static_cast<std::size_t>(exact.size());
  }
  // Discrete Laplace of scale Delta_1 / eps_num: variance ~ 2 (m' (sqrt 2 + 2^-20) / (0.98 eps))^2.
  const double b = 10.0 * (std::sqrt(2.0) + 1.0 / 1048576.0) / (0.98 * 2.0);
  EXPECT_NEAR(rel.noise_variance, 2.0 * b * b, 1e-3 * 2.0 * b * b);
  EXPECT_NEAR(sq / static_cast<double>(draws), rel.noise_variance, 0.1 * rel.noise_variance);
  EXPECT_DOUBLE_EQ(rel.epsilon_num + rel.epsilon_den, 2.0);
  EXPECT_NEAR(rel.epsilon_num, 1.96, 1e-12);
  EXPECT_TRUE(rel.is_private);
}
