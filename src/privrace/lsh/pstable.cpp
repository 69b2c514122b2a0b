#include <algorithm>
#include <bit>
#include <cmath>

#include "privrace/core/cpu_dispatch.hpp"
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

namespace {
// Bucket indices saturate at +-2^30 widths from the origin (float -> int32 conversion); data
// that far out along a projection shares the extreme bucket.
constexpr float kLimit = 1073741824.0f;
inline std::int32_t bucket(float projection, float offset) {
  return static_cast<std::int32_t>(std::clamp(std::floor(projection + offset), -kLimit, kLimit));
}
// One row's columns from its projections (n of them), a tile of points at a time in L1-resident
// buffers, bucket(x) in two vector loops and the column in a third. Compiled also for AVX-512
// (x86-64-v4: 16 lanes, and the column hash's 64-bit lane multiplies in one instruction instead
// of the three AVX2 needs), picked at load time: bench_fill on the 2-core VM, one thread,
// 1.02-1.06 ns an update against 1.76-1.90 for the AVX2 build of the same loops.
PRIVRACE_CLONES("arch=x86-64-v4", "default") void row_columns(const float* proj_row, std::size_t n, float b,
                                                                         const ColumnHash h, std::uint32_t* out) {
  constexpr std::size_t kTile = 512;
  alignas(64) float clamped[kTile];
  alignas(64) std::int32_t index[kTile];
  for (std::size_t start = 0; start < n; start += kTile) {
    const std::size_t len = std::min(kTile, n - start);
    for (std::size_t i = 0; i < len; ++i) clamped[i] = std::min(std::max(proj_row[start + i] + b, -kLimit), kLimit);
    for (std::size_t i = 0; i < len; ++i) {
      const auto t = static_cast<std::int32_t>(clamped[i]);
      index[i] = t + (std::bit_cast<std::int32_t>(clamped[i] - static_cast<float>(t)) >> 31);
    }
    for (std::size_t i = 0; i < len; ++i) out[start + i] = h.of_index(index[i]);
  }
}
inline std::uint64_t code_of(std::int32_t index) {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(index));
}
}  // namespace

const DenseMatrix& PStableL2::project(const DenseRef& batch, std::size_t row_begin, std::size_t row_end) const {
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
  return proj;
}

void PStableL2::hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const {
  const Eigen::Index n = batch.rows();
  const auto p = static_cast<Eigen::Index>(power_);
  const auto nrows = static_cast<Eigen::Index>(row_end - row_begin);
  const auto first = static_cast<Eigen::Index>(row_begin) * p;
  const DenseMatrix& proj = project(batch, row_begin, row_end);
  codes.resize(nrows, n);
  if (n == 1 && power_ == 1) {
    // A single query: one vector loop over the rows instead of R one-element loops.
    std::uint64_t* out = codes.data();
    const float* pr = proj.data();
    const float* b = offsets_.data() + first;
    for (Eigen::Index r = 0; r < nrows; ++r) out[r] = code_of(bucket(pr[r], b[r]));  // NOLINT: vector loop
    return;
  }
  for (Eigen::Index r = 0; r < nrows; ++r) {
    std::uint64_t* out = codes.row(r).data();
    for (std::size_t j = 0; j < power_; ++j) {
      const Eigen::Index k = r * p + static_cast<Eigen::Index>(j);
      const float* proj_row = proj.row(k).data();
      const float b = offsets_[first + k];
      if (j == 0) {
        for (Eigen::Index i = 0; i < n; ++i) out[i] = code_of(bucket(proj_row[i], b));
      } else {
        for (Eigen::Index i = 0; i < n; ++i) out[i] = combine_code(out[i], code_of(bucket(proj_row[i], b)));
      }
    }
  }
}

void PStableL2::dense_columns(const DenseRef& batch, const ColumnHash* hashes, std::uint32_t* cols, std::size_t row_begin,
                              std::size_t row_end, CodeMatrix& codes) const {
  const Eigen::Index n = batch.rows();
  if (power_ != 1 || n == 1) {  // concatenated codes, or a single point: through the codes
    LshFamily::dense_columns(batch, hashes, cols, row_begin, row_end, codes);
    return;
  }
  // The same projections as hash_dense (the same GEMM call); then, a tile of points at a time
  // in L1-resident buffers, bucket(x) in two vector loops and the column in a third. No 64-bit
  // code is stored and read back. GCC vectorises neither std::floor under -ftrapping-math, its
  // default (the project builds with -fno-trapping-math; this code does not rely on it), nor a
  // clamp followed by conversions in one loop, hence the split:
  //   v = clamp(x + b, -2^30, 2^30); t = (int32) v (truncation); floor = t - 1 if v < t else t.
  // Equal to bucket(): for |v| < 2^24 the float t is exact; above, v is an integer (t = v). The
  // sign of v - t (exact or not, a non-zero difference never rounds to 0) is its top bit.
  const DenseMatrix& proj = project(batch, row_begin, row_end);
  const auto un = static_cast<std::size_t>(n);
  for (std::size_t r = 0; r < row_end - row_begin; ++r)
    row_columns(proj.row(static_cast<Eigen::Index>(r)).data(), un, offsets_[static_cast<Eigen::Index>(row_begin + r)], hashes[r],
                cols + r * un);
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
