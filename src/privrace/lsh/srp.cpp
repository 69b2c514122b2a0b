#include <cmath>
#include <numbers>

#include "privrace/lsh/families.hpp"
#include "privrace/lsh/gaussian.hpp"

namespace privrace {

SignedRandomProjection::SignedRandomProjection(std::size_t rows, std::size_t dim, std::size_t power, std::uint64_t seed)
    : LshFamily(rows, seed), dim_(dim), power_(power) {
  const std::size_t m = rows * power;
  projections_.resize(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(dim));
  SeededRandom rng(derive_seed(seed, 2));
  fill_gaussian(rng, projections_.data(), m * dim);
  if (power <= 32) set_code_space(std::uint64_t{1} << power);  // codes are p packed sign bits
}

void SignedRandomProjection::hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin,
                                        std::size_t row_end) const {
  const Eigen::Index n = batch.rows();
  const auto pw = static_cast<Eigen::Index>(power_);
  const auto nrows = static_cast<Eigen::Index>(row_end - row_begin);
  thread_local DenseMatrix proj;  // reused: a fresh large buffer per call would be an mmap
  proj.resize(nrows * pw, n);
  proj.noalias() = projections_.middleRows(static_cast<Eigen::Index>(row_begin) * pw, nrows * pw) * batch.transpose();
  codes.resize(nrows, n);
  for (Eigen::Index r = 0; r < nrows; ++r) {
    std::uint64_t* out = codes.row(r).data();
    for (Eigen::Index i = 0; i < n; ++i) out[i] = 0;
    for (std::size_t j = 0; j < power_; ++j) {
      const float* p = proj.row(r * static_cast<Eigen::Index>(power_) + static_cast<Eigen::Index>(j)).data();
      for (Eigen::Index i = 0; i < n; ++i) out[i] |= static_cast<std::uint64_t>(p[i] >= 0.0f) << j;
    }
  }
}

double SignedRandomProjection::angle(std::span<const double> x, std::span<const double> q) {
  double xq = 0, xx = 0, qq = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xq += x[i] * q[i];
    xx += x[i] * x[i];
    qq += q[i] * q[i];
  }
  if (xx == 0.0 || qq == 0.0) return std::numbers::pi / 2;
  return std::acos(std::clamp(xq / std::sqrt(xx * qq), -1.0, 1.0));
}

double SignedRandomProjection::kernel_dense(std::span<const double> x, std::span<const double> q) const {
  return std::pow(1.0 - angle(x, q) / std::numbers::pi, static_cast<double>(power_));
}

nlohmann::json SignedRandomProjection::params() const {
  return {{"kernel", "angular"}, {"rows", rows()}, {"dim", dim_}, {"power", power_}, {"seed", seed()}};
}

SrpPair::SrpPair(std::size_t rows, std::size_t dim, std::size_t power, std::uint64_t seed, bool mirror_inserts)
    : SignedRandomProjection(rows, dim, power, seed),
      mirror_inserts_(mirror_inserts),
      mask_(power >= 64 ? ~0ULL : ((1ULL << power) - 1)) {}

double SrpPair::kernel_dense(std::span<const double> x, std::span<const double> q) const {
  const double t = angle(x, q) / std::numbers::pi;
  return std::pow(1.0 - t, static_cast<double>(power_)) + std::pow(t, static_cast<double>(power_));
}

nlohmann::json SrpPair::params() const {
  auto p = SignedRandomProjection::params();
  p["kernel"] = "angular_pair";
  p["pair_mode"] = mirror_inserts_ ? "insert" : "query";
  return p;
}

}  // namespace privrace
