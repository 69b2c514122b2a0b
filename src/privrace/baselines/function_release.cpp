#include "privrace/baselines/function_release.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "privrace/core/error.hpp"

namespace privrace::baselines {

double Domain::to_unit(double v) const {
  const double t = (v - lower) / span();
  return std::clamp(t, 0.0, 1.0);
}

DoubleMatrix clip_to_domain(const DenseRef& data, const Domain& dom) {
  DoubleMatrix out = data.cast<double>();
  for (Eigen::Index i = 0; i < out.size(); ++i) out.data()[i] = std::clamp(out.data()[i], dom.lower, dom.upper);
  return out;
}

namespace {
// The L2 kernel's distance-to-width ratio and the power of a kernel value: one definition for
// kernel_value and kernel_values, so that both give the same doubles.
double l2_ratio(const KernelSpec& spec, const double* x, const double* q, std::size_t d) {
  double s2 = 0;
  for (std::size_t j = 0; j < d; ++j) s2 += (x[j] - q[j]) * (x[j] - q[j]);
  return std::sqrt(s2) / spec.bandwidth;
}
double kernel_power(double k, std::size_t power) {
  double r = 1.0;
  for (std::size_t p = 0; p < power; ++p) r *= k;
  return r;
}
}  // namespace

double kernel_value(const KernelSpec& spec, const double* x, const double* q, std::size_t d) {
  double k;
  if (spec.kernel == Kernel::L2) {
    k = pstable_kernel_tabulated(l2_ratio(spec, x, q, d));
  } else {
    double xq = 0, xx = 0, qq = 0;
    for (std::size_t j = 0; j < d; ++j) xq += x[j] * q[j], xx += x[j] * x[j], qq += q[j] * q[j];
    // A zero vector has no direction: angle pi/2, as the exact kernel sums count it.
    const double c = (xx > 0 && qq > 0) ? std::clamp(xq / std::sqrt(xx * qq), -1.0, 1.0) : 0.0;
    k = 1.0 - std::acos(c) / std::numbers::pi;
  }
  return kernel_power(k, spec.power);
}

void kernel_values(const KernelSpec& spec, const DoubleMatrix& points, const std::size_t* index, std::size_t count,
                   const double* q, double* out) {
  const auto d = static_cast<std::size_t>(points.cols());
  const auto row = [&](std::size_t r) { return points.row(static_cast<Eigen::Index>(index[r])).data(); };
  if (spec.kernel != Kernel::L2) {
    for (std::size_t r = 0; r < count; ++r) out[r] = kernel_value(spec, row(r), q, d);
    return;
  }
  for (std::size_t r = 0; r < count; ++r) out[r] = l2_ratio(spec, row(r), q, d);
  pstable_kernel_tabulated(out, count, out);  // the table reads a batch at a time
  if (spec.power == 1) return;                // 1.0 * k = k
  for (std::size_t r = 0; r < count; ++r) out[r] = kernel_power(out[r], spec.power);
}

std::vector<double> weighted_kernel_sums(const DoubleMatrix& points, const std::vector<double>& weights,
                                         const DenseRef& queries, const KernelSpec& spec) {
  if (weights.size() != static_cast<std::size_t>(points.rows()))
    throw UsageError("weighted kernel sums: " + std::to_string(weights.size()) + " weights for " +
                     std::to_string(points.rows()) + " points");
  // Points with weight 0 (KME's non-pivot points, empty histogram bins) cost nothing.
  std::vector<Eigen::Index> live;
  for (Eigen::Index i = 0; i < points.rows(); ++i)
    if (weights[static_cast<std::size_t>(i)] != 0.0) live.push_back(i);
  if (live.size() == static_cast<std::size_t>(points.rows())) return weighted_row_kernel_sums(points, weights, queries, spec);
  DoubleMatrix rows(static_cast<Eigen::Index>(live.size()), points.cols());
  std::vector<double> w(live.size());
  for (std::size_t k = 0; k < live.size(); ++k) {
    rows.row(static_cast<Eigen::Index>(k)) = points.row(live[k]);
    w[k] = weights[static_cast<std::size_t>(live[k])];
  }
  return weighted_row_kernel_sums(rows, w, queries, spec);
}

std::vector<double> kde_at(const DenseRef& data, const DoubleMatrix& points, const KernelSpec& spec) {
  const DenseMatrix p = points.cast<Real>();
  auto sums = exact_kernel_sums(data, p, spec);
  const double n = static_cast<double>(data.rows());
  for (auto& s : sums) s /= n;
  return sums;
}

void refuse_if_infeasible(double work_units, double units_per_second, double limit_seconds, const char* what,
                          double bytes, double limit_bytes) {
  const double est = work_units / units_per_second;
  const bool too_slow = est > limit_seconds;
  const bool too_big = limit_bytes > 0 && bytes > limit_bytes;
  if (!too_slow && !too_big) return;
  std::ostringstream m;
  m << what << ": refused, estimated " << est << " s on this machine (" << work_units << " operations)";
  if (bytes > 0) m << " and " << bytes / (1024.0 * 1024.0 * 1024.0) << " GiB of memory";
  if (too_slow) m << ", above the limit of " << limit_seconds << " s (raise max_seconds to run it)";
  if (too_big)
    m << (too_slow ? " and" : ",") << " above the memory limit of " << limit_bytes / (1024.0 * 1024.0 * 1024.0)
      << " GiB (raise max_memory_gb to run it)";
  throw InfeasibleError(m.str(), work_units, est, bytes);
}

}  // namespace privrace::baselines
