#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"

namespace privrace::experiments {

double mean_relative_error(std::span<const double> estimate, std::span<const double> truth) {
  if (estimate.size() != truth.size())
    throw UsageError("mean_relative_error: " + std::to_string(estimate.size()) + " estimates for " +
                     std::to_string(truth.size()) + " true values");
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    if (truth[i] == 0.0) continue;  // undefined relative error: left out
    sum += std::abs(estimate[i] - truth[i]) / std::abs(truth[i]);
    ++n;
  }
  return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

double roc_auc(std::span<const double> score, std::span<const int> label) {
  if (score.size() != label.size())
    throw UsageError("roc_auc: " + std::to_string(score.size()) + " scores for " + std::to_string(label.size()) + " labels");
  std::size_t pos = 0;
  for (const int l : label) pos += l != 0;
  const std::size_t neg = label.size() - pos;
  if (pos == 0 || neg == 0)
    throw InputError("roc_auc: the labels hold " + std::to_string(pos) + " positives and " + std::to_string(neg) +
                     " negatives; the ROC AUC is undefined unless both classes are present");
  for (const double s : score)
    if (std::isnan(s)) throw InputError("roc_auc: a score is NaN");
  std::vector<std::size_t> order(score.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
  // Mid-ranks (1-based) over tied blocks; AUC = (rank sum of positives - P(P+1)/2) / (P N).
  double rank_sum = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && score[order[j]] == score[order[i]]) ++j;
    const double mid = 0.5 * static_cast<double>(i + 1 + j);
    for (std::size_t t = i; t < j; ++t)
      if (label[order[t]] != 0) rank_sum += mid;
    i = j;
  }
  const double p = static_cast<double>(pos), q = static_cast<double>(neg);
  return (rank_sum - p * (p + 1) / 2) / (p * q);
}

}  // namespace privrace::experiments
