#pragma once
// Private functional data analysis (Mirshani, Reimherr & Slavković, "Formal Privacy for
// Functional Data with Gaussian Perturbations", ICML 2019) releasing the 1-D KDE.
//
// Each record contributes the function X_x(t) = k(x, t) on [0, 1] (data scaled through the
// public domain); their mean is F = f_D. PFDA's mean estimate in the RKHS H of a covariance
// kernel C (here Gaussian, C(s, t) = exp(-(s - t)^2 / (2 rho^2))) is the penalised fit
//   mu_hat = argmin (1/N) sum ||X_x - mu||^2_{L2} + phi ||mu||^2_H
//          = sum_j tau_j / (tau_j + phi) <F, v_j> v_j,
// with (tau_j, v_j) the eigenpairs of C's integral operator (Nyström on G grid points; all
// eigenpairs above 1e-12 tau_1, up to `max_eigenpairs` -- not one). Its H-sensitivity:
//   ||mu_hat(D) - mu_hat(D')||_H^2 = sum_j tau_j / (tau_j + phi)^2 <delta, v_j>^2
//                                  <= max_j tau_j / (tau_j + phi)^2 ||delta||^2_{L2},
// ||delta||_{L2} <= 2 M_X / N (replace one; add/remove gives 2 M_X / (N + 1)), M_X =
// sup_x ||k(x, .)||_{L2} (public, computed numerically, <= 1). So Delta = (2 M_X / N)
// max_j sqrt(tau_j) / (tau_j + phi) (<= M_X / (N sqrt(phi)), the paper's bound).
// Release: mu_hat + sigma Z, Z = sum_j sqrt(tau_j) xi_j v_j a Gaussian process with covariance
// C, sigma = Delta c(delta) / eps, c(delta) = sqrt(2 ln(2/delta)) (their Theorem, eps <= 1);
// for eps > 1, where that bound is not proven, the analytic Gaussian calibration for the same
// Mahalanobis sensitivity Delta (Balle & Wang 2018).
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {

struct PfdaOptions {
  double phi = 0.01;
  double rho = 0;              // covariance range in [0,1] units; 0 = kernel bandwidth / span
  int grid = 1000;             // G
  int max_eigenpairs = 400;
};

class PfdaRelease {
 public:
  PfdaRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const PfdaOptions& opt);
  double sensitivity() const { return delta_h_; }
  double sigma(double epsilon, double delta) const;
  // Released function on the grid (noise-free smoothed estimate if rng == nullptr).
  std::vector<double> release(double epsilon, double delta, RandomSource* rng) const;
  // Linear interpolation of grid values at the queries.
  std::vector<double> evaluate(const std::vector<double>& on_grid, const DenseRef& queries) const;
  int eigenpairs() const { return static_cast<int>(tau_.size()); }

 private:
  Domain dom_;
  int G_ = 0;
  std::vector<double> tau_;
  Eigen::MatrixXd V_;          // G x J eigenfunctions on the grid, int v_j^2 = 1
  std::vector<double> smooth_coef_;  // tau/(tau+phi) <F, v_j>
  double delta_h_ = 0;
};

}  // namespace privrace::baselines
