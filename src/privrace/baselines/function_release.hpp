#pragma once
// Shared pieces of the private KDE function-release baselines (Bernstein, KME, spectral,
// PFDA, histogram, PrivBayes): the public data domain, the target kernel, and released
// functions made of weighted points.
//
// Every baseline releases an approximation of the normalised KDE
//   f_D(q) = (1/N) sum_{x in D} k(x, q),   k(x, q) in [0, 1],
// the quantity the KDE task's ground truth holds. N is treated as public, as in the papers
// (Aldà & Rubinstein, Balog et al., Mirshani et al. all normalise by a known n).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/types.hpp"
#include "privrace/tasks/kde.hpp"

namespace privrace::baselines {

// The public box [lower, upper]^d the data is known to lie in (registry bounds: RGB 0..255,
// salaries 0..250k, unit-cube-scaled data 0..1). Records are clipped into it, which is a
// per-record transformation and so costs no privacy.
struct Domain {
  double lower = 0.0, upper = 1.0;
  double span() const { return upper - lower; }
  double to_unit(double v) const;    // clipped into [0, 1]
  double from_unit(double t) const { return lower + t * span(); }
};

// Data clipped into the domain (double, row-major).
DoubleMatrix clip_to_domain(const DenseRef& data, const Domain& dom);

// k(x, q) of the task's kernel (l2: p-stable collision probability of width w, to the power p;
// angular: (1 - angle/pi)^p).
double kernel_value(const KernelSpec& spec, const double* x, const double* q, std::size_t d);
// out[r] = kernel_value(spec, points.row(index[r]), q, d) for r < count, bit for bit: the L2
// kernel's table reads a batch at a time (pstable_kernel_tabulated's batch form).
void kernel_values(const KernelSpec& spec, const DoubleMatrix& points, const std::size_t* index, std::size_t count,
                   const double* q, double* out);

// out[j] = sum_i w[i] k(points_i, queries_j), points of weight 0 skipped; through the task's
// blocked parallel routine (weighted_row_kernel_sums), so it is the ground truth's kernel.
std::vector<double> weighted_kernel_sums(const DoubleMatrix& points, const std::vector<double>& weights,
                                         const DenseRef& queries, const KernelSpec& spec);

// A released function f(q) = sum_i w_i k(z_i, q) (KME, histogram, PrivBayes all release one).
struct WeightedPoints {
  DoubleMatrix points;
  std::vector<double> weights;
  std::vector<double> evaluate(const DenseRef& queries, const KernelSpec& spec) const {
    return weighted_kernel_sums(points, weights, queries, spec);
  }
};

// Kernel sums of the (clipped) data at arbitrary points, through the task's exact parallel
// routine (it merges duplicate rows first).
std::vector<double> kde_at(const DenseRef& data, const DoubleMatrix& points, const KernelSpec& spec);

// A setting refused before any work because its estimated time or memory exceeds a limit.
// It is a UsageError (callers that only know UsageError still catch it); the estimates travel
// with it so an experiment record can keep them as numbers, not only inside the message.
class InfeasibleError : public UsageError {
 public:
  InfeasibleError(const std::string& message, double operations, double estimated_seconds, double estimated_bytes)
      : UsageError(message), operations(operations), estimated_seconds(estimated_seconds), estimated_bytes(estimated_bytes) {}
  double operations;         // work units (kernel evaluations, score terms)
  double estimated_seconds;  // operations / the measured rate of this machine
  double estimated_bytes;    // peak memory of the setting (0 where the caller did not estimate it)
};

// Throws InfeasibleError when work_units / units_per_second exceeds limit_seconds, or when
// bytes exceeds limit_bytes (0 = no memory limit); the message gives both estimates.
void refuse_if_infeasible(double work_units, double units_per_second, double limit_seconds, const char* what,
                          double bytes = 0, double limit_bytes = 0);

}  // namespace privrace::baselines
