#include "privrace/ldp/smooth.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/ldp/protocols.hpp"

namespace privrace::ldp {

std::size_t clip_to_cube(PointData& data, bool clip, const std::string& source) {
  std::size_t rows = 0;
  for (std::size_t i = 0; i < data.n; ++i) {
    bool moved = false;
    for (std::size_t a = 0; a < data.d; ++a) {
      double& v = data.x[i * data.d + a];
      if (std::abs(v) <= 1.0) continue;
      if (!clip || !std::isfinite(v))
        throw InputError(source + ": row " + std::to_string(i) + ", coordinate " + std::to_string(a) + ": value " +
                         std::to_string(v) + " outside the data universe [-1, 1]^d" +
                         (clip ? " (not finite)" : " (clipping is off)"));
      v = std::clamp(v, -1.0, 1.0);
      moved = true;
    }
    rows += moved;
  }
  data.clipped += rows;
  return rows;
}

double KernelQuery::operator()(const double* x) const {
  double s = 0;
  for (std::size_t a = 0; a < centre.size(); ++a) s += (x[a] - centre[a]) * (x[a] - centre[a]);
  return std::exp(-s / (2 * bandwidth * bandwidth));
}

std::vector<KernelQuery> kde_query_family(int d, int centres_per_axis, const std::vector<double>& bandwidths) {
  if (d < 1 || centres_per_axis < 1)
    throw UsageError("kernel queries: need d >= 1 and centres_per_axis >= 1 (got d = " + std::to_string(d) +
                     ", centres_per_axis = " + std::to_string(centres_per_axis) + ")");
  if (bandwidths.empty()) throw UsageError("kernel queries: no bandwidth given");
  std::size_t centres = 1;
  for (int a = 0; a < d; ++a) centres *= static_cast<std::size_t>(centres_per_axis);
  std::vector<KernelQuery> out;
  for (double sigma : bandwidths) {
    if (!(sigma > 0) || !std::isfinite(sigma))
      throw UsageError("kernel queries: bandwidth " + std::to_string(sigma) + ", expected a finite value > 0");
    for (std::size_t c = 0; c < centres; ++c) {
      KernelQuery q;
      q.bandwidth = sigma;
      q.centre.resize(static_cast<std::size_t>(d));
      std::size_t rest = c;
      for (int a = d - 1; a >= 0; --a) {
        const auto i = rest % static_cast<std::size_t>(centres_per_axis);
        rest /= static_cast<std::size_t>(centres_per_axis);
        q.centre[static_cast<std::size_t>(a)] = -1.0 + (2.0 * static_cast<double>(i) + 1.0) / centres_per_axis;
      }
      out.push_back(std::move(q));
    }
  }
  return out;
}

std::vector<double> exact_kernel_answers(const PointData& data, const std::vector<KernelQuery>& queries, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  std::vector<double> out(queries.size(), 0.0);
  const auto Q = static_cast<std::int64_t>(queries.size());
  // One query per iteration, summed in player order: the same bits for any thread count.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::int64_t q = 0; q < Q; ++q) {
    double s = 0;
    for (std::size_t i = 0; i < data.n; ++i) s += queries[static_cast<std::size_t>(q)](data.row(i));
    out[static_cast<std::size_t>(q)] = data.n ? s / static_cast<double>(data.n) : 0.0;
  }
  return out;
}

namespace {
// T_0(x) .. T_{t-1}(x) by the three-term recurrence (stable on [-1, 1]).
void chebyshev(double x, int t, double* out) {
  out[0] = 1;
  if (t > 1) out[1] = x;
  for (int r = 2; r < t; ++r) out[r] = 2 * x * out[r - 1] - out[r - 2];
}

// Tensor (row-major, last axis fastest) of shape `dims`: apply M (rows x dims[axis],
// row-major) along `axis`; dims[axis] becomes rows.
std::vector<double> contract(const std::vector<double>& in, std::vector<std::size_t>& dims, std::size_t axis,
                             const std::vector<double>& M, std::size_t rows) {
  std::size_t pre = 1, post = 1;
  for (std::size_t a = 0; a < axis; ++a) pre *= dims[a];
  for (std::size_t a = axis + 1; a < dims.size(); ++a) post *= dims[a];
  const std::size_t cols = dims[axis];
  std::vector<double> out(pre * rows * post, 0.0);
  for (std::size_t p = 0; p < pre; ++p)
    for (std::size_t r = 0; r < rows; ++r) {
      double* o = out.data() + (p * rows + r) * post;
      for (std::size_t c = 0; c < cols; ++c) {
        const double m = M[r * cols + c];
        const double* src = in.data() + (p * cols + c) * post;
        for (std::size_t q = 0; q < post; ++q) o[q] += m * src[q];
      }
    }
  dims[axis] = rows;
  return out;
}
}  // namespace

TrigonometricBasis::TrigonometricBasis(int d, int t, std::size_t queries, double max_bytes) : d_(d), t_(t) {
  if (d < 1) throw UsageError("trigonometric basis: dimension d = " + std::to_string(d) + ", expected d >= 1");
  if (t < 1) throw UsageError("trigonometric basis: degree t = " + std::to_string(t) + ", expected t >= 1");
  // Refuse before allocating: the coefficients of every query (t^d each), the quadrature grid
  // ((4t + 16)^d) and a player's values.
  const double terms = std::pow(static_cast<double>(t), d);
  const double grid = std::pow(4.0 * t + 16.0, d);
  const double bytes = 8.0 * (terms * (static_cast<double>(queries) + 2.0) + 2.0 * grid);
  if (!(bytes <= max_bytes) || terms > 1e15)
    throw ResourceError("trigonometric basis t^d = " + std::to_string(t) + "^" + std::to_string(d) + " = " +
                        std::to_string(terms) + " terms for " + std::to_string(queries) + " queries would need about " +
                        std::to_string(bytes / 1073741824.0) + " GiB, more than the limit of " +
                        std::to_string(max_bytes / 1073741824.0) + " GiB: lower t or d");
  terms_ = static_cast<std::size_t>(terms);
}

double TrigonometricBasis::value(std::size_t j, const double* x) const {
  std::size_t idx = j + 1;
  double v = 1;
  double T[64];
  for (int a = d_ - 1; a >= 0; --a) {
    const int r = static_cast<int>(idx % static_cast<std::size_t>(t_));
    idx /= static_cast<std::size_t>(t_);
    if (r == 0) continue;
    if (r < 64) {
      chebyshev(std::clamp(x[a], -1.0, 1.0), r + 1, T);
      v *= T[r];
    } else {
      v *= std::cos(r * std::acos(std::clamp(x[a], -1.0, 1.0)));
    }
  }
  return v;
}

void TrigonometricBasis::values(const double* x, double* out) const {
  std::vector<double> T(static_cast<std::size_t>(d_ * t_));
  for (int a = 0; a < d_; ++a) {
    if (t_ < 64) {
      chebyshev(std::clamp(x[a], -1.0, 1.0), t_, T.data() + a * t_);
    } else {
      const double th = std::acos(std::clamp(x[a], -1.0, 1.0));
      for (int r = 0; r < t_; ++r) T[static_cast<std::size_t>(a * t_ + r)] = std::cos(r * th);
    }
  }
  for (std::size_t j = 0; j < terms_; ++j) {
    std::size_t idx = j;
    double v = 1;
    for (int a = d_ - 1; a >= 0; --a) {
      v *= T[static_cast<std::size_t>(a * t_) + idx % static_cast<std::size_t>(t_)];
      idx /= static_cast<std::size_t>(t_);
    }
    out[j] = v;
  }
}

std::vector<double> TrigonometricBasis::coefficients(const std::function<double(const double*)>& f, int nodes) const {
  const int N = nodes > 0 ? std::max(nodes, t_) : 4 * t_ + 16;
  // Chebyshev-Gauss nodes x_k = cos(pi (k + 1/2) / N); c_r = (2 - [r = 0]) / N sum_k f(x_k) T_r(x_k)
  // per axis: the discrete cosine transform, exact for the truncation of a polynomial of degree < 2N - t.
  std::vector<double> node(static_cast<std::size_t>(N)), M(static_cast<std::size_t>(t_) * static_cast<std::size_t>(N));
  for (int k = 0; k < N; ++k) node[static_cast<std::size_t>(k)] = std::cos(std::numbers::pi * (k + 0.5) / N);
  for (int r = 0; r < t_; ++r)
    for (int k = 0; k < N; ++k)
      M[static_cast<std::size_t>(r * N + k)] = (r == 0 ? 1.0 : 2.0) / N * std::cos(r * std::numbers::pi * (k + 0.5) / N);
  std::size_t total = 1;
  for (int a = 0; a < d_; ++a) total *= static_cast<std::size_t>(N);
  std::vector<double> F(total), x(static_cast<std::size_t>(d_));
  for (std::size_t g = 0; g < total; ++g) {
    std::size_t idx = g;
    for (int a = d_ - 1; a >= 0; --a) {
      x[static_cast<std::size_t>(a)] = node[idx % static_cast<std::size_t>(N)];
      idx /= static_cast<std::size_t>(N);
    }
    F[g] = f(x.data());
  }
  std::vector<std::size_t> dims(static_cast<std::size_t>(d_), static_cast<std::size_t>(N));
  for (std::size_t a = 0; a < dims.size(); ++a) F = contract(F, dims, a, M, static_cast<std::size_t>(t_));
  return F;  // t^d, last variable fastest: the term order
}

double TrigonometricBasis::answer(const std::vector<double>& c, const std::vector<double>& sent_means) const {
  double s = c[0];
  for (std::size_t j = 0; j + 1 < terms_; ++j) s += c[j + 1] * sent_means[j];
  return s;
}

double TrigonometricBasis::approximation_error(const std::function<double(const double*)>& f,
                                               const std::vector<double>& c, int per_axis) const {
  const int G = per_axis > 1 ? per_axis : std::max(101, 8 * t_ + 1);
  std::vector<double> grid(static_cast<std::size_t>(G)), E(static_cast<std::size_t>(G) * static_cast<std::size_t>(t_));
  std::vector<double> T(static_cast<std::size_t>(t_));
  for (int g = 0; g < G; ++g) {
    grid[static_cast<std::size_t>(g)] = -1.0 + 2.0 * g / (G - 1);
    chebyshev(grid[static_cast<std::size_t>(g)], t_, T.data());
    for (int r = 0; r < t_; ++r) E[static_cast<std::size_t>(g * t_ + r)] = T[static_cast<std::size_t>(r)];
  }
  // p on the grid by sum factorisation: apply E (G x t) along each axis.
  std::vector<std::size_t> dims(static_cast<std::size_t>(d_), static_cast<std::size_t>(t_));
  std::vector<double> P = c;
  for (std::size_t a = 0; a < dims.size(); ++a) P = contract(P, dims, a, E, static_cast<std::size_t>(G));
  std::vector<double> x(static_cast<std::size_t>(d_));
  double worst = 0;
  for (std::size_t g = 0; g < P.size(); ++g) {
    std::size_t idx = g;
    for (int a = d_ - 1; a >= 0; --a) {
      x[static_cast<std::size_t>(a)] = grid[idx % static_cast<std::size_t>(G)];
      idx /= static_cast<std::size_t>(G);
    }
    worst = std::max(worst, std::abs(f(x.data()) - P[g]));
  }
  return worst;
}

std::vector<double> TrigonometricBasis::exact_means(const PointData& data) const {
  std::vector<double> sum(terms_, 0.0), v(terms_);
  for (std::size_t i = 0; i < data.n; ++i) {
    values(data.row(i), v.data());
    for (std::size_t j = 0; j < terms_; ++j) sum[j] += v[j];
  }
  std::vector<double> out(terms_ - 1);
  for (std::size_t j = 0; j + 1 < terms_; ++j) out[j] = data.n ? sum[j + 1] / static_cast<double>(data.n) : 0.0;
  return out;
}

SmoothProtocol parse_smooth_protocol(const std::string& name) {
  if (name == "bit") return SmoothProtocol::Bit;
  if (name == "laplace") return SmoothProtocol::Laplace;
  throw UsageError("smooth-query protocol '" + name + "': expected bit or laplace");
}

SmoothRelease ldp_trigonometric_queries(const PointData& data, const TrigonometricBasis& basis,
                                        const std::vector<std::vector<double>>& coefficients, double eps,
                                        SmoothProtocol protocol, std::uint64_t seed, int threads) {
  check_epsilon(eps);
  if (static_cast<int>(data.d) != basis.dimension())
    throw UsageError("trigonometric queries: data of dimension " + std::to_string(data.d) + ", basis of dimension " +
                     std::to_string(basis.dimension()));
  const std::size_t D = basis.sent();
  SmoothRelease out;
  if (D == 0) {  // t = 1: constant polynomials, nothing to send
    out.reports_per_player = 0;
  } else if (protocol == SmoothProtocol::Bit) {
    // Each player: one public term j, u = (phi_j(x) + 1) / 2 in [0, 1], one bit with eps.
    const VectorEstimate est = sampled_bit_average(
        data.n, D, eps, derive_seed(seed, 1), derive_seed(seed, 2),
        [&](std::uint64_t i, std::size_t j) { return 0.5 * (basis.value(j, data.row(i)) + 1.0); }, threads);
    out.sent_means.resize(D);
    for (std::size_t j = 0; j < D; ++j) out.sent_means[j] = 2 * est.mean[j] - 1;
    out.reports_per_player = 1;
  } else {
    // Each player: all D values, each on the lattice with discrete Laplace, eps / D each
    // (basic composition; the sensitivity of one lattice report is L, see LaplaceRandomizer).
    const VectorEstimate est = laplace_average(
        data.n, D, eps, derive_seed(seed, 3),
        [&](std::uint64_t i, std::span<double> u) {
          thread_local std::vector<double> all;
          all.resize(basis.terms());
          basis.values(data.row(i), all.data());
          for (std::size_t j = 0; j < u.size(); ++j) u[j] = 0.5 * (all[j + 1] + 1.0);
        },
        threads);
    out.sent_means.resize(D);
    for (std::size_t j = 0; j < D; ++j) out.sent_means[j] = 2 * est.mean[j] - 1;
    out.reports_per_player = D;
  }
  out.answers.resize(coefficients.size());
  for (std::size_t q = 0; q < coefficients.size(); ++q) out.answers[q] = basis.answer(coefficients[q], out.sent_means);
  return out;
}

std::vector<double> ldp_per_query_kernel_answers(const PointData& data, const std::vector<KernelQuery>& queries,
                                                 double eps, std::uint64_t seed, int threads) {
  check_epsilon(eps);
  const VectorEstimate est = sampled_bit_average(
      data.n, queries.size(), eps, derive_seed(seed, 1), derive_seed(seed, 2),
      [&](std::uint64_t i, std::size_t q) { return queries[q](data.row(i)); }, threads);
  return est.mean;
}

}  // namespace privrace::ldp
