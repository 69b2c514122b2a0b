// M2M's options (tasks/m2m.hpp): the unpenalised intercept and the auto-noise lambda. The
// solved system is checked directly against P materialised from the public synthetic points.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/tasks/m2m.hpp"
#include "m2m_test_util.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;

namespace {

using privrace::testing::hist_spec;
using privrace::testing::race_spec;
using privrace::testing::rff_spec;
using privrace::testing::uniform_rows;

constexpr double kInf = std::numeric_limits<double>::infinity();

FeatureSketchRelease release_of(const DenseMatrix& x, const FeatureSketchSpec& spec, double epsilon,
                                std::uint64_t noise_seed = 1) {
  const auto sums = build_feature_sums(x, spec);
  FeatureSketchPrivacy privacy;
  privacy.epsilon = epsilon;
  return release_feature_sketch(*sums, privacy, NoiseSource{true, noise_seed});
}

M2mOptions unit_box(std::size_t d, std::size_t samples, bool intercept) {
  M2mOptions o;
  o.domain = BoxDomain::uniform(d, 0.0, 1.0);
  o.samples = samples;
  o.intercept = intercept;
  return o;
}

// P (n_s x m), materialised from the model's public synthetic points.
Eigen::MatrixXd design_matrix(const FeatureMap& map, const DenseMatrix& synthetic) {
  DoubleMatrix feat;
  map.features(synthetic, feat);
  return feat;
}

Eigen::VectorXd column_means(const DenseMatrix& x) { return x.cast<double>().colwise().mean().transpose(); }

}  // namespace

// eps = inf on targets with exact answers: the constant 1 (every record counts once) is answered
// exactly with the intercept, and the means of the attributes are no worse than without it.
TEST(M2mIntercept, NeverHurtsWithoutNoise) {
  const DenseMatrix x = uniform_rows(3000, 4, 21);
  const Eigen::VectorXd truth = column_means(x);
  for (const auto& spec : {rff_spec(60, 1.0), hist_spec(10), race_spec(10, 12, 0.3)}) {
    const FeatureSketchRelease rel = release_of(x, spec, kInf);
    const M2mModel plain(rel, unit_box(4, 8000, false));
    const M2mModel with(rel, unit_box(4, 8000, true));
    EXPECT_NEAR(with.average_weights().sum(), 1.0, 1e-10) << spec.kind;
    const Eigen::MatrixXd xs = plain.synthetic().cast<double>();
    const double err_plain = (weighted_means(xs, plain.average_weights()) - truth).cwiseAbs().maxCoeff();
    const double err_with = (weighted_means(xs, with.average_weights()) - truth).cwiseAbs().maxCoeff();
    EXPECT_LE(err_with, err_plain * 1.05 + 1e-6) << spec.kind << ": " << err_with << " vs " << err_plain;
  }
  // With noise, eq. (5)'s lambda shrinks the plain fit's total mass; the intercept keeps it at 1.
  const FeatureSketchRelease noisy = release_of(x, rff_spec(60, 1.0), 1.0);
  EXPECT_GT(std::abs(M2mModel(noisy, unit_box(4, 8000, false)).average_weights().sum() - 1.0), 1e-2);
  EXPECT_NEAR(M2mModel(noisy, unit_box(4, 8000, true)).average_weights().sum(), 1.0, 1e-10);
}

// The solved system, from P itself: with (a, b) = (coefficients, intercepts),
//   d/db: (1/n_s) 1^T (P a + b 1 - F) = 0           (b is not penalised)
//   d/da: (1/n_s) P^T (P a + b 1 - F) + lambda a = 0
// and the factor is that of P^T P / n_s - mu mu^T + lambda I. A large lambda shrinks a to 0
// but leaves b at mean(F), so the weights tend to 1, not to 0.
TEST(M2mIntercept, ConstantDirectionIsNotPenalised) {
  const DenseMatrix x = uniform_rows(2000, 3, 22);
  const FeatureSketchRelease rel = release_of(x, rff_spec(24, 1.0), 1.0);
  ASSERT_TRUE(rel.is_private);
  M2mOptions opt = unit_box(3, 3000, true);
  opt.extra_regularization = 50;  // a large lambda makes any penalty on b visible
  const M2mModel model(rel, opt);
  const double lambda = model.lambda();
  ASSERT_GT(lambda, 1e-3);
  const Eigen::MatrixXd p = design_matrix(*rel.map, model.synthetic());
  const double ns = static_cast<double>(p.rows());
  const Eigen::MatrixXd f = model.synthetic().cast<double>();
  const Eigen::MatrixXd a = model.coefficients(f);
  const Eigen::VectorXd b = model.intercepts(f);
  for (Eigen::Index k = 0; k < f.cols(); ++k) {
    const Eigen::VectorXd resid = (p * a.col(k)).array() + b(k) - f.col(k).array();
    EXPECT_NEAR(resid.sum() / ns, 0.0, 1e-10) << "the constant's gradient";
    const Eigen::VectorXd grad_a = p.transpose() * resid / ns + lambda * a.col(k);
    EXPECT_LT(grad_a.cwiseAbs().maxCoeff(), 1e-9) << "the features' gradient";
    // f-hat = <a, z-hat> + b = the weighted average.
    EXPECT_NEAR(a.col(k).dot(model.z_hat()) + b(k), model.estimate(f)(k), 1e-10);
  }
  const Eigen::VectorXd mu = p.colwise().mean().transpose();
  const Eigen::MatrixXd system = p.transpose() * p / ns - mu * mu.transpose() +
                                 lambda * Eigen::MatrixXd::Identity(p.cols(), p.cols());
  const Eigen::MatrixXd l = model.factor().triangularView<Eigen::Lower>();
  EXPECT_LT((l * l.transpose() - system).cwiseAbs().maxCoeff(), 1e-10);

  opt.extra_regularization = 1e8;
  const M2mModel shrunk(rel, opt);
  EXPECT_LT((shrunk.weights().array() - 1.0).abs().maxCoeff(), 1e-4) << "weights tend to 1";
  opt.intercept = false;
  const M2mModel shrunk_plain(rel, opt);
  EXPECT_LT(shrunk_plain.weights().cwiseAbs().maxCoeff(), 1e-4) << "without the intercept they tend to 0";
}

// A one-attribute HIST design holds the constant (the bins' indicators sum to 1), and an exact
// release sums to 1 in that direction: with lambda -> 0 the intercept changes nothing.
TEST(M2mIntercept, NoChangeWhenTheDesignSpansTheConstant) {
  const DenseMatrix x = uniform_rows(1500, 1, 23);
  const FeatureSketchRelease rel = release_of(x, hist_spec(16), kInf);
  M2mOptions opt = unit_box(1, 20000, false);
  opt.nonprivate_lambda = 1e-12;
  const M2mModel plain(rel, opt);
  opt.intercept = true;
  const M2mModel with(rel, opt);
  EXPECT_LT((plain.weights() - with.weights()).cwiseAbs().maxCoeff(), 1e-6);
  // A release whose constant direction is not 1 (here 2: each record counted twice) is where
  // they differ: the intercept holds the total at 1, the plain fit follows the release to 2.
  FeatureSketchRelease doubled = rel;
  doubled.sums *= 2;
  EXPECT_NEAR(M2mModel(doubled, opt).average_weights().sum(), 1.0, 1e-4);  // lambda = 1e-12: round-off
  opt.intercept = false;
  EXPECT_NEAR(M2mModel(doubled, opt).average_weights().sum(), 2.0, 1e-6);
}

// The same seed and options: bit-identical weights, on any thread count; another seed: others.
TEST(M2mIntercept, SeededAndThreadInvariant) {
  const DenseMatrix x = uniform_rows(3000, 3, 24);
  const FeatureSketchRelease rel = release_of(x, rff_spec(40, 1.0), 1.0, 7);
  M2mOptions opt = unit_box(3, 9000, true);
  opt.lambda_rule = M2mLambdaRule::AutoNoise;
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const M2mModel one(rel, opt);
  omp_set_num_threads(2);
  const M2mModel two(rel, opt);
  omp_set_num_threads(before);
  EXPECT_EQ(one.weights(), two.weights());
  EXPECT_EQ(one.lambda(), two.lambda());
  EXPECT_EQ(M2mModel(rel, opt).weights(), one.weights());
  opt.seed += 1;
  EXPECT_NE(M2mModel(rel, opt).weights(), one.weights());
}

// auto-noise reads only the release and the public design: data sets with one release give one
// lambda, which a fresh design from the public options reproduces; it matches a hand computation
// and never exceeds eq. (5).
TEST(M2mIntercept, AutoNoiseLambdaUsesOnlyPublicQuantities) {
  // Two data sets that differ but fall in the same HIST bins: the same sums, the same release.
  DenseMatrix a = uniform_rows(2000, 3, 25), b = a;
  for (Eigen::Index i = 0; i < b.size(); ++i) {
    const double bin = std::floor(a.data()[i] * 8.0);
    b.data()[i] = static_cast<Real>((bin + 0.5) / 8.0);  // the bin centre
  }
  ASSERT_GT((a - b).cwiseAbs().maxCoeff(), 0.01);
  const FeatureSketchRelease ra = release_of(a, hist_spec(8), 1.0, 9), rb = release_of(b, hist_spec(8), 1.0, 9);
  ASSERT_EQ(ra.sums, rb.sums);
  for (const bool intercept : {false, true}) {
    M2mOptions opt = unit_box(3, 6000, intercept);
    opt.lambda_rule = M2mLambdaRule::AutoNoise;
    const M2mModel ma(ra, opt), mb(rb, opt);
    EXPECT_EQ(ma.lambda(), mb.lambda());
    const M2mDesign fresh(ra.map, opt);
    EXPECT_EQ(M2mModel::choose_lambda(fresh, rb), ma.lambda());

    // By hand, from P: s = max(1 / N, (||r||^2 - m sigma_e^2) / tr(G)), lambda = sigma_e^2 / s.
    const Eigen::MatrixXd p = design_matrix(*ra.map, ma.synthetic());
    const double ns = static_cast<double>(p.rows()), m = static_cast<double>(p.cols());
    const Eigen::VectorXd mu = p.colwise().mean().transpose();
    const Eigen::MatrixXd g = p.transpose() * p / ns - (intercept ? Eigen::MatrixXd(mu * mu.transpose()) : Eigen::MatrixXd::Zero(p.cols(), p.cols()));
    const double n = ra.count, noise = ra.noise_variance / (n * n);
    const Eigen::VectorXd r = intercept ? Eigen::VectorXd(ra.sums / n - mu) : Eigen::VectorXd(ra.sums / n);
    const double s = std::max(1.0 / n, (r.squaredNorm() - m * noise) / g.trace());
    EXPECT_NEAR(ma.lambda(), noise / s, 1e-9 * noise / s);
    opt.lambda_rule = M2mLambdaRule::Eq5;
    EXPECT_LE(ma.lambda(), M2mModel(ra, opt).lambda() * (1 + 1e-12));
  }
  // Data far from psi (all in one corner) carry more signal than n draws from psi: lambda drops
  // well below eq. (5).
  DenseMatrix corner = uniform_rows(2000, 3, 26);
  corner *= 0.2f;
  const FeatureSketchRelease rc = release_of(corner, hist_spec(8), 1.0, 9);
  M2mOptions opt = unit_box(3, 6000, true);
  const double eq5 = M2mModel(rc, opt).lambda();
  opt.lambda_rule = M2mLambdaRule::AutoNoise;
  EXPECT_LT(M2mModel(rc, opt).lambda(), 0.2 * eq5);
  // No noise: the fixed non-private lambda whatever the rule.
  EXPECT_EQ(M2mModel(release_of(a, hist_spec(8), kInf), opt).lambda(), opt.nonprivate_lambda);
  EXPECT_THROW(parse_m2m_lambda_rule("auto"), UsageError);
}

// The implicit-M2M logistic regression reads the intercept model's weights like any other.
TEST(M2mIntercept, ImplicitLogisticRegression) {
  DenseMatrix rows = uniform_rows(6000, 4, 27);
  for (Eigen::Index i = 0; i < rows.rows(); ++i) rows(i, 3) = rows(i, 0) + rows(i, 1) > 1 ? 1.0f : 0.0f;
  const DenseMatrix train = rows.topRows(5000), test = rows.bottomRows(1000);
  M2mOptions opt = unit_box(4, 40000, true);
  opt.domain.binary = {false, false, false, true};
  opt.lambda_rule = M2mLambdaRule::AutoNoise;
  const M2mModel model(release_of(train, rff_spec(200, 1.0), 4.0), opt);
  const WeightedLogisticResult fit =
      weighted_logistic_regression(model.synthetic().cast<double>(), model.average_weights(), 1e-4);
  std::vector<int> labels;
  for (Eigen::Index i = 0; i < test.rows(); ++i) labels.push_back(test(i, 3) > 0.5 ? 1 : 0);
  const Eigen::VectorXd scores = logistic_scores(test.leftCols(3).cast<double>(), fit.theta);
  const double auc = privrace::testing::reference_auc(std::span<const double>(scores.data(), labels.size()), labels);
  EXPECT_GT(auc, 0.9) << "status " << fit.status;
}

// `privrace m2m --intercept --lambda auto-noise`; a bad rule exits 2 and prints nothing.
TEST(M2mIntercept, CommandLine) {
  const fs::path dir = privrace::testing::temp_dir("m2m_intercept_cli");
  {
    std::ofstream data(dir / "data.csv");
    SeededRandom rng(10);
    for (int i = 0; i < 400; ++i) data << rng.unit() << "," << rng.unit() << "," << rng.unit() << "\n";
  }
  auto run = [&](const std::string& args, int& code) {
    const std::string cmd = std::string(PRIVRACE_CLI) + " " + args + " 2>" + (dir / "err.txt").string();
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf{};
    while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
    const int status = pclose(pipe);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  };
  const std::string sk = (dir / "h.rsk").string();
  int code = -1;
  run("sketch --input " + (dir / "data.csv").string() + " --kernel hist --bins 5 --domain 0:1 --epsilon 1 -q -o " + sk, code);
  ASSERT_EQ(code, 0);
  const std::string plain = run("m2m " + sk + " --task mean --domain 0:1 --samples 4000", code);
  EXPECT_EQ(code, 0);
  const std::string with = run("m2m " + sk + " --task mean --domain 0:1 --samples 4000 --intercept --lambda auto-noise", code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(std::count(with.begin(), with.end(), '\n'), 3);
  EXPECT_NE(plain, with);
  EXPECT_EQ(run("m2m " + sk + " --task mean --domain 0:1 --samples 4000 --lambda eq5", code), plain);
  const std::string bad = run("m2m " + sk + " --task mean --domain 0:1 --lambda gcv", code);
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(bad.empty());
  fs::remove_all(dir);
}

// At tiny epsilon the noisy count n + zeta can fall far below n (or below 1, where the estimator
// uses 1): z-hat = sums / count would then be many times longer than any mean of Phi can be. The
// estimator's count is at least the one the released sums imply (||sums|| less the noise's
// expected share, over max_x ||Phi(x)||), so such a release degrades to a noisy answer, not to
// one thousands of times the data's range.
TEST(M2mIntercept, ANoisyCountFarBelowTheDataDoesNotBlowUpTheEstimate) {
  DenseMatrix x = uniform_rows(2000, 3, 31);
  x = x.array().square().matrix();  // means near 1/3, away from psi's 1/2
  const Eigen::VectorXd truth = column_means(x);
  for (const auto& spec : {rff_spec(60, 1.0), hist_spec(10)}) {
    int low = 0;
    for (std::uint64_t seed = 1; seed <= 24; ++seed) {
      const FeatureSketchRelease rel = release_of(x, spec, 0.01, seed);
      if (rel.count > 200) continue;  // n = 2000: a count 10x too small or less
      ++low;
      for (const bool intercept : {false, true}) {
        for (const auto rule : {M2mLambdaRule::Eq5, M2mLambdaRule::AutoNoise}) {
          M2mOptions opt = unit_box(3, 4000, intercept);
          opt.lambda_rule = rule;
          const M2mModel model(rel, opt);
          const double err = (model.estimate(model.synthetic().cast<double>()) - truth).cwiseAbs().maxCoeff();
          EXPECT_LT(err, 1.0) << spec.kind << " seed " << seed << " count " << rel.count << " intercept "
                              << intercept << " rule " << to_string(rule);
          EXPECT_GE(model.count_used(), std::max(rel.count, 1.0));
        }
      }
    }
    EXPECT_GE(low, 3) << spec.kind << ": too few releases with a count far below n to test";
  }
}
