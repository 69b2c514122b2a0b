// experiments/metrics.hpp: the one mean relative error and the one ROC AUC of the experiments,
// on hand-computed values, with the zero-truth and one-class rules.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "metrics.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "test_util.hpp"

using namespace privrace;
using privrace::experiments::mean_relative_error;
using privrace::experiments::roc_auc;

namespace {
using V = std::vector<double>;
using L = std::vector<int>;
}  // namespace

TEST(MeanRelativeError, HandComputedValues) {
  // |1.5 - 1| / 1, |2 - 2| / 2, |2 - 4| / 4.
  EXPECT_DOUBLE_EQ(mean_relative_error(V{1.5, 2, 2}, V{1, 2, 4}), (0.5 + 0 + 0.5) / 3);
  // |1.5 - 1| / 1, |2 - 4| / 4, |0 - 2| / 2.
  EXPECT_DOUBLE_EQ(mean_relative_error(V{1.5, 2, 0}, V{1, 4, 2}), (0.5 + 0.5 + 1.0) / 3);
  // The divisor is |truth|: |-3 - (-2)| / 2.
  EXPECT_DOUBLE_EQ(mean_relative_error(V{-3}, V{-2}), 0.5);
  // Eigen vectors go through the same definition.
  Eigen::VectorXd est(3), truth(3);
  est << 1.1, 1.8, 3.0;
  truth << 1.0, 2.0, 4.0;
  EXPECT_NEAR(mean_relative_error(est, truth), (0.1 + 0.1 + 0.25) / 3, 1e-15);
}

TEST(MeanRelativeError, ZeroTruthsAreLeftOut) {
  // The middle term (truth 0) is undefined: left out of the sum and of the count.
  EXPECT_DOUBLE_EQ(mean_relative_error(V{1.5, 7, 0}, V{1, 0, 2}), (0.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(mean_relative_error(V{0, 1.5}, V{0, 1}), 0.5);
  // Nothing left: NaN (recorded as null), not 0 and not an error.
  EXPECT_TRUE(std::isnan(mean_relative_error(V{1, 2}, V{0, 0})));
  EXPECT_TRUE(std::isnan(mean_relative_error(V{}, V{})));
  // A NaN estimate is not hidden.
  EXPECT_TRUE(std::isnan(mean_relative_error(V{std::nan(""), 1}, V{1, 1})));
  EXPECT_THROW(mean_relative_error(V{1, 2}, V{1}), UsageError);
}

TEST(MeanRelativeError, AgreesWithTheReferenceDefinition) {
  SeededRandom rng(7);
  V est(500), truth(500);
  for (std::size_t i = 0; i < est.size(); ++i) {
    truth[i] = 0.5 + rng.unit();
    est[i] = truth[i] + rng.unit() - 0.5;
  }
  EXPECT_DOUBLE_EQ(mean_relative_error(est, truth), privrace::testing::reference_mean_relative_error(est, truth));
}

TEST(RocAuc, HandComputedValuesWithTiesCountedOneHalf) {
  // Scores 1, 2, 2, 3 with labels 0, 1, 0, 1: pairs (positive vs negative): 2 vs 1 win, 2 vs 2
  // tie, 3 vs 1 win, 3 vs 2 win: (3 + 0.5) / 4.
  EXPECT_DOUBLE_EQ(roc_auc(V{1, 2, 2, 3}, L{0, 1, 0, 1}), 3.5 / 4);
  EXPECT_DOUBLE_EQ(roc_auc(V{1, 2, 3}, L{0, 0, 1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc(V{3, 2, 1}, L{0, 0, 1}), 0.0);
  // A constant score: every pair ties.
  EXPECT_DOUBLE_EQ(roc_auc(V{5, 5, 5}, L{0, 1, 0}), 0.5);
  // 0.1, 0.4 | 0.4, 0.8: 0.4 vs 0.1 win, 0.4 vs 0.4 tie, 0.8 beats both: (1 + 0.5 + 1 + 1) / 4.
  Eigen::VectorXd scores(4);
  scores << 0.1, 0.4, 0.4, 0.8;
  EXPECT_DOUBLE_EQ(roc_auc(scores, L{0, 0, 1, 1}), 3.5 / 4);
  // Any non-zero label is a positive.
  EXPECT_DOUBLE_EQ(roc_auc(V{1, 2, 2, 3}, L{0, 7, 0, -1}), 3.5 / 4);
}

TEST(RocAuc, OneClassIsAnErrorNamingTheCounts) {
  try {
    roc_auc(V{1, 2, 3}, L{0, 0, 0});
    FAIL() << "one class accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("0 positives and 3 negatives"), std::string::npos) << e.what();
  }
  try {
    roc_auc(V{1, 2}, L{1, 1});
    FAIL() << "one class accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2 positives and 0 negatives"), std::string::npos) << e.what();
  }
  EXPECT_THROW(roc_auc(V{}, L{}), InputError);
  EXPECT_THROW(roc_auc(V{1, std::nan("")}, L{0, 1}), InputError);
  EXPECT_THROW(roc_auc(V{1, 2}, L{0}), UsageError);
}

TEST(RocAuc, AgreesWithThePairwiseDefinitionAndIsSymmetric) {
  SeededRandom rng(11);
  V score(400);
  L label(400), flipped(400);
  for (std::size_t i = 0; i < score.size(); ++i) {
    label[i] = rng.unit() < 0.3 ? 1 : 0;
    flipped[i] = 1 - label[i];
    // Rounded to 20 levels, so that many scores tie.
    score[i] = std::floor(20 * (rng.unit() + 0.3 * label[i])) / 20;
  }
  const double auc = roc_auc(score, label);
  EXPECT_NEAR(auc, privrace::testing::reference_auc(score, label), 1e-12);
  EXPECT_NEAR(auc + roc_auc(score, flipped), 1.0, 1e-12);
  EXPECT_GT(auc, 0.5);
}
