#include "privrace/baselines/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

HistogramRelease::HistogramRelease(const DenseRef& train, const Domain& dom, int bins)
    : dom_(dom), b_(bins), d_(static_cast<std::size_t>(train.cols())) {
  if (bins < 1) throw UsageError("histogram: bins must be at least 1");
  const double cells = std::pow(static_cast<double>(bins), static_cast<double>(d_));
  if (cells > double(1 << 26))
    throw UsageError("histogram: bins^d = " + std::to_string(cells) + " cells is too many (at most 2^26)");
  counts_.assign(static_cast<std::size_t>(cells), 0);
  const auto n = static_cast<std::ptrdiff_t>(train.rows());
#pragma omp parallel
  {
    std::vector<std::int64_t> local(counts_.size(), 0);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) ++local[cell_of(train, i)];
#pragma omp critical
    for (std::size_t c = 0; c < counts_.size(); ++c) counts_[c] += local[c];
  }
}

std::size_t HistogramRelease::cell_of(const DenseRef& points, Eigen::Index i) const {
  if (static_cast<std::size_t>(points.cols()) != d_) throw InputError("histogram: point of the wrong dimension");
  std::size_t cell = 0;
  for (std::size_t j = 0; j < d_; ++j) {
    const double t = dom_.to_unit(points(i, static_cast<Eigen::Index>(j)));
    cell = cell * static_cast<std::size_t>(b_) + static_cast<std::size_t>(std::min(b_ - 1, static_cast<int>(t * b_)));
  }
  return cell;
}

std::vector<std::int64_t> HistogramRelease::noisy_counts(double epsilon, double sensitivity, RandomSource* rng) const {
  std::vector<std::int64_t> out = counts_;
  if (!rng) return out;
  const DiscreteLaplace noise(sensitivity / epsilon);
  for (auto& c : out) c += noise.sample(*rng);
  return out;
}

WeightedPoints HistogramRelease::points(const std::vector<std::int64_t>& counts) const {
  double total = 0;
  for (auto c : counts) total += static_cast<double>(std::max<std::int64_t>(c, 0));
  WeightedPoints wp;
  std::size_t live = 0;
  for (auto c : counts) live += c > 0;
  wp.points.resize(static_cast<Eigen::Index>(live), static_cast<Eigen::Index>(d_));
  wp.weights.reserve(live);
  std::size_t r = 0;
  for (std::size_t cell = 0; cell < counts.size(); ++cell) {
    if (counts[cell] <= 0) continue;
    std::size_t rest = cell;
    for (std::size_t j = d_; j-- > 0;) {
      const auto v = rest % static_cast<std::size_t>(b_);
      rest /= static_cast<std::size_t>(b_);
      wp.points(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) = dom_.from_unit((static_cast<double>(v) + 0.5) / b_);
    }
    wp.weights.push_back(static_cast<double>(counts[cell]) / total);
    ++r;
  }
  return wp;
}

}  // namespace privrace::baselines
