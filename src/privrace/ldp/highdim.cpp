#include "privrace/ldp/highdim.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

SparseSet parse_sparse_set(const std::string& name) {
  if (name == "l1_ball") return SparseSet::L1Ball;
  if (name == "simplex") return SparseSet::Simplex;
  throw UsageError("constraint set '" + name + "': expected l1_ball or simplex");
}

void project_simplex(Eigen::VectorXd& w, double r) {
  // Duchi, Shalev-Shwartz, Singer & Chandra 2008: threshold theta from the sorted values.
  std::vector<double> u(w.data(), w.data() + w.size());
  std::sort(u.begin(), u.end(), std::greater<>());
  double cum = 0, theta = 0;
  for (std::size_t j = 0; j < u.size(); ++j) {
    cum += u[j];
    const double t = (cum - r) / static_cast<double>(j + 1);
    if (u[j] - t > 0) theta = t;
  }
  for (Eigen::Index i = 0; i < w.size(); ++i) w(i) = std::max(w(i) - theta, 0.0);
}

void project_l1_ball(Eigen::VectorXd& w, double r) {
  if (w.lpNorm<1>() <= r) return;
  Eigen::VectorXd a = w.cwiseAbs();
  project_simplex(a, r);
  for (Eigen::Index i = 0; i < w.size(); ++i) w(i) = w(i) < 0 ? -a(i) : a(i);
}

namespace {
void project(Eigen::VectorXd& w, SparseSet set, double r) {
  if (set == SparseSet::L1Ball) project_l1_ball(w, r);
  else project_simplex(w, r);
}
}  // namespace

Eigen::VectorXd constrained_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, SparseSet set, double r,
                                          int iterations) {
  if (!(r > 0)) throw UsageError("constrained least squares: radius must be > 0 (the constraint set is empty)");
  // ||A||_2^2 by power iteration on A^T A.
  Eigen::VectorXd v = Eigen::VectorXd::Ones(A.cols()) / std::sqrt(static_cast<double>(A.cols()));
  double L = 1;
  for (int it = 0; it < 100; ++it) {
    const Eigen::VectorXd u = A.transpose() * (A * v);
    L = u.norm();
    if (L == 0) break;
    v = u / L;
  }
  const double step = 1.0 / std::max(2 * L, 1e-300);  // gradient of ||Aw - b||^2 is 2 A^T(Aw - b)
  Eigen::VectorXd w = Eigen::VectorXd::Zero(A.cols()), z = w, prev = w;
  if (set == SparseSet::Simplex) {
    w.setConstant(r / static_cast<double>(A.cols()));
    z = prev = w;
  }
  double t = 1;
  for (int it = 0; it < iterations; ++it) {
    Eigen::VectorXd next = z - step * 2 * (A.transpose() * (A * z - b));
    project(next, set, r);
    const double tn = (1 + std::sqrt(1 + 4 * t * t)) / 2;
    z = next + ((t - 1) / tn) * (next - w);
    prev = w;
    w = std::move(next);
    t = tn;
    if ((w - prev).norm() < 1e-13 * std::max(1.0, w.norm())) break;
  }
  return w;
}

Eigen::MatrixXd gaussian_projection(int m, int d, std::uint64_t seed) {
  if (m < 1 || d < 1) throw UsageError("projection: m and d must be >= 1");
  Eigen::MatrixXd P(m, d);
  SeededRandom rng(seed);
  const double s = 1 / std::sqrt(static_cast<double>(m));
  for (Eigen::Index i = 0; i < P.size(); ++i) P.data()[i] = s * sample_normal(rng);
  return P;
}

double gaussian_width(SparseSet set, int d, int samples, std::uint64_t seed) {
  SeededRandom rng(seed);
  double total = 0;
  for (int s = 0; s < samples; ++s) {
    double best = set == SparseSet::L1Ball ? 0.0 : -1e300;
    for (int i = 0; i < d; ++i) {
      const double g = sample_normal(rng);
      best = std::max(best, set == SparseSet::L1Ball ? std::abs(g) : g);
    }
    total += best;
  }
  return total / samples;
}

HighDimResult ldp_compressed_regression(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, int m, double eps,
                                        SparseSet set, double r, std::uint64_t seed, double z_max) {
  check_epsilon(eps);
  const Eigen::Index n = X.rows(), d = X.cols();
  const Eigen::MatrixXd Phi = gaussian_projection(m, static_cast<int>(d), derive_seed(seed, 1));  // public
  HighDimResult out;
  const bool noisy = std::isfinite(eps);
  const double b = noisy ? 2.0 * std::sqrt(static_cast<double>(m)) * z_max / (eps / 2) : 0.0;
  const double by = noisy ? 4.0 / eps : 0.0;
  out.noise_scale = b;
  Eigen::MatrixXd S = Eigen::MatrixXd::Zero(m, m);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(m);
  Eigen::MatrixXd Z(n, m);
  Eigen::VectorXd Y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    Eigen::VectorXd z = Phi * X.row(i).transpose();
    const double nz = z.norm();
    if (nz > z_max) {
      z *= z_max / nz;
      ++out.clipped;
    }
    double yi = std::clamp(y(i), -1.0, 1.0);
    if (noisy) {
      SeededRandom rng(derive_seed(derive_seed(seed, 2), static_cast<std::uint64_t>(i)));  // player i's stream
      for (Eigen::Index j = 0; j < m; ++j) z(j) += sample_laplace(rng, b);
      yi += sample_laplace(rng, by);
    }
    Z.row(i) = z.transpose();
    Y(i) = yi;
  }
  S = Z.transpose() * Z / static_cast<double>(n);
  S.diagonal().array() -= 2 * b * b;  // Var of Lap(b) is 2 b^2: unbiased second moment
  g = Z.transpose() * Y / static_cast<double>(n);
  // theta = argmin over Phi C of theta^T S theta - 2 g^T theta, with theta = Phi v, v in C
  // (accelerated projected gradient in v; S may be indefinite under noise: then a local
  // minimiser on the compact set).
  const Eigen::MatrixXd Q = Phi.transpose() * S * Phi;
  const Eigen::VectorXd c = Phi.transpose() * g;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Q, Eigen::EigenvaluesOnly);
  const double L = std::max(es.eigenvalues().cwiseAbs().maxCoeff(), 1e-12);
  Eigen::VectorXd v = Eigen::VectorXd::Zero(d), zv = v, prev = v;
  if (set == SparseSet::Simplex) v = zv = Eigen::VectorXd::Constant(d, r / static_cast<double>(d));
  double t = 1;
  for (int it = 0; it < 3000; ++it) {
    Eigen::VectorXd next = zv - (0.5 / L) * (2 * (Q * zv - c));
    project(next, set, r);
    const double tn = (1 + std::sqrt(1 + 4 * t * t)) / 2;
    zv = next + ((t - 1) / tn) * (next - v);
    prev = v;
    v = std::move(next);
    t = tn;
    if ((v - prev).norm() < 1e-12 * std::max(1.0, v.norm())) break;
  }
  const Eigen::VectorXd theta = Phi * v;
  out.w = constrained_least_squares(Phi, theta, set, r);
  return out;
}

Eigen::VectorXd ldp_sgd_constrained(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, double eps, SparseSet set,
                                    double r, std::uint64_t seed) {
  check_epsilon(eps);
  if (std::isinf(eps)) throw UsageError("ldp_sgd: needs a finite epsilon");
  const Eigen::Index n = X.rows(), d = X.cols();
  // Squared loss, ||x||_2 <= ||x||_1 <= 1 and ||w||_1 <= r: |grad| = 2 |<w,x> - y| ||x|| <= 2 (r + 1).
  const double L = 2 * (r + 1), B = djw_l2_scale(static_cast<std::size_t>(d), L, eps), D = 2 * r;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d), avg = w, g(d), z(d);
  if (set == SparseSet::Simplex) w.setConstant(r / static_cast<double>(d));
  SeededRandom rng(derive_seed(seed, 0x56dULL));  // interactive: one pass in player order
  for (Eigen::Index t = 0; t < n; ++t) {
    const double resid = X.row(t).dot(w) - std::clamp(y(t), -1.0, 1.0);
    g = 2 * resid * X.row(t).transpose();
    djw_l2_privatize(g.data(), static_cast<std::size_t>(d), L, eps, rng, z.data());
    w -= (D / (B * std::sqrt(static_cast<double>(t + 1)))) * z;
    project(w, set, r);
    avg += (w - avg) / static_cast<double>(t + 1);
  }
  return avg;
}

}  // namespace privrace::ldp
