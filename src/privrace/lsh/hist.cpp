#include <cmath>
#include <cstdio>

#include "privrace/core/error.hpp"
#include "privrace/lsh/families.hpp"

namespace privrace {

std::pair<std::vector<double>, std::vector<double>> expand_domain(const std::vector<double>& lo,
                                                                  const std::vector<double>& hi, std::size_t dim) {
  if (lo.empty() || lo.size() != hi.size())
    throw UsageError("a domain needs as many lower as upper bounds (got " + std::to_string(lo.size()) + " and " +
                     std::to_string(hi.size()) + ")");
  if (lo.size() != 1 && lo.size() != dim)
    throw UsageError("the domain gives " + std::to_string(lo.size()) + " intervals but the data has " +
                     std::to_string(dim) + " attributes (give one LO:HI for all, or one per attribute)");
  std::vector<double> l(dim), h(dim);
  for (std::size_t r = 0; r < dim; ++r) {
    l[r] = lo.size() == 1 ? lo[0] : lo[r];
    h[r] = hi.size() == 1 ? hi[0] : hi[r];
    if (!std::isfinite(l[r]) || !std::isfinite(h[r]) || !(l[r] < h[r]))
      throw UsageError("domain of attribute " + std::to_string(r + 1) + ": LO = " + message_number(l[r]) + " must be below HI = " +
                       message_number(h[r]) + " (both finite)");
  }
  return {l, h};
}

// HIST is deterministic: the seed is ignored and recorded as 0, so histograms of the same
// domain and bins always merge.
MarginalHistograms::MarginalHistograms(std::size_t dim, std::size_t bins,
                                       std::pair<std::vector<double>, std::vector<double>> domain, std::uint64_t)
    : LshFamily(dim, 0), bins_(bins), lo_(std::move(domain.first)), hi_(std::move(domain.second)) {
  if (lo_.size() != dim || hi_.size() != dim) throw UsageError("hist: one interval per attribute is needed");
  scale_.resize(dim);
  for (std::size_t r = 0; r < dim; ++r) scale_[r] = static_cast<double>(bins_) / (hi_[r] - lo_[r]);
  set_code_space(bins_);
}

std::uint64_t MarginalHistograms::bin_of(double value, std::size_t r) const {
  const double t = (value - lo_[r]) * scale_[r];
  if (!(t > 0.0)) return 0;  // also NaN (refused earlier by validate_dense)
  const auto b = static_cast<std::uint64_t>(std::min(t, static_cast<double>(bins_)));
  return b >= bins_ ? bins_ - 1 : b;  // hi itself lies in the last bin
}

void MarginalHistograms::hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin,
                                    std::size_t row_end) const {
  const Eigen::Index n = batch.rows();
  codes.resize(static_cast<Eigen::Index>(row_end - row_begin), n);
  for (std::size_t r = row_begin; r < row_end; ++r) {
    std::uint64_t* out = codes.row(static_cast<Eigen::Index>(r - row_begin)).data();
    for (Eigen::Index i = 0; i < n; ++i) out[i] = bin_of(batch(i, static_cast<Eigen::Index>(r)), r);
  }
}

double MarginalHistograms::kernel_dense(std::span<const double> x, std::span<const double> q) const {
  std::size_t same = 0;
  for (std::size_t r = 0; r < rows(); ++r) same += bin_of(x[r], r) == bin_of(q[r], r) ? 1 : 0;
  return static_cast<double>(same) / static_cast<double>(rows());
}

void MarginalHistograms::validate_dense(const DenseRef& batch, std::size_t first_record) const {
  for (Eigen::Index i = 0; i < batch.rows(); ++i)
    for (std::size_t r = 0; r < rows(); ++r) {
      const double v = batch(i, static_cast<Eigen::Index>(r));
      if (!(v >= lo_[r] && v <= hi_[r]))
        throw InputError("record " + std::to_string(first_record + static_cast<std::size_t>(i) + 1) + ", attribute " +
                         std::to_string(r + 1) + ": value " + message_number(v) + " is outside the declared domain [" +
                         message_number(lo_[r]) + ", " + message_number(hi_[r]) + "] (hist refuses such records; widen the domain)");
    }
}

nlohmann::json MarginalHistograms::params() const {
  return {{"kernel", "hist"}, {"rows", rows()}, {"dim", rows()}, {"bins", bins_},
          {"lo", lo_},        {"hi", hi_},      {"power", 1},    {"seed", seed()}};
}

}  // namespace privrace
