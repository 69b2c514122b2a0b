#include "privrace/tasks/kde.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "privrace/core/error.hpp"
#include "privrace/lsh/family.hpp"

namespace privrace {
namespace {

// k(s) for s = c / w, written with erf and expm1 so the difference of two small terms keeps
// its digits when s is large: k = erf(r / sqrt 2) - sqrt(2/pi) (1 - e^{-r^2/2}) / r, r = 1/s.
double pstable_exact(double s) {
  if (s <= 0.0) return 1.0;
  const double r = 1.0 / s;
  const double k = std::erf(r / std::numbers::sqrt2) + std::sqrt(2.0 / std::numbers::pi) * std::expm1(-0.5 * r * r) / r;
  return std::max(0.0, k);
}

// dk/ds = -sqrt(2/pi) (1 - e^{-1/(2 s^2)}).
double pstable_derivative(double s) {
  if (s <= 0.0) return -std::sqrt(2.0 / std::numbers::pi);
  return std::sqrt(2.0 / std::numbers::pi) * std::expm1(-0.5 / (s * s));
}

class PStableTable {
 public:
  static constexpr double kMax = 64.0;
  static constexpr double kInvStep = 256.0;

  PStableTable() {
    const std::size_t n = static_cast<std::size_t>(kMax * kInvStep) + 2;
    value_.resize(n);
    slope_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double s = static_cast<double>(i) / kInvStep;
      value_[i] = pstable_exact(s);
      slope_[i] = pstable_derivative(s) / kInvStep;  // per unit of t in [0, 1]
    }
  }
  static const PStableTable& get() {
    static const PStableTable table;
    return table;
  }
  double operator()(double s) const {
    if (!(s < kMax)) return pstable_exact(s);
    const double x = s * kInvStep;
    const auto i = static_cast<std::size_t>(x);
    const double t = x - static_cast<double>(i);
    const double t2 = t * t, t3 = t2 * t;
    // Cubic Hermite with exact end slopes: error O(step^4 k'''').
    return (2 * t3 - 3 * t2 + 1) * value_[i] + (t3 - 2 * t2 + t) * slope_[i] + (-2 * t3 + 3 * t2) * value_[i + 1] +
           (t3 - t2) * slope_[i + 1];
  }

 private:
  std::vector<double> value_, slope_;
};

// Distinct rows with their multiplicities (as doubles, for the weighted sum).
void unique_rows(const DenseRef& data, DoubleMatrix& rows, std::vector<double>& weight) {
  const Eigen::Index n = data.rows(), d = data.cols();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
    for (Eigen::Index j = 0; j < d; ++j)
      if (data(a, j) != data(b, j)) return data(a, j) < data(b, j);
    return false;
  });
  rows.resize(n, d);
  weight.clear();
  Eigen::Index u = -1;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Eigen::Index i = order[k];
    if (u >= 0 && (data.row(i).cast<double>() - rows.row(u)).cwiseAbs().maxCoeff() == 0.0) {
      weight.back() += 1.0;
      continue;
    }
    ++u;
    rows.row(u) = data.row(i).cast<double>();
    weight.push_back(1.0);
  }
  rows.conservativeResize(u + 1, d);
}

double int_power(double v, std::size_t p) {
  double r = 1.0;
  for (std::size_t i = 0; i < p; ++i) r *= v;
  return r;
}

}  // namespace

nlohmann::json KernelSpec::to_json() const {
  return {{"kernel", to_string(kernel)}, {"bandwidth", bandwidth}, {"power", power}};
}

double pstable_kernel_tabulated(double s) { return PStableTable::get()(s); }

std::vector<double> exact_kernel_sums(const DenseRef& data, const DenseRef& queries, const KernelSpec& spec) {
  DoubleMatrix x;
  std::vector<double> w;
  unique_rows(data, x, w);
  return weighted_row_kernel_sums(x, w, queries, spec);
}

std::vector<double> weighted_row_kernel_sums(const DoubleMatrix& x, const std::vector<double>& w, const DenseRef& queries,
                                             const KernelSpec& spec) {
  if (spec.kernel != Kernel::L2 && spec.kernel != Kernel::Angular)
    throw UsageError("exact kernel sums: unsupported kernel '" + to_string(spec.kernel) + "' (expected l2 or angular)");
  if (spec.kernel == Kernel::L2 && !(spec.bandwidth > 0.0)) throw UsageError("exact kernel sums: bandwidth must be positive");
  if (spec.power == 0) throw UsageError("exact kernel sums: power must be at least 1");
  if (x.cols() != queries.cols())
    throw InputError("queries have " + std::to_string(queries.cols()) + " columns, the data " + std::to_string(x.cols()));
  if (w.size() != static_cast<std::size_t>(x.rows()))
    throw UsageError("kernel sums: " + std::to_string(w.size()) + " weights for " + std::to_string(x.rows()) + " rows");
  const DoubleMatrix q = queries.cast<double>();
  const Eigen::Index n = x.rows(), m = q.rows(), d = x.cols();
  std::vector<double> out(static_cast<std::size_t>(m), 0.0);
  const PStableTable& table = PStableTable::get();
  const double inv_w = 1.0 / spec.bandwidth;
  const bool l2 = spec.kernel == Kernel::L2;
  Eigen::VectorXd x_norm2 = x.rowwise().squaredNorm();
  constexpr Eigen::Index kQueryBlock = 16, kDataBlock = 2048;
  const Eigen::Index query_blocks = (m + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel
  {
    std::vector<double> s(static_cast<std::size_t>(kDataBlock));
    DoubleMatrix dots;
#pragma omp for schedule(dynamic, 1)
    for (Eigen::Index qb = 0; qb < query_blocks; ++qb) {
      const Eigen::Index q0 = qb * kQueryBlock, q1 = std::min(m, q0 + kQueryBlock);
      for (Eigen::Index b0 = 0; b0 < n; b0 += kDataBlock) {
        const Eigen::Index bn = std::min(kDataBlock, n - b0);
        // Large d: one small GEMM gives every inner product of the block pair.
        const bool gemm = !l2 || d > 8;
        if (gemm) dots.noalias() = q.middleRows(q0, q1 - q0) * x.middleRows(b0, bn).transpose();
        for (Eigen::Index j = q0; j < q1; ++j) {
          const double qn2 = q.row(j).squaredNorm();
          if (l2) {
            if (gemm) {
              for (Eigen::Index i = 0; i < bn; ++i)
                s[static_cast<std::size_t>(i)] =
                    std::sqrt(std::max(0.0, x_norm2(b0 + i) + qn2 - 2.0 * dots(j - q0, i))) * inv_w;
            } else {
              for (Eigen::Index i = 0; i < bn; ++i) {
                double acc = 0.0;
                for (Eigen::Index k = 0; k < d; ++k) {
                  const double diff = x(b0 + i, k) - q(j, k);
                  acc += diff * diff;
                }
                s[static_cast<std::size_t>(i)] = std::sqrt(acc) * inv_w;
              }
            }
            double sum = 0.0;
            for (Eigen::Index i = 0; i < bn; ++i) {
              const double k = table(s[static_cast<std::size_t>(i)]);
              sum += w[static_cast<std::size_t>(b0 + i)] * (spec.power == 1 ? k : int_power(k, spec.power));
            }
            out[static_cast<std::size_t>(j)] += sum;
          } else {
            double sum = 0.0;
            const double qn = std::sqrt(qn2);
            for (Eigen::Index i = 0; i < bn; ++i) {
              const double denom = std::sqrt(x_norm2(b0 + i)) * qn;
              // A zero vector has no direction: its sign bits are all ties, counted as angle pi/2.
              const double c = denom > 0 ? std::clamp(dots(j - q0, i) / denom, -1.0, 1.0) : 0.0;
              const double k = 1.0 - std::acos(c) / std::numbers::pi;
              sum += w[static_cast<std::size_t>(b0 + i)] * int_power(k, spec.power);
            }
            out[static_cast<std::size_t>(j)] += sum;
          }
        }
      }
    }
  }
  return out;
}

std::vector<std::vector<double>> race_densities(const RaceSketch& sketch, const DenseRef& queries,
                                                const std::vector<QueryOptions>& options) {
  // Built on query_dense (not on the row-estimate layout): one pass per distinct estimator,
  // and the 1/W debiasing applied here, since it is affine in the combined estimate.
  const double n_hat = sketch.n_hat();
  std::vector<std::vector<double>> out(options.size());
  std::vector<std::pair<QueryOptions, std::vector<double>>> done;
  for (std::size_t k = 0; k < options.size(); ++k) {
    QueryOptions base = options[k];
    base.debias = false;
    const std::vector<double>* sums = nullptr;
    for (const auto& [o, v] : done)
      if (o.estimator == base.estimator && o.mom_groups == base.mom_groups) sums = &v;
    if (!sums) {
      done.emplace_back(base, sketch.query_dense(queries, base));
      sums = &done.back().second;
    }
    out[k].resize(sums->size());
    for (std::size_t j = 0; j < sums->size(); ++j) {
      double e = (*sums)[j];
      if (options[k].debias) e = sketch.debiased(e, n_hat);
      out[k][j] = e / n_hat;
    }
  }
  return out;
}

double corollary1_rows(double n, double epsilon, double level) {
  if (!(n >= 1.0) || !std::isfinite(n)) throw UsageError("corollary1_rows: N must be at least 1");
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) throw UsageError("corollary1_rows: epsilon must be positive");
  if (!(level > 0.0 && level <= 1.0)) throw UsageError("corollary1_rows: level must be in (0, 1]");
  // R = ceil(f~ eps / sqrt 2) with f~ = level N (derivation in kde.hpp).
  return std::max(1.0, std::ceil(level * n * epsilon / std::numbers::sqrt2));
}

double l2_function_error(std::span<const double> estimate, std::span<const double> truth, double spacing) {
  if (estimate.size() != truth.size()) throw Error("l2_function_error: sizes differ");
  double sum = 0.0;
  for (std::size_t i = 0; i < truth.size(); ++i) sum += (estimate[i] - truth[i]) * (estimate[i] - truth[i]);
  return std::sqrt(sum * spacing);
}

}  // namespace privrace
