#pragma once
// The experiments' error metrics: one definition each, used by every task driver and by the
// tests. The engine library has no use for them (it releases and queries sketches; scoring
// against the truth is the experiment's business), so they live here.
#include <Eigen/Core>
#include <span>
#include <vector>

namespace privrace::experiments {

// Mean relative error: mean over j of |estimate_j - truth_j| / |truth_j|.
// Rule for a zero truth: the relative error is undefined there, so that term is left out of
// the mean (not counted in the divisor either). NaN when no term is left (empty input, or every
// truth is 0); the runner records NaN as null. A NaN estimate or truth makes the result NaN.
// UsageError when the sizes differ.
double mean_relative_error(std::span<const double> estimate, std::span<const double> truth);
inline double mean_relative_error(const Eigen::VectorXd& estimate, const Eigen::VectorXd& truth) {
  return mean_relative_error(std::span<const double>(estimate.data(), static_cast<std::size_t>(estimate.size())),
                             std::span<const double>(truth.data(), static_cast<std::size_t>(truth.size())));
}

// Area under the ROC curve of `score` (higher = more likely positive) against `label`
// (non-zero = positive): the Mann-Whitney statistic, P(score of a positive > score of a
// negative) with tied scores counted one half, from mid-ranks in O(n log n).
// Rule for one-class input: the AUC is undefined when the labels hold no positive or no
// negative, and that is an InputError naming both counts (never a made-up 0.5). Also
// InputError for a NaN score, UsageError when the sizes differ. A constant score (e.g. a
// classifier trained on one class) gives exactly 0.5 by the ties rule.
double roc_auc(std::span<const double> score, std::span<const int> label);
inline double roc_auc(const Eigen::VectorXd& score, const std::vector<int>& label) {
  return roc_auc(std::span<const double>(score.data(), static_cast<std::size_t>(score.size())),
                 std::span<const int>(label));
}

}  // namespace privrace::experiments
