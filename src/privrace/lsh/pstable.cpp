#include <cmath>

#include "privrace/lsh/families.hpp"
#include "privrace/lsh/gaussian.hpp"

namespace privrace {

PStableL2::PStableL2(std::size_t rows, std::size_t dim, double width, std::size_t power, std::uint64_t seed)
    : LshFamily(rows, seed), dim_(dim), power_(power), width_(width) {
  const std::size_t m = rows * power;
  projections_.resize(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(dim));
  offsets_.resize(static_cast<Eigen::Index>(m));
  SeededRandom rng(derive_seed(seed, 1));
  fill_gaussian(rng, projections_.data(), m * dim);
  for (std::size_t i = 0; i < m; ++i) offsets_[static_cast<Eigen::Index>(i)] = static_cast<float>(rng.unit());
  projections_ /= static_cast<float>(width);  // fold 1/w into A so the hot loop is floor(Ax + b')
  projections_t_ = projections_.transpose();
}

void PStableL2::hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const {
  const Eigen::Index n = batch.rows();
  const auto p = static_cast<Eigen::Index>(power_);
  const auto nrows = static_cast<Eigen::Index>(row_end - row_begin);
  const auto first = static_cast<Eigen::Index>(row_begin) * p;
  // One GEMM for the whole batch: (rows p) x n projections, already in units of w.
  thread_local DenseMatrix proj;  // reused: a fresh large buffer per call would be an mmap
  proj.resize(nrows * p, n);
  if (n == 1) {
    // One point: sum_j x_j A[:, j] runs along the rows (vectorised), unlike R short dot products.
    proj.noalias() = (batch.row(0) * projections_t_.middleCols(first, nrows * p)).transpose();
  } else {
    proj.noalias() = projections_.middleRows(first, nrows * p) * batch.transpose();
  }
  codes.resize(nrows, n);
  // Bucket indices saturate at +-2^30 widths from the origin (float -> int32 conversion);
  // data that far out along a projection shares the extreme bucket.
  constexpr float kLimit = 1073741824.0f;
  if (n == 1 && power_ == 1) {
    // A single query: one vector loop over the rows instead of R one-element loops.
    std::uint64_t* out = codes.data();
    const float* pr = proj.data();
    const float* b = offsets_.data() + first;
    for (Eigen::Index r = 0; r < nrows; ++r) {
      const float v = std::clamp(std::floor(pr[r] + b[r]), -kLimit, kLimit);  // NOLINT: vector loop
      out[r] = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(v)));
    }
    return;
  }
  for (Eigen::Index r = 0; r < nrows; ++r) {
    std::uint64_t* out = codes.row(r).data();
    for (std::size_t j = 0; j < power_; ++j) {
      const Eigen::Index k = r * p + static_cast<Eigen::Index>(j);
      const float* proj_row = proj.row(k).data();
      const float b = offsets_[first + k];
      if (j == 0) {
        for (Eigen::Index i = 0; i < n; ++i) {
          const float v = std::clamp(std::floor(proj_row[i] + b), -kLimit, kLimit);
          out[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(v)));
        }
      } else {
        for (Eigen::Index i = 0; i < n; ++i) {
          const float v = std::clamp(std::floor(proj_row[i] + b), -kLimit, kLimit);
          out[i] = combine_code(out[i], static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(v))));
        }
      }
    }
  }
}

double PStableL2::kernel_dense(std::span<const double> x, std::span<const double> q) const {
  double d2 = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) d2 += (x[i] - q[i]) * (x[i] - q[i]);
  return std::pow(pstable_collision(std::sqrt(d2), width_), static_cast<double>(power_));
}

nlohmann::json PStableL2::params() const {
  return {{"kernel", "l2"}, {"rows", rows()}, {"dim", dim_}, {"bandwidth", width_}, {"power", power_}, {"seed", seed()}};
}

}  // namespace privrace
