#include "privrace/ldp/bernstein.hpp"

#include <nlopt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "privrace/core/error.hpp"

namespace privrace::ldp {

std::uint64_t grid_points(int k, int p) {
  if (k < 1 || p < 1) throw UsageError("grid: k and p must be at least 1");
  std::uint64_t g = 1;
  for (int j = 0; j < p; ++j) {
    if (g > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(k + 1))
      throw ResourceError("grid: (k+1)^p = " + std::to_string(k + 1) + "^" + std::to_string(p) +
                          " grid points exceed 2^62");
    g *= static_cast<std::uint64_t>(k + 1);
  }
  return g;
}

void check_grid(int k, int h, int p, double bytes_per_point, double max_bytes) {
  if (k < 1) throw UsageError("Bernstein grid: k = " + std::to_string(k) + ", expected k >= 1");
  if (h < 1) throw UsageError("Bernstein iterate order: h = " + std::to_string(h) + ", expected h >= 1");
  if (p < 1) throw UsageError("Bernstein grid: p = " + std::to_string(p) + ", expected p >= 1");
  const double points = std::pow(static_cast<double>(k + 1), p);
  const double bytes = points * bytes_per_point;
  if (!(bytes <= max_bytes))
    throw ResourceError("Bernstein grid (k+1)^p = " + std::to_string(k + 1) + "^" + std::to_string(p) + " = " +
                        std::to_string(points) + " points would need about " + std::to_string(bytes / 1073741824.0) +
                        " GiB (" + std::to_string(bytes_per_point) + " bytes a point), more than the limit of " +
                        std::to_string(max_bytes / 1073741824.0) + " GiB: lower k or p");
}

void grid_point(std::uint64_t index, int k, int p, double* t) {
  for (int j = p - 1; j >= 0; --j) {
    t[j] = static_cast<double>(index % static_cast<std::uint64_t>(k + 1)) / k;
    index /= static_cast<std::uint64_t>(k + 1);
  }
}

void IteratedBernstein::basis(int k, double t, double* out) {
  // C(k, v) t^v (1-t)^(k-v) by the recurrence of the binomial pmf, in logs for large k.
  t = std::clamp(t, 0.0, 1.0);
  if (t == 0.0 || t == 1.0) {
    for (int v = 0; v <= k; ++v) out[v] = 0.0;
    out[t == 0.0 ? 0 : k] = 1.0;
    return;
  }
  const double lt = std::log(t), l1 = std::log1p(-t);
  for (int v = 0; v <= k; ++v)
    out[v] = std::exp(std::lgamma(k + 1.0) - std::lgamma(v + 1.0) - std::lgamma(k - v + 1.0) + v * lt + (k - v) * l1);
}

namespace {
// out = A applied along `axis` of a row-major tensor with shape dims (A: rows x dims[axis]).
std::vector<double> mode_product(const std::vector<double>& in, std::vector<std::size_t>& dims, int axis,
                                 const std::vector<double>& A, std::size_t rows) {
  std::size_t outer = 1, inner = 1;
  for (int j = 0; j < axis; ++j) outer *= dims[j];
  for (std::size_t j = axis + 1; j < dims.size(); ++j) inner *= dims[j];
  const std::size_t cols = dims[axis];
  std::vector<double> out(outer * rows * inner, 0.0);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t r = 0; r < rows; ++r) {
      double* dst = out.data() + (o * rows + r) * inner;
      for (std::size_t c = 0; c < cols; ++c) {
        const double a = A[r * cols + c];
        if (a == 0.0) continue;
        const double* src = in.data() + (o * cols + c) * inner;
        for (std::size_t q = 0; q < inner; ++q) dst[q] += a * src[q];
      }
    }
  dims[axis] = rows;
  return out;
}
}  // namespace

IteratedBernstein::IteratedBernstein(int p, int k, int h, std::vector<double> grid_values) : p_(p), k_(k), h_(h) {
  if (k < 1 || h < 1 || p < 1)
    throw UsageError("iterated Bernstein: need k, h, p >= 1 (got k = " + std::to_string(k) + ", h = " +
                     std::to_string(h) + ", p = " + std::to_string(p) + ")");
  if (grid_values.size() != grid_points(k, p))
    throw UsageError("iterated Bernstein: " + std::to_string(grid_values.size()) + " grid values, expected (k+1)^p = " +
                     std::to_string(grid_points(k, p)));
  const std::size_t K = static_cast<std::size_t>(k) + 1;
  // Definition 6 (after Micchelli and Aldà & Rubinstein): the tensor product of the 1-D
  // iterates, B^(h)_{k,p} = (x)_{axis j} [I - (I - B_k)^h]_j, so that the coefficient tensor is
  // the 1-D coefficient matrix C_h applied along every axis: c = (C_h (x) ... (x) C_h) F with
  //   C_h = sum_{i=1}^h C(h,i) (-1)^(i-1) M^(i-1) = sum_{j=0}^{h-1} (I - M)^j,
  // M[u][v] = b_{v,k}(u/k) (the geometric form has no alternating binomials, which cancel
  // catastrophically for large h). This is NOT I - (I - (x)B_k)^h for p >= 2 and h >= 2
  // (docs/ldp-bernstein.md).
  coef_ = std::move(grid_values);
  if (h == 1) return;  // C_1 = I
  const std::vector<double> C = iterate_matrix(k, h);
  std::vector<std::size_t> dims(p, K);
  for (int a = 0; a < p; ++a) coef_ = mode_product(coef_, dims, a, C, K);
}

std::vector<double> IteratedBernstein::iterate_matrix(int k, int h) {
  if (k < 1 || h < 1) throw UsageError("iterate_matrix: need k, h >= 1");
  const std::size_t K = static_cast<std::size_t>(k) + 1;
  std::vector<double> M(K * K);  // M[u][v] = b_{v,k}(u/k)
  for (std::size_t u = 0; u < K; ++u) basis(k, static_cast<double>(u) / k, M.data() + u * K);
  std::vector<double> C(K * K, 0.0), R(K * K, 0.0), next(K * K);
  for (std::size_t u = 0; u < K; ++u) C[u * K + u] = R[u * K + u] = 1.0;  // C = R = (I - M)^0
  for (int j = 1; j < h; ++j) {  // R <- (I - M) R, C += R
    for (std::size_t u = 0; u < K; ++u)
      for (std::size_t v = 0; v < K; ++v) {
        double s = R[u * K + v];
        for (std::size_t w = 0; w < K; ++w) s -= M[u * K + w] * R[w * K + v];
        next[u * K + v] = s;
      }
    R.swap(next);
    for (std::size_t q = 0; q < K * K; ++q) C[q] += R[q];
  }
  return C;
}

double IteratedBernstein::operator()(std::span<const double> t) const {
  const std::size_t K = static_cast<std::size_t>(k_) + 1;
  std::vector<double> cur = coef_, b(K);
  std::vector<std::size_t> dims(p_, K);
  for (int a = 0; a < p_; ++a) {  // contract axis a with its basis vector (a 1 x K matrix)
    basis(k_, t[a], b.data());
    cur = mode_product(cur, dims, a, b, 1);
  }
  return cur[0];
}

std::vector<double> IteratedBernstein::evaluate_grid(int m) const {
  const std::size_t K = static_cast<std::size_t>(k_) + 1;
  std::vector<double> A(static_cast<std::size_t>(m) * K);
  for (int r = 0; r < m; ++r) basis(k_, m == 1 ? 0.0 : static_cast<double>(r) / (m - 1), A.data() + r * K);
  std::vector<double> cur = coef_;
  std::vector<std::size_t> dims(p_, K);
  for (int a = 0; a < p_; ++a) cur = mode_product(cur, dims, a, A, static_cast<std::size_t>(m));
  return cur;
}

double IteratedBernstein::lipschitz_bound() const {
  const std::size_t K = static_cast<std::size_t>(k_) + 1;
  double best = 0.0;
  std::size_t stride = 1;
  for (int a = p_ - 1; a >= 0; --a) {
    for (std::size_t i = 0; i < coef_.size(); ++i)
      if ((i / stride) % K + 1 < K) best = std::max(best, std::abs(coef_[i + stride] - coef_[i]));
    stride *= K;
  }
  return k_ * best;
}

namespace {
struct NloptPoly {
  const IteratedBernstein* poly;
  int evals = 0;
};
double nlopt_objective(unsigned n, const double* x, double* grad, void* data) {
  auto* d = static_cast<NloptPoly*>(data);
  (void)grad;  // derivative-free (Subplex)
  ++d->evals;
  return (*d->poly)(std::span<const double>(x, n));
}
}  // namespace

PolynomialMinimum minimize(const IteratedBernstein& poly, int m, std::uint64_t max_grid_points) {
  const auto start = std::chrono::steady_clock::now();
  const int p = poly.dim();
  if (m <= 0) {
    m = static_cast<int>(std::floor(std::pow(static_cast<double>(max_grid_points), 1.0 / p) + 1e-9));
    m = std::clamp(m, 2, 4097);
  }
  const std::vector<double> values = poly.evaluate_grid(m);
  const std::size_t best = static_cast<std::size_t>(std::min_element(values.begin(), values.end()) - values.begin());
  PolynomialMinimum out;
  out.grid_per_axis = m;
  out.grid_spacing = 1.0 / (m - 1);
  out.t.resize(p);
  std::size_t idx = best;
  for (int j = p - 1; j >= 0; --j) {
    out.t[j] = static_cast<double>(idx % static_cast<std::size_t>(m)) * out.grid_spacing;
    idx /= static_cast<std::size_t>(m);
  }
  out.value = values[best];
  out.grid_error_bound = p * out.grid_spacing * poly.lipschitz_bound() / 2.0;
  // Local refinement inside [0, 1]^p around the best grid point.
  NloptPoly data{&poly};
  nlopt_opt opt = nlopt_create(NLOPT_LN_SBPLX, static_cast<unsigned>(p));
  std::vector<double> lo(p, 0.0), hi(p, 1.0), step(p, out.grid_spacing / 2), x = out.t;
  nlopt_set_lower_bounds(opt, lo.data());
  nlopt_set_upper_bounds(opt, hi.data());
  nlopt_set_initial_step(opt, step.data());
  nlopt_set_min_objective(opt, nlopt_objective, &data);
  nlopt_set_xtol_abs1(opt, 1e-9);
  nlopt_set_maxeval(opt, 400 * p);
  double fx = out.value;
  const nlopt_result r = nlopt_optimize(opt, x.data(), &fx);
  nlopt_destroy(opt);
  if (r > 0 && fx < out.value) {
    out.value = fx;
    out.t = x;
  }
  out.refinement_evaluations = data.evals;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

int theorem3_degree(double n, double eps, int p, int h, double scale, bool one_bit) {
  if (std::isinf(eps)) eps = 1e6;  // no noise: the largest k any reasonable grid allows
  const double e = one_bit ? 1.0 / (h + p / 2.0) : 1.0 / (h + p);
  const double k = scale * std::pow(eps * std::sqrt(n), e);
  return static_cast<int>(std::clamp(std::floor(k), 1.0, 1e6));
}

}  // namespace privrace::ldp
