#include "privrace/baselines/bernstein.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

BernsteinRelease::BernsteinRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, int k,
                                   double max_seconds, double kernel_evals_per_second, double max_bytes)
    : k_(k), d_(static_cast<std::size_t>(train.cols())), n_(static_cast<double>(train.rows())), dom_(dom) {
  if (k < 1) throw UsageError("bernstein: degree k must be at least 1");
  const double lattice = lattice_points(k, d_);
  refuse_if_infeasible(lattice * static_cast<double>(train.rows()), kernel_evals_per_second, max_seconds,
                       "bernstein lattice", estimated_bytes(k, d_), max_bytes);
  // The lattice {0, 1/k, ..., 1}^d in data units, one axis a dimension (the last fastest).
  std::vector<double> axis(static_cast<std::size_t>(k) + 1);
  for (int v = 0; v <= k; ++v) axis[static_cast<std::size_t>(v)] = dom.from_unit(static_cast<double>(v) / k);
  // Clipped data, so every record lies in the domain the lattice covers.
  const DenseMatrix clipped = clip_to_domain(train, dom).cast<Real>();
  values_ = lattice_kernel_sums(clipped, std::vector<std::vector<double>>(d_, axis), spec);  // parallel (OpenMP)
  const double n = static_cast<double>(clipped.rows());
  for (double& v : values_) v /= n;  // as kde_at
}

double BernsteinRelease::estimated_bytes(int k, std::size_t d) {
  return lattice_points(k, d) * 16.0;
}

double BernsteinRelease::noise_scale(double epsilon) const {
  return static_cast<double>(values_.size()) / (n_ * epsilon);
}

BernsteinRelease BernsteinRelease::privatized(double epsilon, RandomSource& rng) const {
  BernsteinRelease out = *this;
  const double b = noise_scale(epsilon);
  for (auto& v : out.values_) v += sample_laplace(rng, b);
  return out;
}

void BernsteinRelease::basis(int k, double t, double* out) {
  // In logs: C(100, 50) t^50 (1-t)^50 needs no overflow care that way.
  for (int v = 0; v <= k; ++v) {
    if (t <= 0.0) { out[v] = v == 0 ? 1.0 : 0.0; continue; }
    if (t >= 1.0) { out[v] = v == k ? 1.0 : 0.0; continue; }
    const double lc = std::lgamma(k + 1.0) - std::lgamma(v + 1.0) - std::lgamma(k - v + 1.0);
    out[v] = std::exp(lc + v * std::log(t) + (k - v) * std::log1p(-t));
  }
}

std::vector<double> BernsteinRelease::evaluate(const DenseRef& queries) const {
  // The lattice is memory-bound to read ((k+1)^d doubles: 344 MB at d = 8, k = 8), so a block of
  // queries shares each pass over it: viewed as a (K^(d-t)) x (K^t) row-major matrix (the last t
  // dimensions vary fastest), it is multiplied by the block's tensor-product bases over those t
  // dimensions (K^t x block), and each query's column of the product is then contracted over the
  // first d - t dimensions. Measurements: docs/experiments.md, "Bernstein's queries".
  const auto nq = static_cast<std::ptrdiff_t>(queries.rows());
  std::vector<double> out(static_cast<std::size_t>(nq));
  if (nq == 0) return out;
  const std::size_t K = static_cast<std::size_t>(k_ + 1);
  const std::size_t t = (d_ + 1) / 2;
  std::size_t inner = 1, outer = 1;
  for (std::size_t j = 0; j < t; ++j) inner *= K;
  for (std::size_t j = t; j < d_; ++j) outer *= K;
  // A block's basis matrix and product stay within about 32 MB each; every thread gets a block.
  constexpr std::size_t kBlockDoubles = std::size_t{1} << 22;
  const auto threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  std::size_t block = std::min<std::size_t>({256, std::max<std::size_t>(1, kBlockDoubles / inner),
                                             std::max<std::size_t>(1, kBlockDoubles / outer)});
  block = std::max<std::size_t>(1, std::min(block, (static_cast<std::size_t>(nq) + threads - 1) / threads));
  const auto blocks = static_cast<std::ptrdiff_t>((static_cast<std::size_t>(nq) + block - 1) / block);
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> lattice(
      values_.data(), static_cast<Eigen::Index>(outer), static_cast<Eigen::Index>(inner));
#pragma omp parallel
  {
    std::vector<double> b(K * d_), cur, next;
    Eigen::MatrixXd tail_bases, partial;
#pragma omp for schedule(dynamic)
    for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
      const std::ptrdiff_t q0 = blk * static_cast<std::ptrdiff_t>(block);
      const std::ptrdiff_t qn = std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(block), nq - q0);
      tail_bases.resize(static_cast<Eigen::Index>(inner), qn);
      for (std::ptrdiff_t c = 0; c < qn; ++c) {
        for (std::size_t j = d_ - t; j < d_; ++j)
          basis(k_, dom_.to_unit(queries(q0 + c, static_cast<Eigen::Index>(j))), &b[j * K]);
        // Column entry r (digits r_{d-t} .. r_{d-1}, the last fastest) = prod_j b_j[r_j].
        double* col = tail_bases.col(c).data();
        col[0] = 1.0;
        std::size_t len = 1;
        for (std::size_t j = d_ - t; j < d_; ++j) {
          const double* bj = &b[j * K];
          for (std::size_t r = len; r-- > 0;)
            for (std::size_t v = K; v-- > 0;) col[r * K + v] = col[r] * bj[v];
          len *= K;
        }
      }
      partial.noalias() = lattice * tail_bases;  // outer x qn
      for (std::ptrdiff_t c = 0; c < qn; ++c) {
        for (std::size_t j = 0; j < d_ - t; ++j)
          basis(k_, dom_.to_unit(queries(q0 + c, static_cast<Eigen::Index>(j))), &b[j * K]);
        // Contract the remaining dimensions, the last first: K^(d-t) -> ... -> scalar.
        const double* src = partial.col(c).data();
        std::size_t len = outer;
        for (std::size_t j = d_ - t; j-- > 0;) {
          next.assign(len / K, 0.0);
          const double* bj = &b[j * K];
          for (std::size_t r = 0; r < len / K; ++r) {
            double s = 0;
            for (std::size_t v = 0; v < K; ++v) s += src[r * K + v] * bj[v];
            next[r] = s;
          }
          cur.swap(next);
          src = cur.data();
          len /= K;
        }
        out[static_cast<std::size_t>(q0 + c)] = src[0];
      }
    }
  }
  return out;
}

}  // namespace privrace::baselines
