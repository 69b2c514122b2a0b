#include <cmath>
#include <cstdio>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/lsh/gaussian.hpp"

namespace privrace {

// Sensitivity of the quantised RFF sum, in grid units (G = 2^kGridBits cells per unit).
// A record contributes q_c = round(G cos t), q_s = round(G sin t) for each of the m' phases
// t = omega_j . x. With exact cos and sin, |round(a)| <= |a| + 1/2, so
//   |q_c| + |q_s| <= G (|cos t| + |sin t|) + 1 <= sqrt(2) G + 1, an integer, hence
//   |q_c| + |q_s| <= floor(sqrt(2) G) + 1 = kPairL1;
//   q_c^2 + q_s^2 <= (G|cos t| + 1/2)^2 + (G|sin t| + 1/2)^2 = G^2 + G (|cos t| + |sin t|) + 1/2
//                 <= G^2 + sqrt(2) G + 1/2.
// The float cos and sin used in practice are off by a few ulp (G ulp ~ 0.06 grid units), which
// pairs near t = pi/4 turn into up to ~0.2 G of excess over the L2 bound; so the L2 bound used
// is kPairL2Squared = G^2 + 3 G (headroom for the float error and for checking the bound in
// float, see accumulate_dense; +1.4e-6 relative on the L2 sensitivity). Both bounds are ENFORCED on every pair: a pair outside them is moved
// towards 0 one grid step at a time (exact arithmetic never needs it; float rounding rarely
// does), so the sensitivity holds by construction. Then, for one record,
//   L1 = m' kPairL1 = m' (sqrt(2) G + 1) at most: in feature units m' (sqrt 2 + 1/G), the
//        paper's m' sqrt 2 plus the rounding (7e-7 relative at G = 2^20);
//   L2 = sqrt(m' kPairL2Squared) = sqrt(m' (G^2 + 3G)): in feature units sqrt(m') (1 + 1.5/G).
const std::int64_t RandomFourierFeatures::kPairL1 =
    static_cast<std::int64_t>(std::floor(std::numbers::sqrt2 * RandomFourierFeatures::kGrid)) + 1;
const std::int64_t RandomFourierFeatures::kPairL2Squared =
    (std::int64_t{1} << (2 * RandomFourierFeatures::kGridBits)) + (std::int64_t{3} << RandomFourierFeatures::kGridBits);

namespace {
inline bool pair_in_bounds(std::int64_t a, std::int64_t b) {
  const std::int64_t aa = a < 0 ? -a : a, bb = b < 0 ? -b : b;
  return aa + bb <= RandomFourierFeatures::kPairL1 && aa * aa + bb * bb <= RandomFourierFeatures::kPairL2Squared;
}
// Moves the larger magnitude one grid step towards 0 until the pair is inside both bounds.
inline void shrink_into_bounds(std::int64_t& a, std::int64_t& b) {
  while (!pair_in_bounds(a, b)) {
    std::int64_t& big = (a < 0 ? -a : a) >= (b < 0 ? -b : b) ? a : b;
    big += big > 0 ? -1 : 1;
  }
}
}  // namespace

RandomFourierFeatures::RandomFourierFeatures(std::size_t dim, std::size_t half_features, double sigma, std::uint64_t seed)
    : LshFamily(2, seed), dim_(dim), half_(half_features), sigma_(sigma) {
  // omega_j ~ N(0, sigma^-2 I_d): the Fourier transform of the Gaussian kernel of bandwidth sigma.
  std::vector<double> g(half_ * dim_);
  SeededRandom rng(derive_seed(seed, 3));
  fill_gaussian(rng, g.data(), g.size());
  frequencies_.resize(static_cast<Eigen::Index>(half_), static_cast<Eigen::Index>(dim_));
  for (std::size_t k = 0; k < g.size(); ++k) frequencies_.data()[k] = static_cast<Real>(g[k] / sigma_);
}

void RandomFourierFeatures::hash_dense(const DenseRef&, CodeMatrix&, std::size_t, std::size_t) const {
  throw UsageError("an rff sketch holds sums of random Fourier features, not hash buckets: it answers M2M estimates "
                   "(privrace m2m), not kernel density queries");
}

double RandomFourierFeatures::kernel_dense(std::span<const double> x, std::span<const double> q) const {
  double d2 = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) d2 += (x[i] - q[i]) * (x[i] - q[i]);
  return std::exp(-d2 / (2.0 * sigma_ * sigma_));
}

void RandomFourierFeatures::validate_dense(const DenseRef& batch, std::size_t first_record) const {
  if (batch.allFinite()) return;
  for (Eigen::Index i = 0; i < batch.rows(); ++i)
    for (Eigen::Index k = 0; k < batch.cols(); ++k)
      if (!std::isfinite(batch(i, k)))
        throw InputError("record " + std::to_string(first_record + static_cast<std::size_t>(i) + 1) + ", attribute " +
                         std::to_string(k + 1) + ": value " + message_number(batch(i, k)) + " is not finite");
}

void RandomFourierFeatures::accumulate_dense(const DenseRef& batch, std::int64_t* counts, std::size_t width,
                                             std::size_t row_begin, std::size_t row_end) const {
  const Eigen::Index n = batch.rows(), m = static_cast<Eigen::Index>(half_);
  // One GEMM for the batch: m' x n phases. A point's phases depend only on the point and its
  // place in its batch, and batches are aligned to record indices (builder.cpp), so the
  // quantised features, and hence the integer sums, are identical for every thread count.
  thread_local DenseMatrix phase;  // reused: a fresh large buffer per call would be an mmap
  thread_local Eigen::ArrayXf qcos, qsin;
  phase.resize(m, n);
  phase.noalias() = frequencies_ * batch.transpose();
  const float grid = static_cast<float>(kGrid);
  const bool want_cos = row_begin == 0 && row_end > 0, want_sin = row_begin <= 1 && row_end > 1;
  std::int64_t* cos_row = counts;
  std::int64_t* sin_row = counts + (row_begin == 0 ? width : 0);
  for (Eigen::Index j = 0; j < m; ++j) {
    // One frequency at a time: its n phases, cosines and sines stay in L1/L2 (vectorised).
    const auto ph = phase.row(j).array();
    qcos = (ph.cos() * grid).round();  // exact integers in float (|q| <= 2^20)
    qsin = (ph.sin() * grid).round();
    // The bounds, checked in float: |a| + |b| is exact (integers below 2^22); a^2 + b^2 is within
    // 2^18 of its exact value (three roundings of values below 2^42, each off by at most 2^-24
    // relative), so a float maximum at most kPairL2Squared - 2^19 proves the exact bound.
    const float worst_l1 = (qcos.abs() + qsin.abs()).maxCoeff();
    const float worst_l2 = (qcos.square() + qsin.square()).maxCoeff();
    std::int64_t sum_c = 0, sum_s = 0;
    if (worst_l1 <= static_cast<float>(kPairL1) &&
        static_cast<double>(worst_l2) <= static_cast<double>(kPairL2Squared - (std::int64_t{1} << 19))) {
      const float* c = qcos.data();
      const float* s = qsin.data();
      for (Eigen::Index i = 0; i < n; ++i) {  // exact integer sums
        sum_c += static_cast<std::int32_t>(c[i]);
        sum_s += static_cast<std::int32_t>(s[i]);
      }
    } else {  // rare: some float pair overshot the bounds; enforce them pair by pair
      for (Eigen::Index i = 0; i < n; ++i) {
        auto a = static_cast<std::int64_t>(qcos[i]), b = static_cast<std::int64_t>(qsin[i]);
        shrink_into_bounds(a, b);
        sum_c += a;
        sum_s += b;
      }
    }
    if (want_cos) cos_row[j] += sum_c;
    if (want_sin) sin_row[j] += sum_s;
  }
}

double RandomFourierFeatures::record_l1() const { return static_cast<double>(half_) * static_cast<double>(kPairL1); }
double RandomFourierFeatures::record_l2() const {
  return std::sqrt(static_cast<double>(half_) * static_cast<double>(kPairL2Squared));
}

nlohmann::json RandomFourierFeatures::params() const {
  return {{"kernel", "rff"},  {"rows", 2},        {"dim", dim_},  {"features", 2 * half_},
          {"sigma", sigma_},  {"power", 1},       {"seed", seed()}, {"grid_bits", kGridBits}};
}

}  // namespace privrace
