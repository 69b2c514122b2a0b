#pragma once
// Private linear regression through the RACE surrogate loss (private-race paper, section 4,
// "Linear Regression"). Each record (x, y) becomes z = [x, 1, y]; for a model theta (with
// intercept b) the query is q = [theta, b, -1], so <z, q> = theta.x + b - y is the residual.
// The asymmetric signed-random-projection pair (SRP on z and on -z, p bits) has collision
// probability k(z, q) = (1 - t/pi)^p + (t/pi)^p with t = angle(z, q): an increasing function of
// |t - pi/2|, smallest (2^{1-p}) when the residual is 0 and growing monotonically with
// |<z, q>| / (|z| |q|). The surrogate loss L(theta) = sum_i k(z_i, q(theta)) is read from
// the sketch, and theta minimises it by derivative-free optimisation (NLopt): the sketched loss
// is piecewise constant in theta, so gradients are useless.
//
// Two placements of the pair (both estimate the same L):
//  * "insert": every record is inserted as z and -z, so it changes 2 cells a row:
//    L1 sensitivity 2R, noise scale 2R/eps; a query reads 1 cell a row.
//  * "query": records are inserted once (sensitivity R, noise R/eps); a query reads the
//    cells of q and of -q (the mirror code), so it sums 2 noisy cells a row.
// Per row the query-side noise variance is 2 (R/eps)^2 Var_1 against (2R/eps)^2 Var_1 for
// "insert": "query" has half the noise variance at the same epsilon.
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "privrace/core/types.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace {

struct SurrogateSpec {
  std::size_t rows = 1000;         // R
  std::size_t power = 4;           // SRP bits p; W = 2^p
  std::size_t width = 16;          // W (16 = 2^4 distinct codes)
  PairMode pair_mode = PairMode::Query;  // Insert | Query (parse_pair_mode reads the name)
  std::uint64_t seed = 1;
  int threads = 0;
};

// z = [x, 1, y] as float rows.
DenseMatrix surrogate_inputs(const Eigen::Ref<const DoubleMatrix>& x, const Eigen::VectorXd& y);

// The release parameters of the surrogate sketch: the angular_pair kernel, R, p, W, the pair mode
// and threads; spec.seed is the public hash seed (ReleaseParams::hash_seed).
ReleaseParams surrogate_params(const SurrogateSpec& spec);
// The exact surrogate sketch of z rows, built by the release API (release it per epsilon).
ExactSketch build_surrogate_exact(const DenseRef& z, const SurrogateSpec& spec);
// A copy of its exact counts (tests and diagnostics: never released as they are).
RaceSketch build_surrogate_sketch(const DenseRef& z, const SurrogateSpec& spec);

struct SurrogateFitOptions {
  int max_evaluations = 4000;
  double initial_step = 0.25;
  double x_tolerance = 1e-5;
  std::string algorithm = "sbplx";  // NLopt local derivative-free: sbplx | neldermead | cobyla | bobyqa
  int restarts = 1;                 // restarts from the best point with a smaller step
};

struct SurrogateFit {
  Eigen::VectorXd theta;  // d coefficients followed by the intercept
  double loss = 0;        // sketched surrogate at theta (mean over rows, not divided by N-hat)
  int evaluations = 0;
  std::string result;     // NLopt's stop reason
};

// Sketched surrogate loss at model (theta, b): mean over rows of the count(s) q reads.
double sketched_surrogate_loss(const RaceSketch& sketch, const Eigen::VectorXd& theta_with_intercept);
// Exact surrogate sum_i k(z_i, q) (tests and diagnostics).
double exact_surrogate_loss(const DenseRef& z, const Eigen::VectorXd& theta_with_intercept, std::size_t power);

// Minimises the sketched loss from `start` (d + 1 values; empty = zeros).
SurrogateFit fit_surrogate(const RaceSketch& sketch, const SurrogateFitOptions& opts,
                           const Eigen::VectorXd& start = Eigen::VectorXd());

// Predictions x theta + b.
Eigen::VectorXd predict_linear(const Eigen::Ref<const DoubleMatrix>& x, const Eigen::VectorXd& theta_with_intercept);
double mean_squared_error(const Eigen::VectorXd& predicted, const Eigen::VectorXd& truth);

}  // namespace privrace
