#include "privrace/baselines/pfda.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

PfdaRelease::PfdaRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const PfdaOptions& opt)
    : dom_(dom), G_(opt.grid) {
  if (train.cols() != 1) throw UsageError("pfda: 1-dimensional data only");
  if (!(opt.phi > 0)) throw UsageError("pfda: phi must be positive");
  const int G = G_;
  const double rho = opt.rho > 0 ? opt.rho : spec.bandwidth / dom.span();
  Eigen::MatrixXd A(G, G);
#pragma omp parallel for schedule(static)
  for (int a = 0; a < G; ++a)
    for (int b = 0; b < G; ++b) {
      const double diff = (a - b) / static_cast<double>(G);
      A(a, b) = std::exp(-diff * diff / (2 * rho * rho)) / G;
    }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(A);  // ascending eigenvalues
  const Eigen::VectorXd& ev = es.eigenvalues();
  const double top = ev(G - 1);
  for (int j = G - 1; j >= 0 && static_cast<int>(tau_.size()) < opt.max_eigenpairs; --j) {
    if (ev(j) <= 1e-12 * top) break;
    tau_.push_back(ev(j));
  }
  const int J = static_cast<int>(tau_.size());
  V_.resize(G, J);
  for (int j = 0; j < J; ++j) V_.col(j) = es.eigenvectors().col(G - 1 - j) * std::sqrt(static_cast<double>(G));

  DoubleMatrix grid(G, 1);
  for (int g = 0; g < G; ++g) grid(g, 0) = dom.from_unit((g + 0.5) / G);
  const DenseMatrix clipped = clip_to_domain(train, dom).cast<Real>();
  const std::vector<double> F = kde_at(clipped, grid, spec);
  const Eigen::VectorXd Fv = Eigen::Map<const Eigen::VectorXd>(F.data(), G);
  const Eigen::VectorXd proj = V_.transpose() * Fv / G;  // <F, v_j>
  smooth_coef_.resize(static_cast<std::size_t>(J));
  double maxfac = 0;
  for (int j = 0; j < J; ++j) {
    smooth_coef_[static_cast<std::size_t>(j)] = tau_[static_cast<std::size_t>(j)] / (tau_[static_cast<std::size_t>(j)] + opt.phi) * proj(j);
    maxfac = std::max(maxfac, std::sqrt(tau_[static_cast<std::size_t>(j)]) / (tau_[static_cast<std::size_t>(j)] + opt.phi));
  }
  // M_X = sup_x ||k(x, .)||_{L2[0,1]}, over a public grid of x.
  double mx = 0;
#pragma omp parallel for reduction(max : mx) schedule(static)
  for (int xi = 0; xi <= 1024; ++xi) {
    const double x = dom.from_unit(xi / 1024.0);
    double s = 0;
    for (int g = 0; g < G; ++g) {
      const double k = kernel_value(spec, &x, &grid(g, 0), 1);
      s += k * k;
    }
    mx = std::max(mx, std::sqrt(s / G));
  }
  delta_h_ = 2.0 * 1.01 * mx / static_cast<double>(train.rows()) * maxfac;
}

double PfdaRelease::sigma(double epsilon, double delta) const {
  if (epsilon <= 1.0) return delta_h_ * std::sqrt(2.0 * std::log(2.0 / delta)) / epsilon;
  return analytic_gaussian_sigma(epsilon, delta, delta_h_);
}

std::vector<double> PfdaRelease::release(double epsilon, double delta, RandomSource* rng) const {
  const int J = static_cast<int>(tau_.size());
  Eigen::VectorXd coef(J);
  const double s = rng ? sigma(epsilon, delta) : 0.0;
  for (int j = 0; j < J; ++j) {
    coef(j) = smooth_coef_[static_cast<std::size_t>(j)];
    if (rng) coef(j) += s * std::sqrt(tau_[static_cast<std::size_t>(j)]) * sample_normal(*rng);
  }
  const Eigen::VectorXd f = V_ * coef;
  return std::vector<double>(f.data(), f.data() + f.size());
}

std::vector<double> PfdaRelease::evaluate(const std::vector<double>& on_grid, const DenseRef& queries) const {
  std::vector<double> out(static_cast<std::size_t>(queries.rows()));
  for (Eigen::Index q = 0; q < queries.rows(); ++q) {
    const double pos = dom_.to_unit(queries(q, 0)) * G_ - 0.5;
    const int a = std::clamp(static_cast<int>(std::floor(pos)), 0, G_ - 1);
    const int b = std::min(a + 1, G_ - 1);
    const double f = std::clamp(pos - a, 0.0, 1.0);
    out[static_cast<std::size_t>(q)] = (1 - f) * on_grid[static_cast<std::size_t>(a)] + f * on_grid[static_cast<std::size_t>(b)];
  }
  return out;
}

}  // namespace privrace::baselines
