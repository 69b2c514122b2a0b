// RACE surrogate-loss regression and Wang's (2018) private linear regression baselines:
// real properties, seeded and deterministic.
#include <gtest/gtest.h>

#include <cmath>

#include "privrace/baselines/linear_regression.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/tasks/regress.hpp"

namespace privrace {
namespace {

// Rows of unit norm, y = x.theta + b + noise_sd N(0, 1), scaled so |y| <= 1.
void linear_data(std::size_t n, const Eigen::VectorXd& theta, double b, double noise_sd, std::uint64_t seed,
                 DoubleMatrix& x, Eigen::VectorXd& y) {
  SeededRandom rng(seed);
  const Eigen::Index d = theta.size();
  x.resize(static_cast<Eigen::Index>(n), d);
  y.resize(static_cast<Eigen::Index>(n));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < d; ++j) x(i, j) = sample_normal(rng);
    x.row(i).normalize();
    y(i) = x.row(i).dot(theta) + b + noise_sd * sample_normal(rng);
  }
}

TEST(SurrogateRegression, MinimiserIsCloseToLeastSquaresOnNoiselessData) {
  Eigen::VectorXd theta(3);  // dynamic sizes: fixed-size comma-init trips GCC 12's -Warray-bounds at -O3
  theta << 0.5, -0.3, 0.2;
  const double b = 0.1;
  DoubleMatrix x;
  Eigen::VectorXd y;
  linear_data(4000, theta, b, 0.0, 1, x, y);
  const DenseMatrix z = surrogate_inputs(x, y);
  Eigen::VectorXd truth(4);
  truth << 0.5, -0.3, 0.2, b;
  // The exact surrogate is smallest at the exact fit.
  const double at_truth = exact_surrogate_loss(z, truth, 4);
  for (int j = 0; j < 4; ++j)
    for (const double h : {-0.1, 0.1}) {
      Eigen::VectorXd t = truth;
      t(j) += h;
      EXPECT_GT(exact_surrogate_loss(z, t, 4), at_truth);
    }
  // The sketched loss is the exact surrogate plus LSH estimation error (and the column hash's
  // collisions among the 16 codes). Near its minimum the surrogate is flat
  // (k = 1/8 + 3 delta^2 + ..., delta = cos(angle)/pi), so with R rows the sketched minimiser
  // only lands near the truth; R = 4000 keeps it within 0.25 and the fit explains > 75% of var(y).
  const double var_y = (y.array() - y.mean()).square().mean();
  for (const std::string mode : {"query", "insert"}) {
    SurrogateSpec spec;
    spec.pair_mode = parse_pair_mode(mode);
    spec.rows = 4000;
    spec.seed = 3;
    const RaceSketch sketch = build_surrogate_sketch(z, spec);
    SurrogateFitOptions fo;
    fo.algorithm = "bobyqa";
    const SurrogateFit fit = fit_surrogate(sketch, fo);
    EXPECT_LT((fit.theta - truth).norm(), 0.25) << mode << ": " << fit.theta.transpose();
    EXPECT_LT(mean_squared_error(predict_linear(x, fit.theta), y), 0.25 * var_y) << mode;
  }
}

TEST(SurrogateRegression, SketchedLossTracksTheExactSurrogate) {
  Eigen::VectorXd theta(2);
  theta << 0.6, -0.4;
  DoubleMatrix x;
  Eigen::VectorXd y;
  linear_data(3000, theta, 0.0, 0.05, 2, x, y);
  const DenseMatrix z = surrogate_inputs(x, y);
  for (const std::vector<double>& tv : std::vector<std::vector<double>>{{0.6, -0.4, 0.0}, {0, 0, 0}, {2, 1, 0.5}}) {
    const Eigen::VectorXd t = Eigen::Map<const Eigen::VectorXd>(tv.data(), 3);
    // W = 16 = 2^4 holds every 4-bit SRP code, so codes map to columns one-to-one: no rehash
    // collisions, and the sketched loss is an unbiased estimate of the exact surrogate. One
    // sketch of 1000 rows still varies by several per cent (16 buckets of clustered data), so
    // unbiasedness is checked on the average over independent seeds.
    double ratio = 0;
    const int seeds = 8;
    for (int s = 1; s <= seeds; ++s) {
      SurrogateSpec spec;
      spec.seed = static_cast<std::uint64_t>(s);
      const RaceSketch sketch = build_surrogate_sketch(z, spec);
      ASSERT_TRUE(sketch.direct_columns());
      const double est = sketched_surrogate_loss(sketch, t);
      EXPECT_DOUBLE_EQ(sketch.debiased(est), est);
      ratio += est / exact_surrogate_loss(z, t, spec.power) / seeds;
    }
    EXPECT_NEAR(ratio, 1.0, 0.03) << t.transpose();
  }
}

TEST(SurrogateRegression, PairPlacementsHaveSensitivityTwoRAndR) {
  DoubleMatrix x;
  Eigen::VectorXd y;
  linear_data(500, Eigen::VectorXd::Constant(2, 0.3), 0.0, 0.1, 3, x, y);
  const DenseMatrix z = surrogate_inputs(x, y);
  for (const std::string mode : {"query", "insert"}) {
    SurrogateSpec spec;
    spec.rows = 200;
    spec.pair_mode = parse_pair_mode(mode);
    RaceSketch s = build_surrogate_sketch(z, spec);
    EXPECT_NEAR(s.n_hat(), 500.0, 1e-9) << mode;  // insert: total 2NR, divided by 2R
    PrivacySpec ps;
    ps.epsilon = 0.5;
    privatize(s, ps, NoiseSource{true, 1});
    const double expected = (mode == "insert" ? 2.0 : 1.0) * 200 / 0.5;
    EXPECT_NEAR(privacy_record_json(s.privacy()).at("noise_scale").get<double>(), expected, 1e-6) << mode;
  }
}

// ---- Wang 2018 baselines ----------------------------------------------------------------

TEST(WangBaselines, LargeEpsilonConvergesToLeastSquares) {
  Eigen::VectorXd theta(4);
  theta << 0.4, -0.3, 0.2, 0.1;  // ||theta|| < 1: inside ObjPert's ball
  DoubleMatrix x;
  Eigen::VectorXd y;
  linear_data(5000, theta, 0.0, 0.05, 4, x, y);
  y /= y.cwiseAbs().maxCoeff();
  const Eigen::VectorXd ls = least_squares(x, y).theta;
  const double mse_ls = mean_squared_error(x * ls, y);
  for (const double eps : {1e4, 1e7}) {
    SeededRandom rng(10);
    // OPS shrinks its ridge only like eps^{-1/3} (Wang's balanced lambda), hence the looser
    // tolerance at eps = 1e7.
    const double tol = eps > 1e5 ? 3e-3 : 5e-2;
    EXPECT_LT((ssp(x, y, eps, 1e-6, rng).theta - ls).norm(), tol) << eps;
    EXPECT_LT((adassp(x, y, eps, 1e-6, rng).theta - ls).norm(), tol) << eps;
    EXPECT_LT((objpert_linear(x, y, eps, 1e-6, rng).theta - ls).norm(), tol) << eps;
    EXPECT_LT((ops(x, y, eps, 1e-6, rng).theta - ls).norm(), tol) << eps;
    EXPECT_LT((adaops(x, y, eps, 1e-6, rng).theta - ls).norm(), tol) << eps;
  }
  SeededRandom rng(11);
  // At eps = 1 the adaptive methods are still useful on n = 5000, far better than trivial.
  const double trivial = mean_squared_error(Eigen::VectorXd::Zero(y.size()), y);
  EXPECT_LT(mean_squared_error(x * adassp(x, y, 1.0, 1e-6, rng).theta, y), mse_ls + 0.2 * (trivial - mse_ls));
}

TEST(WangBaselines, SspNoiseMatchesItsCalibration) {
  // SSP releases (X^T X, X^T y) with one Gaussian mechanism of L2 sensitivity sqrt 2.
  DoubleMatrix x = DoubleMatrix::Zero(10, 3);
  Eigen::VectorXd y = Eigen::VectorXd::Zero(10);
  for (int i = 0; i < 10; ++i) x(i, i % 3) = 1;
  SeededRandom rng(3);
  const auto m = ssp(x, y, 0.8, 1e-6, rng);
  EXPECT_NEAR(m.details.at("sigma").get<double>(), analytic_gaussian_sigma(0.8, 1e-6, std::sqrt(2.0)), 1e-12);
  // The symmetric noise: diagonal variance sigma^2, off-diagonal sigma^2 / 2 (seeded sample).
  SeededRandom r2(4);
  double diag = 0, off = 0;
  const int reps = 3000;
  for (int k = 0; k < reps; ++k) {
    const Eigen::MatrixXd e = symmetric_gaussian(3, 2.0, r2);
    EXPECT_EQ(e(0, 1), e(1, 0));
    diag += e(0, 0) * e(0, 0) + e(1, 1) * e(1, 1) + e(2, 2) * e(2, 2);
    off += e(0, 1) * e(0, 1) + e(0, 2) * e(0, 2) + e(1, 2) * e(1, 2);
  }
  EXPECT_NEAR(diag / (3 * reps) / 4.0, 1.0, 0.06);
  EXPECT_NEAR(off / (3 * reps) / 2.0, 1.0, 0.06);
}

TEST(WangBaselines, AdaSspUsesAThirdOfTheBudgetPerRelease) {
  DoubleMatrix x;
  Eigen::VectorXd y;
  linear_data(300, Eigen::VectorXd::Constant(2, 0.5), 0.0, 0.1, 6, x, y);
  y /= y.cwiseAbs().maxCoeff();
  SeededRandom rng(1);
  const auto m = adassp(x, y, 0.9, 1e-6, rng);
  EXPECT_NEAR(m.details.at("sigma").get<double>(), analytic_gaussian_sigma(0.3, 1e-6 / 3, 1.0), 1e-12);
  EXPECT_GE(m.details.at("lambda").get<double>(), 0.0);
}

TEST(WangBaselines, BallConstrainedQuadraticSatisfiesKkt) {
  Eigen::MatrixXd h(2, 2);
  h << 2, 0.5, 0.5, 1;
  Eigen::VectorXd g(2);
  g << 5, -4;
  const Eigen::VectorXd t = ball_constrained_quadratic(h, g, 1.0);
  EXPECT_NEAR(t.norm(), 1.0, 1e-9);
  // (H + mu I) t = g for some mu >= 0: g - H t is parallel to t with a non-negative factor.
  const Eigen::VectorXd r = g - h * t;
  const double mu = r.dot(t);
  EXPECT_GE(mu, 0.0);
  EXPECT_LT((r - mu * t).norm(), 1e-6);
  // Inside the ball the unconstrained minimiser is returned.
  const Eigen::VectorXd inner = ball_constrained_quadratic(h, g * 0.04, 1.0);
  EXPECT_LT((h * inner - g * 0.04).norm(), 1e-12);
}

}  // namespace
}  // namespace privrace
