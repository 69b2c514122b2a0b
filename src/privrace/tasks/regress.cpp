#include "privrace/tasks/regress.hpp"

#include <algorithm>
#include <cmath>
#include <nlopt.hpp>
#include <numbers>

#include "privrace/core/error.hpp"

namespace privrace {

DenseMatrix surrogate_inputs(const Eigen::Ref<const DoubleMatrix>& x, const Eigen::VectorXd& y) {
  if (y.size() != x.rows()) throw UsageError("surrogate_inputs: rows and targets differ in number");
  DenseMatrix z(x.rows(), x.cols() + 2);
  z.leftCols(x.cols()) = x.cast<Real>();
  z.col(x.cols()).setOnes();
  z.col(x.cols() + 1) = y.cast<Real>();
  return z;
}

ReleaseParams surrogate_params(const SurrogateSpec& spec) {
  ReleaseParams params;
  params.family.kernel = Kernel::AngularPair;
  params.family.power = spec.power;
  params.family.rows = spec.rows;
  params.family.pair_mode = spec.pair_mode;
  params.width = spec.width;
  params.threads = spec.threads;
  params.hash_seed = spec.seed;
  return params;
}

ExactSketch build_surrogate_exact(const DenseRef& z, const SurrogateSpec& spec) {
  return build_exact(surrogate_params(spec), MasterSeed::of(spec.seed, true), z);
}

RaceSketch build_surrogate_sketch(const DenseRef& z, const SurrogateSpec& spec) { return build_surrogate_exact(z, spec).counts(); }

namespace {
DenseMatrix query_row(const Eigen::VectorXd& theta_with_intercept) {
  DenseMatrix q(1, theta_with_intercept.size() + 1);
  for (Eigen::Index j = 0; j < theta_with_intercept.size(); ++j) q(0, j) = static_cast<Real>(theta_with_intercept(j));
  q(0, theta_with_intercept.size()) = -1.0f;  // the y coordinate of [theta, b, -1]
  return q;
}
}  // namespace

double sketched_surrogate_loss(const RaceSketch& sketch, const Eigen::VectorXd& theta_with_intercept) {
  const DenseMatrix q = query_row(theta_with_intercept);
  if (static_cast<std::size_t>(q.cols()) != sketch.family().dim())
    throw UsageError("surrogate loss: model has " + std::to_string(theta_with_intercept.size()) +
                     " values, the sketch expects " + std::to_string(sketch.family().dim() - 1));
  thread_local CodeMatrix codes;
  sketch.family().hash_dense(q, codes);
  const auto rows = sketch.row_estimates_single(codes.data());  // mirrored queries add the -q cell
  double s = 0;
  for (const double v : rows) s += v;
  return s / static_cast<double>(rows.size());
}

double exact_surrogate_loss(const DenseRef& z, const Eigen::VectorXd& theta_with_intercept, std::size_t power) {
  const DenseMatrix q = query_row(theta_with_intercept);
  const Eigen::VectorXd qd = q.row(0).cast<double>().transpose();
  const double qn = qd.norm();
  double s = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const Eigen::VectorXd zi = z.row(i).cast<double>().transpose();
    const double c = std::clamp(zi.dot(qd) / (zi.norm() * qn), -1.0, 1.0);
    const double u = std::acos(c) / std::numbers::pi;
    s += std::pow(1 - u, static_cast<double>(power)) + std::pow(u, static_cast<double>(power));
  }
  return s;
}

SurrogateFit fit_surrogate(const RaceSketch& sketch, const SurrogateFitOptions& opts, const Eigen::VectorXd& start) {
  const std::size_t n = sketch.family().dim() - 1;  // d coefficients + intercept
  nlopt::algorithm alg;
  if (opts.algorithm == "sbplx")
    alg = nlopt::LN_SBPLX;
  else if (opts.algorithm == "neldermead")
    alg = nlopt::LN_NELDERMEAD;
  else if (opts.algorithm == "cobyla")
    alg = nlopt::LN_COBYLA;
  else if (opts.algorithm == "bobyqa")
    alg = nlopt::LN_BOBYQA;
  else
    throw UsageError("unknown optimiser '" + opts.algorithm + "' (sbplx, neldermead, cobyla, bobyqa)");
  struct State {
    const RaceSketch* sketch;
    int evals = 0;
  } state{&sketch};
  auto objective = [](unsigned dim, const double* x, double* grad, void* data) -> double {
    (void)grad;  // derivative-free algorithms only
    auto* st = static_cast<State*>(data);
    ++st->evals;
    return sketched_surrogate_loss(*st->sketch, Eigen::Map<const Eigen::VectorXd>(x, dim));
  };
  std::vector<double> x(n, 0.0);
  if (start.size() == static_cast<Eigen::Index>(n))
    for (std::size_t j = 0; j < n; ++j) x[j] = start(static_cast<Eigen::Index>(j));
  else if (start.size() != 0)
    throw UsageError("fit_surrogate: start has the wrong size");
  SurrogateFit fit;
  double best = 0, step = opts.initial_step;
  for (int round = 0; round <= std::max(0, opts.restarts); ++round) {
    nlopt::opt opt(alg, static_cast<unsigned>(n));
    opt.set_min_objective(objective, &state);
    opt.set_initial_step(step);
    opt.set_xtol_abs(opts.x_tolerance);
    opt.set_maxeval(std::max(1, opts.max_evaluations / (std::max(0, opts.restarts) + 1)));
    nlopt::result r;
    try {
      r = opt.optimize(x, best);
    } catch (const nlopt::roundoff_limited&) {
      r = nlopt::ROUNDOFF_LIMITED;
      best = sketched_surrogate_loss(sketch, Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(n)));
    }
    fit.result = std::to_string(static_cast<int>(r));
    step *= 0.2;
  }
  fit.theta = Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(n));
  fit.loss = best;
  fit.evaluations = state.evals;
  return fit;
}

Eigen::VectorXd predict_linear(const Eigen::Ref<const DoubleMatrix>& x, const Eigen::VectorXd& theta_with_intercept) {
  const Eigen::Index d = x.cols();
  if (theta_with_intercept.size() == d) return x * theta_with_intercept;
  if (theta_with_intercept.size() != d + 1) throw UsageError("predict_linear: model size does not match the features");
  return (x * theta_with_intercept.head(d)).array() + theta_with_intercept(d);
}

double mean_squared_error(const Eigen::VectorXd& predicted, const Eigen::VectorXd& truth) {
  if (predicted.size() != truth.size() || truth.size() == 0) throw UsageError("mean_squared_error: sizes differ or empty");
  return (predicted - truth).squaredNorm() / static_cast<double>(truth.size());
}

}  // namespace privrace
