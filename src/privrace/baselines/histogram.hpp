#pragma once
// Synthetic data from a Laplace-perturbed histogram (the RACE paper's "Synthetic" baseline,
// with the standard private histogram of Dwork et al. 2006 / Dwork & Roth Sec. 3.3):
// b equal-width bins per dimension over the public domain, each count + noise, then the
// bin centres weighted by the clamped noisy counts (normalised by their sum, a
// post-processing step) are the released points: f~(q) = sum_c w_c k(centre_c, q).
//
// Sensitivity: a record falls in exactly one bin, so adding or removing it changes one count
// by 1: L1 sensitivity 1 (replace one: 2). The counts are integers, so the noise is the
// discrete Laplace of scale 1/eps (the engine's exact sampler; no floating-point Laplace on
// integer counts, Mironov 2012).
#include <cstdint>
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {

class HistogramRelease {
 public:
  HistogramRelease(const DenseRef& train, const Domain& dom, int bins_per_dim);
  std::size_t cells() const { return counts_.size(); }
  const std::vector<std::int64_t>& counts() const { return counts_; }
  // The bin of row `i` of `points` (values outside the domain fall in the edge bins).
  std::size_t cell_of(const DenseRef& points, Eigen::Index i) const;
  // Noisy counts (exact counts if rng == nullptr); `sensitivity` 1 (add/remove) or 2 (replace).
  std::vector<std::int64_t> noisy_counts(double epsilon, double sensitivity, RandomSource* rng) const;
  WeightedPoints points(const std::vector<std::int64_t>& counts) const;

 private:
  Domain dom_;
  int b_ = 0;
  std::size_t d_ = 0;
  std::vector<std::int64_t> counts_;
};

}  // namespace privrace::baselines
