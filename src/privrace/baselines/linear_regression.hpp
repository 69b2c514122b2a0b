#pragma once
// Differentially private linear regression baselines of Yu-Xiang Wang, "Revisiting
// differentially private linear regression: optimal and adaptive prediction & estimation in
// unbounded domain" (UAI 2018): SSP, ObjPert, OPS, AdaSSP, AdaOPS, plus the non-private least
// squares and the trivial predictor used as reference lines.
//
// Every method assumes Wang's preprocessing (done by the regression task, not here): features
// standardised, each row scaled to unit norm (||x|| <= B_X = 1), y divided by max |y|
// (|y| <= B_Y = 1). Neighbours: add/remove one record (x, y).
//
// Noise calibration. Wang's algorithms fix the budget split and the structure of each release;
// every Gaussian release below takes its sigma from the analytic Gaussian mechanism
// (Balle & Wang 2018) for that release's (eps_i, delta_i) share and L2 sensitivity, which is
// exact for every eps > 0, instead of the closed-form sqrt(log(c/delta))/eps factors.
#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"

namespace privrace {

struct LinearModel {
  Eigen::VectorXd theta;
  nlohmann::json details = nlohmann::json::object();  // noise scales, lambda, ...
};

// argmin ||y - X theta||^2 (minimum-norm solution when X^T X is singular).
LinearModel least_squares(const DoubleMatrix& x, const Eigen::VectorXd& y);
// Predicts 0 everywhere (y is centred and scaled by the task).
LinearModel trivial_predictor(const DoubleMatrix& x);

LinearModel ssp(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng);
LinearModel adassp(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                   double rho = 0.05);
LinearModel objpert_linear(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta,
                           RandomSource& rng);
LinearModel ops(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                double rho = 0.05);
LinearModel adaops(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon, double delta, RandomSource& rng,
                   double rho = 0.05);

// Symmetric Gaussian matrix: diagonal N(0, sigma^2), off-diagonal N(0, sigma^2 / 2), i.e.
// sigma (Z + Z^T) / 2 with Z i.i.d. N(0, 1). Releasing A + E with A = X^T X is the Gaussian
// mechanism on the vector (A_ii, sqrt(2) A_ij for i < j) with noise sigma, whose L2 sensitivity
// is || x x^T ||_F = ||x||^2 <= B_X^2 (derivation in linear_regression.cpp).
Eigen::MatrixXd symmetric_gaussian(Eigen::Index d, double sigma, RandomSource& rng);

// min 1/2 t^T H t - g^T t subject to ||t|| <= radius, for symmetric positive definite H.
Eigen::VectorXd ball_constrained_quadratic(const Eigen::MatrixXd& h, const Eigen::VectorXd& g, double radius);

}  // namespace privrace
