#include "privrace/baselines/linear_regression.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace {

namespace {

void check_inputs(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta) {
  if (x.rows() != y.size() || x.rows() == 0) throw UsageError("linear regression: rows and targets differ in number");
  if (!(epsilon > 0)) throw UsageError("linear regression: epsilon must be positive");
  if (!(delta > 0 && delta < 1)) throw UsageError("linear regression: 0 < delta < 1 needed");
  // Wang's bounds B_X = B_Y = 1; a small tolerance for float rounding of the preprocessing.
  if (x.rowwise().norm().maxCoeff() > 1 + 1e-6) throw UsageError("linear regression: rows must have norm <= 1");
  if (y.cwiseAbs().maxCoeff() > 1 + 1e-6) throw UsageError("linear regression: targets must satisfy |y| <= 1");
}

Eigen::VectorXd gaussian_vector(Eigen::Index d, double sigma, RandomSource& rng) {
  Eigen::VectorXd v(d);
  for (Eigen::Index i = 0; i < d; ++i) v(i) = sigma * sample_normal(rng);
  return v;
}

// Positive root of a s^2 + b s + c = 0 (a, b > 0, c < 0), computed without cancellation.
double positive_root(double a, double b, double c) {
  if (!(c < 0)) return 0;
  return -2 * c / (b + std::sqrt(b * b - 4 * a * c));
}

// C1 of Wang's OPS analysis: (d/2 + sqrt(d log(1/rho)) + log(1/rho)) log(2/delta) / eps^2.
double ops_c1(double eps, double delta, double rho, double d) {
  const double lr = std::log(1 / rho);
  return (d / 2 + std::sqrt(d * lr) + lr) * std::log(2 / delta) / (eps * eps);
}

// One posterior sample theta ~ N(H^{-1} X^T y, (gamma H)^{-1}), H = X^T X + lambda I = L L^T:
// theta = mean + L^{-T} z / sqrt(gamma) has covariance L^{-T} L^{-1} / gamma = (gamma H)^{-1}.
Eigen::VectorXd posterior_sample(const Eigen::MatrixXd& xtx, const Eigen::VectorXd& xty, double lambda,
                                 double sqrt_gamma, RandomSource& rng, Eigen::VectorXd* mean_out = nullptr) {
  Eigen::MatrixXd h = xtx;
  h.diagonal().array() += lambda;
  const Eigen::LLT<Eigen::MatrixXd> llt(h);
  if (llt.info() != Eigen::Success) throw Error("OPS: X^T X + lambda I is not positive definite");
  const Eigen::VectorXd mean = llt.solve(xty);
  if (mean_out) *mean_out = mean;
  const Eigen::VectorXd z = gaussian_vector(xtx.rows(), 1.0, rng);
  return mean + llt.matrixU().solve(z) / sqrt_gamma;  // U = L^T
}

}  // namespace

Eigen::MatrixXd symmetric_gaussian(Eigen::Index d, double sigma, RandomSource& rng) {
  // Sensitivity: adding x changes A by x x^T. In the scaled coordinates (A_ii, sqrt 2 A_ij),
  // the change has squared norm sum_i x_i^4 + 2 sum_{i<j} x_i^2 x_j^2 = ||x||^4, and the noise
  // there is i.i.d. N(0, sigma^2) (sqrt 2 times an N(0, sigma^2/2) off-diagonal entry).
  Eigen::MatrixXd e(d, d);
  for (Eigen::Index i = 0; i < d; ++i) {
    e(i, i) = sigma * sample_normal(rng);
    for (Eigen::Index j = i + 1; j < d; ++j) e(i, j) = e(j, i) = sigma * sample_normal(rng) / std::sqrt(2.0);
  }
  return e;
}

Eigen::VectorXd ball_constrained_quadratic(const Eigen::MatrixXd& h, const Eigen::VectorXd& g, double radius) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
  const Eigen::VectorXd lam = es.eigenvalues();
  const Eigen::VectorXd c = es.eigenvectors().transpose() * g;
  auto norm_at = [&](double mu) { return (c.array() / (lam.array() + mu)).matrix().norm(); };
  if (lam.minCoeff() > 0 && norm_at(0) <= radius) return es.eigenvectors() * (c.array() / lam.array()).matrix();
  // KKT: (H + mu I) t = g with mu >= 0 and ||t|| = radius; ||t(mu)|| decreases in mu.
  double lo = std::max(0.0, -lam.minCoeff()) + 1e-15, hi = lo + 1;
  while (norm_at(hi) > radius) hi = 2 * hi + 1;
  for (int it = 0; it < 200 && hi - lo > 1e-14 * (1 + hi); ++it) {
    const double mid = 0.5 * (lo + hi);
    (norm_at(mid) > radius ? lo : hi) = mid;
  }
  return es.eigenvectors() * (c.array() / (lam.array() + hi)).matrix();
}

LinearModel least_squares(const DoubleMatrix& x, const Eigen::VectorXd& y) {
  LinearModel m;
  const Eigen::MatrixXd xd = x;
  m.theta = xd.completeOrthogonalDecomposition().solve(y);
  return m;
}

LinearModel trivial_predictor(const DoubleMatrix& x) {
  LinearModel m;
  m.theta = Eigen::VectorXd::Zero(x.cols());
  return m;
}

// SSP (sufficient statistics perturbation; Vu & Slavkovic 2009, Wang 2018 section 3):
// release X^T X and X^T y together with one Gaussian mechanism, then solve.
// Sensitivity: one record adds (x x^T, x y); in the scaled coordinates of symmetric_gaussian
// the squared L2 change is ||x||^4 + ||x||^2 y^2 <= B_X^4 + B_X^2 B_Y^2 = 2, so l2 = sqrt 2.
LinearModel ssp(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng) {
  check_inputs(x, y, epsilon, delta);
  const Eigen::Index d = x.cols();
  const double sigma = analytic_gaussian_sigma(epsilon, delta, std::sqrt(2.0));
  const Eigen::MatrixXd xtx = Eigen::MatrixXd(x.transpose() * x) + symmetric_gaussian(d, sigma, rng);
  const Eigen::VectorXd xty = x.transpose() * y + gaussian_vector(d, sigma, rng);
  LinearModel m;
  m.theta = xtx.ldlt().solve(xty);  // the noisy matrix may be indefinite: LDLT still solves
  m.details = {{"sigma", sigma}};
  return m;
}

// AdaSSP (Wang 2018, Algorithm 2): three releases at (eps/3, delta/3) each.
//  1. lambda_min(X^T X): Weyl's inequality, adding x x^T moves every eigenvalue by at most
//     ||x||^2 <= 1 -> l2 sensitivity 1. Released shifted down so it is a lower bound w.h.p.
//  2. X^T X: symmetric Gaussian, sensitivity ||x||^2 <= 1.  3. X^T y: sensitivity ||x|| |y| <= 1.
// Ridge lambda = max(0, sigma sqrt(d log(2 d^2 / rho)) - lambda_min~): just enough to keep the
// noisy matrix well conditioned with probability 1 - rho (Wang's bound on ||E||_2, with his
// sqrt(log(6/delta)) / (eps/3) replaced by the calibrated sigma).
LinearModel adassp(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                   double rho) {
  check_inputs(x, y, epsilon, delta);
  const Eigen::Index d = x.cols();
  const double dd = static_cast<double>(d);
  const double sigma = analytic_gaussian_sigma(epsilon / 3, delta / 3, 1.0);
  const Eigen::MatrixXd xtx = x.transpose() * x;
  const Eigen::VectorXd xty = x.transpose() * y;
  const double lmin = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(xtx, Eigen::EigenvaluesOnly).eigenvalues()(0);
  const double logsod = std::log(6 / delta);
  const double lmin_priv = std::max(0.0, lmin + sigma * sample_normal(rng) - sigma * std::sqrt(logsod));
  const double lambda = std::max(0.0, sigma * std::sqrt(dd * std::log(2 * dd * dd / rho)) - lmin_priv);
  Eigen::MatrixXd h = xtx + symmetric_gaussian(d, sigma, rng);
  h.diagonal().array() += lambda;
  const Eigen::VectorXd g = xty + gaussian_vector(d, sigma, rng);
  LinearModel m;
  m.theta = h.ldlt().solve(g);
  m.details = {{"sigma", sigma}, {"lambda", lambda}, {"lambda_min_private", lmin_priv}};
  return m;
}

// ObjPert for linear regression (Kifer, Smith & Thakurta 2012, Algorithm 1, as Wang 2018 runs
// it): minimise sum_i 1/2 (y_i - x_i.t)^2 + (Delta/2) ||t||^2 + b.t over ||t|| <= 1.
// On that ball the per-record gradient is bounded by zeta = B_X (B_X + B_Y) = 2 and the
// Hessian x x^T has rank 1 and eigenvalue <= beta = B_X^2 = 1. KST's conditions: Delta >= 2 beta / eps,
// b ~ N(0, sigma^2 I) with sigma = zeta sqrt(8 log(2/delta) + 4 eps) / eps for replace-one
// neighbours; add/remove changes the gradient sum by one term (zeta instead of 2 zeta), so
// sigma is halved, as Wang does.
LinearModel objpert_linear(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta,
                           RandomSource& rng) {
  check_inputs(x, y, epsilon, delta);
  const Eigen::Index d = x.cols();
  constexpr double zeta = 2.0, beta = 1.0;
  const double reg = 2 * beta / epsilon;
  const double sigma = zeta * std::sqrt(8 * std::log(2 / delta) + 4 * epsilon) / (2 * epsilon);
  Eigen::MatrixXd h = x.transpose() * x;
  h.diagonal().array() += reg;
  const Eigen::VectorXd g = x.transpose() * y - gaussian_vector(d, sigma, rng);
  LinearModel m;
  m.theta = ball_constrained_quadratic(h, g, 1.0);
  m.details = {{"sigma", sigma}, {"regulariser", reg}};
  return m;
}

// OPS (one posterior sample, Wang 2015/2018): sample from N(ridge solution, (gamma H)^{-1}).
// lambda trades the prediction error of the ridge bias against the sampling noise
// (Wang's balanced choice); theta is then confined to ||theta|| <= min(sqrt(n / (2 lambda)),
// n / lambda) (the ridge solution's norm bound for |y| <= 1), the log-density's Lipschitz
// constant on it is L = B_X (B_X theta_bound + B_Y), and gamma solves Wang's privacy equation
//   eps = (1 + log(2/delta)) B_X^2 / (2 lambda) + sqrt(gamma) L sqrt(log(2/delta) / lambda)
//         + gamma L^2 / (lambda + B_X^2).
LinearModel ops(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                double rho) {
  check_inputs(x, y, epsilon, delta);
  const double n = static_cast<double>(x.rows()), d = static_cast<double>(x.cols());
  const double c1 = ops_c1(std::min(epsilon / 2, std::sqrt(epsilon / 2)), delta, rho, d);
  double lambda = std::cbrt(c1 * n / 2);
  lambda = std::max(lambda, (1 + std::log(2 / delta)) / epsilon);  // keeps the constant term below eps / 2
  const double theta_bound = std::min(std::sqrt(n / (2 * lambda)), n / lambda);
  const double lip = theta_bound + 1;
  const double a = lip * lip / (lambda + 1), b = lip * std::sqrt(std::log(2 / delta) / lambda);
  const double c = (1 + std::log(2 / delta)) / (2 * lambda) - epsilon;
  const double sqrt_gamma = positive_root(a, b, c);
  const Eigen::MatrixXd xtx = x.transpose() * x;
  const Eigen::VectorXd xty = x.transpose() * y;
  LinearModel m;
  m.theta = posterior_sample(xtx, xty, lambda, sqrt_gamma, rng);
  m.details = {{"lambda", lambda}, {"gamma", sqrt_gamma * sqrt_gamma}, {"lipschitz", lip}};
  return m;
}

// AdaOPS (Wang 2018, Algorithm 3): eps/4 releases lambda_min (as in AdaSSP), eps/4 a private
// upper bound of the local Lipschitz constant log(B_Y + B_X ||theta_ridge||), eps/2 the OPS
// sample; delta/3 each.
//  * The ridge lambda minimises Wang's bound C1 (1 + 1/h)^{2 C2} / h + t, h = t + lambda_min~,
//    over t >= lambda_target (the floor that keeps the data-independent term of the OPS
//    privacy equation below half of its budget).
//  * log(1 + ||theta_ridge(lambda)||) has sensitivity log(1 + B_X^2 / h) (Wang's Lemma), so
//    it is released with that l2 sensitivity and shifted up to an upper bound w.h.p.
LinearModel adaops(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                   double rho) {
  check_inputs(x, y, epsilon, delta);
  const double n = static_cast<double>(x.rows()), d = static_cast<double>(x.cols());
  const Eigen::MatrixXd xtx = x.transpose() * x;
  const Eigen::VectorXd xty = x.transpose() * y;
  const double logsod = std::log(6 / delta);
  const double lmin = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(xtx, Eigen::EigenvaluesOnly).eigenvalues()(0);
  const double s1 = analytic_gaussian_sigma(epsilon / 4, delta / 3, 1.0);
  const double lmin_priv = std::max(0.0, lmin + s1 * sample_normal(rng) - s1 * std::sqrt(logsod));
  constexpr double alpha = 0.5;
  const double lambda_target = std::max(0.0, (1 + logsod) / (2 * (epsilon / 2 * alpha)) - lmin_priv);
  const double eps_bar = positive_root(0.5 * logsod, 1.0, -epsilon / 2 * (1 - alpha));
  const double c1 = ops_c1(eps_bar, delta / 3, rho, d);
  const double c2 = std::log(2 / (delta / 3)) / (epsilon / 4);
  auto log_bound = [&](double t) {  // log of C1 (1 + 1/h)^{2 C2} / h, h = t + lambda_min~
    const double h = t + lmin_priv;
    return std::log(c1) + 2 * c2 * std::log1p(1 / h) - std::log(h);
  };
  auto objective = [&](double t) {
    const double lb = log_bound(t);
    return lb > 700 ? std::numeric_limits<double>::infinity() : std::exp(lb) + t;
  };
  // 1-D minimisation: a log-spaced scan, then golden-section refinement around the best point.
  const double t0 = std::max(lambda_target, 1e-8);
  double best_t = t0, best_f = objective(t0);
  for (int k = 1; k <= 400; ++k) {
    const double t = t0 * std::pow(10.0, 12.0 * k / 400);
    const double f = objective(t);
    if (f < best_f) best_f = f, best_t = t;
  }
  {
    double lo = std::max(t0, best_t / std::pow(10.0, 0.03)), hi = best_t * std::pow(10.0, 0.03);
    const double g = (std::sqrt(5.0) - 1) / 2;
    for (int it = 0; it < 100; ++it) {
      const double a1 = hi - g * (hi - lo), b1 = lo + g * (hi - lo);
      if (objective(a1) < objective(b1))
        hi = b1;
      else
        lo = a1;
    }
    const double mid = 0.5 * (lo + hi);
    if (objective(mid) < best_f) best_t = mid;
  }
  const double lambda = best_t;
  Eigen::MatrixXd h = xtx;
  h.diagonal().array() += lambda;
  const Eigen::VectorXd theta_ridge = h.llt().solve(xty);
  const double hh = lambda + lmin_priv;
  const double s2 = analytic_gaussian_sigma(epsilon / 4, delta / 3, std::log1p(1 / hh));
  const double log_lip = std::log1p(theta_ridge.norm()) + s2 * sample_normal(rng) + s2 * std::sqrt(logsod);
  const double lip = std::min(std::exp(log_lip), 1 + std::sqrt(2 * std::sqrt(n) / hh));
  const double a = lip * lip / (2 * (hh + 1)), b = std::sqrt(lip * lip * logsod / hh);
  const double c = (1 + logsod) / (2 * hh) - epsilon / 2;
  const double sqrt_gamma = positive_root(a, b, c);
  LinearModel m;
  m.theta = posterior_sample(xtx, xty, lambda, std::max(sqrt_gamma, 1e-300), rng);
  m.details = {{"lambda", lambda}, {"gamma", sqrt_gamma * sqrt_gamma}, {"lipschitz", lip},
               {"lambda_min_private", lmin_priv}};
  return m;
}

}  // namespace privrace
