#include "privrace/baselines/objective_perturbation.hpp"

#include <cmath>
#include <limits>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace {

double sample_gamma_integer(RandomSource& rng, int shape, double scale) {
  double s = 0;
  for (int i = 0; i < shape; ++i) s -= std::log(rng.open_unit());
  return s * scale;
}

namespace {
double log1pexp(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
double sigmoid(double z) { return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z)); }
}  // namespace

Eigen::VectorXd fit_regularised_logistic(const DoubleMatrix& x, const Eigen::VectorXd& y, double reg,
                                         const Eigen::VectorXd& b, int* steps) {
  const Eigen::Index n = x.rows(), d = x.cols();
  const double inv_n = 1.0 / static_cast<double>(n);
  auto objective = [&](const Eigen::VectorXd& w) {
    const Eigen::VectorXd m = (x * w).cwiseProduct(y);
    double f = 0;
    for (Eigen::Index i = 0; i < n; ++i) f += log1pexp(-m(i));
    return f * inv_n + 0.5 * reg * w.squaredNorm() + inv_n * b.dot(w);
  };
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d);
  double f = objective(w);
  int k = 0;
  for (; k < 100; ++k) {
    const Eigen::VectorXd m = (x * w).cwiseProduct(y);
    Eigen::VectorXd coef(n), curv(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double s = sigmoid(-m(i));  // -l'(m) = s(-m)
      coef(i) = -s * y(i);
      curv(i) = s * (1 - s);
    }
    const Eigen::VectorXd grad = inv_n * (x.transpose() * coef) + reg * w + inv_n * b;
    if (grad.norm() < 1e-10) break;
    Eigen::MatrixXd h = inv_n * (x.transpose() * curv.asDiagonal() * x);
    h.diagonal().array() += reg;  // reg > 0: positive definite
    const Eigen::VectorXd step = h.llt().solve(grad);
    double t = 1;
    Eigen::VectorXd next = w - step;
    double fn = objective(next);
    while (fn > f - 1e-4 * t * grad.dot(step) && t > 1e-10) {  // Armijo backtracking
      t *= 0.5;
      next = w - t * step;
      fn = objective(next);
    }
    const double change = f - fn;
    w = next;
    f = fn;
    if (change >= 0 && change < 1e-14 * (1 + std::abs(f))) break;
  }
  if (steps) *steps = k;
  return w;
}

ObjPertResult objective_perturbation_logistic(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon,
                                              double lambda, RandomSource& rng) {
  if (!(lambda > 0)) throw UsageError("objective perturbation needs lambda > 0 (Chaudhuri et al. 2011, Theorem 9)");
  const Eigen::Index n = x.rows(), d = x.cols();
  if (n < 1 || y.size() != n) throw UsageError("objective perturbation: rows and labels differ in number");
  for (Eigen::Index i = 0; i < n; ++i) {
    if (x.row(i).norm() > 1 + 1e-9)
      throw UsageError("objective perturbation needs ||x_i|| <= 1; row " + std::to_string(i) + " has norm " +
                       std::to_string(x.row(i).norm()));
    if (y(i) != 1.0 && y(i) != -1.0) throw UsageError("objective perturbation needs labels in {-1, +1}");
  }
  ObjPertResult res;
  Eigen::VectorXd b = Eigen::VectorXd::Zero(d);
  if (epsilon > 0 && std::isfinite(epsilon)) {
    constexpr double c = 0.25;  // bound on the logistic loss's second derivative
    const double nl = static_cast<double>(n) * lambda;
    double eps_p = epsilon - std::log(1 + 2 * c / nl + c * c / (nl * nl));
    double delta = 0;
    if (!(eps_p > 0)) {
      delta = c / (static_cast<double>(n) * std::expm1(epsilon / 4)) - lambda;
      eps_p = epsilon / 2;
    }
    // Density ~ exp(-eps' ||b|| / 2): in polar form the norm has density ~ r^{d-1} e^{-eps' r / 2},
    // i.e. Gamma(d, 2 / eps'), and the direction is uniform (a normalised Gaussian vector).
    const double norm = sample_gamma_integer(rng, static_cast<int>(d), 2 / eps_p);
    Eigen::VectorXd dir(d);
    for (Eigen::Index j = 0; j < d; ++j) dir(j) = sample_normal(rng);
    b = dir.normalized() * norm;
    res.epsilon_prime = eps_p;
    res.extra_reg = delta;
    res.noise_norm = norm;
  } else {
    res.epsilon_prime = std::numeric_limits<double>::infinity();
  }
  res.w = fit_regularised_logistic(x, y, lambda + res.extra_reg, b, &res.newton_steps);
  return res;
}

Eigen::MatrixXd OneVsRestResult::weights() const {
  if (fits.empty()) return {};
  Eigen::MatrixXd w(fits[0].w.size(), static_cast<Eigen::Index>(fits.size()));
  for (std::size_t c = 0; c < fits.size(); ++c) w.col(static_cast<Eigen::Index>(c)) = fits[c].w;
  return w;
}

OneVsRestResult objective_perturbation_one_vs_rest(const DoubleMatrix& x, const std::vector<int>& labels,
                                                   std::size_t classes, double epsilon, double lambda, RandomSource& rng) {
  if (classes < 2) throw UsageError("one-vs-rest objective perturbation needs at least 2 classes");
  if (labels.size() != static_cast<std::size_t>(x.rows()))
    throw UsageError("one-vs-rest objective perturbation: rows and labels differ in number");
  for (const int c : labels)
    if (c < 0 || static_cast<std::size_t>(c) >= classes)
      throw UsageError("one-vs-rest objective perturbation: label " + std::to_string(c) + " outside 0.." +
                       std::to_string(classes - 1));
  OneVsRestResult res;
  const bool priv = epsilon > 0 && std::isfinite(epsilon);
  // Sequential composition over the K problems (derivation in the header).
  res.epsilon_per_class = priv ? epsilon / static_cast<double>(classes) : std::numeric_limits<double>::infinity();
  Eigen::VectorXd y(x.rows());
  for (std::size_t c = 0; c < classes; ++c) {
    for (Eigen::Index i = 0; i < x.rows(); ++i) y(i) = labels[static_cast<std::size_t>(i)] == static_cast<int>(c) ? 1.0 : -1.0;
    res.fits.push_back(objective_perturbation_logistic(x, y, priv ? res.epsilon_per_class : epsilon, lambda, rng));
  }
  return res;
}

}  // namespace privrace
