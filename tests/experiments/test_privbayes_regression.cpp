// The regression method `privbayes_regression` (PrivBayes synthetic data + least squares),
// driven through the experiment registry on generated linear data: seeded and deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "experiment.hpp"
#include "privrace/baselines/linear_regression.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/tasks/regress.hpp"
#include "regress_task.hpp"

namespace privrace::experiments {
namespace {

// Wang-preprocessed linear data: rows of unit norm, y = x.theta + noise_sd N(0, 1), |y| <= 1.
void linear_rows(std::size_t n, const Eigen::VectorXd& theta, double noise_sd, SeededRandom& rng, DoubleMatrix& x,
                 Eigen::VectorXd& y) {
  x.resize(static_cast<Eigen::Index>(n), theta.size());
  y.resize(static_cast<Eigen::Index>(n));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = sample_normal(rng);
    x.row(i).normalize();
    y(i) = std::clamp(x.row(i).dot(theta) + noise_sd * sample_normal(rng), -1.0, 1.0);
  }
}

RegressContext make_context(std::size_t n, std::size_t dim, std::uint64_t seed) {
  RegressContext ctx;
  SeededRandom rng(seed);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(dim));
  theta(0) = 0.6;
  if (dim > 1) theta(1) = -0.3;
  linear_rows(n, theta, 0.05, rng, ctx.train_x, ctx.train_y);
  linear_rows(2000, theta, 0.05, rng, ctx.test_x, ctx.test_y);
  return ctx;
}

struct GroupRun {
  std::vector<CellResult> results;
};

GroupRun run_method(const RegressContext& ctx, const json& params, const std::vector<double>& epsilons, std::uint64_t seed) {
  Registry registry;
  register_builtin(registry);
  const Method* m = registry.method("privbayes_regression");
  EXPECT_NE(m, nullptr);
  json p = json::object();
  for (const auto& spec : m->parameters()) p[spec.name] = spec.default_value;
  for (const auto& [k, v] : params.items()) p[k] = v;
  EXPECT_EQ(m->check(p), "");
  CellGroup group;
  group.params = p;
  group.seed = seed;
  for (std::size_t i = 0; i < epsilons.size(); ++i)
    group.cells.push_back({epsilons[i], derive_seed(seed, 100 + i), "eps" + std::to_string(i)});
  GroupRun r;
  r.results.resize(epsilons.size());
  std::vector<bool> done(epsilons.size(), false);
  m->run_group(ctx, group, [&](std::size_t i, CellResult c) {
    done.at(i) = true;
    r.results[i] = std::move(c);
  });
  for (const bool d : done) EXPECT_TRUE(d);
  return r;
}

double mse_of(const CellResult& c) {
  const json& v = c.metrics.at("mse");
  return v.is_null() ? std::nan("") : v.get<double>();
}

TEST(PrivBayesRegression, LargeEpsilonApproachesLeastSquaresAndSmallEpsilonDoesNot) {
  // Two features + the label = 3 attributes, degree 2: the network's one joint distribution
  // is the whole (x1, x2, y) histogram, so without noise only binning separates the synthetic
  // fit from least squares.
  const RegressContext ctx = make_context(20000, 2, 11);
  const double ls = mean_squared_error(predict_linear(ctx.test_x, least_squares(ctx.train_x, ctx.train_y).theta), ctx.test_y);
  const double trivial = ctx.test_y.squaredNorm() / static_cast<double>(ctx.test_y.size());
  ASSERT_LT(ls, 0.1 * trivial);  // the data is nearly linear
  const GroupRun r = run_method(ctx, {{"degree", 2}, {"bins", 16}, {"samples", 20000}}, {1e5, 1e-2}, 5);
  const double big = mse_of(r.results[0]), small = mse_of(r.results[1]);
  std::printf("least squares %.5f, trivial %.5f, PrivBayes eps=1e5 %.5f, eps=0.01 %.5f\n", ls, trivial, big, small);
  // eps = 1e5: Laplace scale 4 (3 - 2) / (n 0.7 eps) ~ 3e-9 per frequency, i.e. no noise.
  EXPECT_LT(big, ls + 0.02 * (trivial - ls)) << "ls " << ls << " trivial " << trivial;
  // eps = 0.01: scale 0.03 per frequency of a 4096-cell histogram (mean frequency 2.4e-4):
  // the synthetic rows carry almost no information.
  EXPECT_GT(small, ls + 0.5 * (trivial - ls)) << "ls " << ls << " trivial " << trivial;
  EXPECT_EQ(r.results[0].details.at("synthetic_rows").get<int>(), 20000);
  EXPECT_GT(r.results[0].build_seconds, 0.0);
  EXPECT_NEAR(r.results[1].details.at("conditional_noise_scale").get<double>(), 4.0 / (20000 * 0.7 * 1e-2), 1e-12);
}

TEST(PrivBayesRegression, DeterministicForASeedAndFreshNoisePerSeed) {
  const RegressContext ctx = make_context(3000, 4, 21);
  const json params = {{"degree", 2}, {"bins", 8}, {"samples", 3000}};
  const GroupRun a = run_method(ctx, params, {1.0}, 9), b = run_method(ctx, params, {1.0}, 9), c = run_method(ctx, params, {1.0}, 10);
  EXPECT_EQ(mse_of(a.results[0]), mse_of(b.results[0]));
  EXPECT_EQ(a.results[0].details.at("label_parents"), b.results[0].details.at("label_parents"));
  EXPECT_NE(mse_of(a.results[0]), mse_of(c.results[0]));
}

TEST(PrivBayesRegression, ScoresSharedAcrossRepetitionsLeaveResultsUnchanged) {
  // One method object runs three repetitions' groups (scores kept from one to the next);
  // run_method makes a fresh object (its own registry) that computes every score again.
  // Same seeded results.
  const RegressContext ctx = make_context(3000, 4, 21);
  Registry registry;
  register_builtin(registry);
  const Method* shared = registry.method("privbayes_regression");
  const json params = {{"degree", 2}, {"bins", 8}, {"samples", 2000}};
  std::size_t later_shared = 0, later_fresh = 0;
  for (std::uint64_t rep = 0; rep < 3; ++rep) {
    const GroupRun fresh = run_method(ctx, params, {0.5, 2.0}, 40 + rep);
    json p = json::object();
    for (const auto& spec : shared->parameters()) p[spec.name] = spec.default_value;
    for (const auto& [k, v] : params.items()) p[k] = v;
    CellGroup group;
    group.params = p;
    group.seed = 40 + rep;
    for (std::size_t i = 0; i < 2; ++i) group.cells.push_back({i ? 2.0 : 0.5, derive_seed(40 + rep, 100 + i), "eps" + std::to_string(i)});
    std::vector<CellResult> got(2);
    shared->run_group(ctx, group, [&](std::size_t i, CellResult c) { got.at(i) = std::move(c); });
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(mse_of(got[i]), mse_of(fresh.results[i])) << "rep " << rep;
      EXPECT_EQ(got[i].details.at("label_parents"), fresh.results[i].details.at("label_parents"));
      if (rep > 0) {
        later_shared += got[i].details.at("scores_computed").get<std::size_t>();
        later_fresh += fresh.results[i].details.at("scores_computed").get<std::size_t>();
      }
    }
  }
  EXPECT_LT(later_shared, later_fresh);  // the later repetitions reused scores computed before
}

TEST(PrivBayesRegression, InfeasibleNetworkIsRecordedAsRefusedNotSkipped) {
  // gas-like width (128 features + label) at degree 3: d C(d-1, 3) 16^4 units, far above the limit.
  const RegressContext ctx = make_context(200, 128, 31);
  const GroupRun r = run_method(ctx, {{"degree", 3}, {"max_seconds", 60}}, {0.1, 1.0}, 3);
  for (const auto& c : r.results) {
    EXPECT_TRUE(std::isnan(mse_of(c)));
    ASSERT_TRUE(c.details.contains("refused"));
    EXPECT_NE(c.details.at("refused").get<std::string>().find("refused, estimated"), std::string::npos);
  }
}

}  // namespace
}  // namespace privrace::experiments
