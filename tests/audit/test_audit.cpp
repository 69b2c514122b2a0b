// The empirical DP auditor: every real release path passes, and each deliberately broken
// variant below (they live here, never in the library) fails. Seeded and deterministic.
// PRIVRACE_AUDIT_THOROUGH=1 runs 10^6 releases a data set instead of the default.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "privrace/audit/auditor.hpp"
#include "privrace/audit/paths.hpp"
#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/privatize.hpp"

namespace privrace::audit {
namespace {

bool thorough() {
  const char* v = std::getenv("PRIVRACE_AUDIT_THOROUGH");
  return v && std::string(v) == "1";
}

AuditOptions default_options(std::size_t runs) {
  AuditOptions o;
  o.runs = thorough() ? 1000000 : runs;
  o.confidence = 0.99;
  o.seed = 20240611;
  return o;
}

std::unique_ptr<RandomSource> rng_for(const NoiseSource& noise) {
  return noise.seeded ? std::unique_ptr<RandomSource>(std::make_unique<SeededRandom>(noise.seed))
                      : std::unique_ptr<RandomSource>(std::make_unique<CryptoRandom>());
}

// A dense sketch path whose noise step is `add_noise` (a broken replacement of privatize).
using NoiseStep = std::function<void(RaceSketch&, const NoiseSource&, Observation&)>;
AuditPath dense_variant(const std::string& name, const std::string& kernel, const std::string& pair_mode, Claim claim,
                        NoiseStep add_noise, const PathOptions& o = {}) {
  const ExactBuilder builder = audit_builder(kernel, o, parse_pair_mode(pair_mode));
  const DenseMatrix d = audit_points(o.records, 2, o.seed);
  const DenseMatrix candidates = audit_points(32, 2, derive_seed(o.seed, 1));
  const DenseMatrix d_prime = with_row(d, candidates, most_sensitive_row(builder, d, candidates));
  AuditPath p;
  p.name = name;
  p.claim = claim;
  p.exact = exact_values(builder.build(d));
  p.exact_neighbour = exact_values(builder.build(d_prime));
  p.release = [=](bool neighbour, const NoiseSource& noise, Observation& out) {
    RaceSketch sketch = builder.build(neighbour ? d_prime : d).counts();  // a copy of the exact counts, noised here
    add_noise(sketch, noise, out);
  };
  return p;
}

// Discrete Laplace of the given scale on every count, honestly recording its variance.
NoiseStep laplace_of_scale(double scale) {
  return [scale](RaceSketch& sketch, const NoiseSource& noise, Observation& out) {
    const DiscreteLaplace dl(scale);
    auto rng = rng_for(noise);
    dl.add_to(sketch.mutable_counts(), *rng, nullptr);
    const auto c = sketch.counts();
    out.values.assign(c.begin(), c.end());
    out.recorded_variance.assign(c.size(), dl.variance());
  };
}

const PathOptions kOpts{};
const double kR = static_cast<double>(kOpts.rows);

// The reference code's bug: scale R / (N eps).
AuditPath broken_scale_over_n() {
  return dense_variant("broken: scale R/(N eps)", "l2", "query", {1.0, 0.0, false},
                       laplace_of_scale(kR / (static_cast<double>(kOpts.records) * 1.0)));
}
// Sensitivity 1 instead of R.
AuditPath broken_scale_one_over_eps() {
  return dense_variant("broken: scale 1/eps", "l2", "query", {1.0, 0.0, false}, laplace_of_scale(1.0));
}
// The insert-placement regression sketch touches 2 cells a row: R/eps is half the noise it needs.
AuditPath broken_insert_pairs_r() {
  return dense_variant("broken: insert pairs noised with R", "angular_pair", "insert", {1.0, 0.0, false},
                       laplace_of_scale(kR / 1.0));
}
// Gaussian sigma computed for delta 100x larger than claimed.
AuditPath broken_gaussian_delta() {
  const double claimed_delta = 1e-5;
  const double sigma = analytic_gaussian_sigma(1.0, 100.0 * claimed_delta, std::sqrt(kR));
  return dense_variant("broken: Gaussian sigma for 100x delta", "l2", "query", {1.0, claimed_delta, true},
                       [sigma](RaceSketch& sketch, const NoiseSource& noise, Observation& out) {
                         auto rng = rng_for(noise);
                         for (auto& c : sketch.mutable_counts()) c += std::llround(sigma * sample_normal(*rng));
                         const auto c = sketch.counts();
                         out.values.assign(c.begin(), c.end());
                         out.recorded_variance.assign(c.size(), sigma * sigma + 1.0 / 12.0);
                       });
}

// Noise on each per-thread sub-sketch, then again on the merged sketch (which records one noise).
AuditPath broken_double_noise() {
  const PathOptions o;
  const ExactBuilder builder = audit_builder("l2", o);
  const DenseMatrix d = audit_points(o.records, 2, o.seed);
  const DenseMatrix candidates = audit_points(32, 2, derive_seed(o.seed, 1));
  const DenseMatrix d_prime = with_row(d, candidates, most_sensitive_row(builder, d, candidates));
  PrivacySpec spec;
  spec.epsilon = 1.0;
  AuditPath p;
  p.name = "broken: noise per thread sub-sketch and after the merge";
  p.claim = {1.0, 0.0, false};
  p.exact = exact_values(builder.build(d));
  p.exact_neighbour = exact_values(builder.build(d_prime));
  const std::size_t width = o.width;
  p.release = [=](bool neighbour, const NoiseSource& noise, Observation& out) {
    const DenseMatrix& data = neighbour ? d_prime : d;
    const Eigen::Index half = data.rows() / 2;
    RaceSketch merged(builder.family(), width);
    for (int t = 0; t < 2; ++t) {  // two "threads", each privatizing its own sub-sketch
      RaceSketch part = builder.build(t == 0 ? DenseMatrix(data.topRows(half)) : DenseMatrix(data.bottomRows(data.rows() - half)))
                            .counts();
      privatize(part, spec, {noise.seeded, derive_seed(noise.seed, static_cast<std::uint64_t>(t))});
      auto dst = merged.mutable_counts();
      for (std::size_t i = 0; i < dst.size(); ++i) dst[i] += part.counts()[i];
    }
    privatize(merged, spec, {noise.seeded, derive_seed(noise.seed, 2)});
    observe(merged, out);
  };
  return p;
}

// Two releases (A, then A + B) that reuse one noise seed: their difference is exact.
AuditPath broken_seed_reuse() {
  AuditPath p = make_path("two_releases");
  const PathOptions o;
  const ExactBuilder builder = audit_builder("l2", o);
  const DenseMatrix all = audit_points(o.records, 2, o.seed);
  const DenseMatrix a = all.topRows(all.rows() / 2);
  const DenseMatrix candidates = audit_points(32, 2, derive_seed(o.seed, 1));
  const DenseMatrix all_prime = with_row(all, candidates, most_sensitive_row(builder, all, candidates));
  PrivacySpec spec;
  spec.epsilon = 1.0;
  p.name = "broken: one noise seed for two releases";
  p.release = [=](bool neighbour, const NoiseSource& noise, Observation& out) {
    RaceSketch first = builder.build(a).counts();
    RaceSketch second = builder.build(neighbour ? all_prime : all).counts();
    privatize(first, spec, noise);
    privatize(second, spec, noise);  // the bug: the same seed
    Observation one, two;
    observe(first, one);
    observe(second, two);
    out.values = one.values;
    out.values.insert(out.values.end(), two.values.begin(), two.values.end());
    for (std::size_t c = 0; c < one.values.size(); ++c) out.values.push_back(two.values[c] - one.values[c]);
    out.recorded_variance = one.recorded_variance;
    out.recorded_variance.insert(out.recorded_variance.end(), two.recorded_variance.begin(), two.recorded_variance.end());
    for (std::size_t c = 0; c < one.values.size(); ++c) out.recorded_variance.push_back(2 * one.recorded_variance[c]);
  };
  return p;
}

TEST(AuditStatistics, ClopperPearsonKnownValues) {
  // x = 0: upper = 1 - alpha^(1/n); x = n: lower = alpha^(1/n).
  EXPECT_NEAR(clopper_pearson_upper(0, 10, 0.05), 1.0 - std::pow(0.05, 0.1), 1e-12);
  EXPECT_NEAR(clopper_pearson_lower(10, 10, 0.05), std::pow(0.05, 0.1), 1e-12);
  EXPECT_EQ(clopper_pearson_lower(0, 10, 0.05), 0.0);
  EXPECT_EQ(clopper_pearson_upper(10, 10, 0.05), 1.0);
  // 50 of 100 at one-sided 2.5%: the exact two-sided 95% interval is [0.3983, 0.6017].
  EXPECT_NEAR(clopper_pearson_lower(50, 100, 0.025), 0.3983, 1e-4);
  EXPECT_NEAR(clopper_pearson_upper(50, 100, 0.025), 0.6017, 1e-4);
}

TEST(AuditStatistics, GaussianProfileMatchesTheCalibration) {
  const double mu = gaussian_mu_for(1.0, 1e-5);
  EXPECT_NEAR(gaussian_profile_delta(mu, 1.0), 1e-5, 1e-8);
  // delta at eps' = 0 is the total variation distance 2 Phi(mu / 2) - 1.
  EXPECT_NEAR(gaussian_profile_delta(mu, 0.0), std::erf(mu / (2.0 * std::sqrt(2.0))), 1e-12);
}

TEST(AuditRefusals, EpsilonRunsAndNeighbours) {
  AuditPath p = make_path("race_pstable");
  AuditOptions o = default_options(1000);
  p.claim.epsilon = 0.0;
  EXPECT_THROW(run_audit(p, o), UsageError);
  p.claim.epsilon = -1.0;
  EXPECT_THROW(run_audit(p, o), UsageError);
  p.claim.epsilon = 1.0;
  const std::size_t minimum = minimum_runs(p.claim, 0.99);
  EXPECT_GT(minimum, 10u);
  o.runs = minimum - 1;
  try {
    run_audit(p, o);
    FAIL() << "too few runs accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("at least " + std::to_string(minimum)), std::string::npos) << e.what();
  }
  // A larger claimed epsilon or a higher confidence needs more runs, never fewer.
  EXPECT_GE(minimum_runs({4.0, 0.0, false}, 0.99), minimum);
  EXPECT_LE(minimum_runs({0.1, 0.0, false}, 0.99), minimum);
  EXPECT_GE(minimum_runs({1.0, 0.0, false}, 0.9999), minimum);
  // Not neighbours: two records differ, or none.
  const DenseMatrix d = audit_points(8, 2, 1), c = audit_points(4, 2, 2);
  EXPECT_NO_THROW(check_neighbours(d, with_row(d, c, 0), NeighborRelation::AddRemove));
  EXPECT_THROW(check_neighbours(d, with_row(with_row(d, c, 0), c, 1), NeighborRelation::AddRemove), UsageError);
  EXPECT_THROW(check_neighbours(d, d, NeighborRelation::AddRemove), UsageError);
  EXPECT_THROW(check_neighbours(d, with_row(d, c, 0), NeighborRelation::Replace), UsageError);
  DenseMatrix replaced = d;
  replaced.row(3) = c.row(1);
  EXPECT_NO_THROW(check_neighbours(d, replaced, NeighborRelation::Replace));
  const SetCollection s = audit_sets(6, 3), t = audit_sets(3, 4);
  EXPECT_NO_THROW(check_neighbours(s, with_set(s, t, 0), NeighborRelation::AddRemove));
  EXPECT_THROW(check_neighbours(s, with_set(with_set(s, t, 0), t, 1), NeighborRelation::AddRemove), UsageError);
  // Identical outputs on D and D' give the auditor nothing to test.
  AuditPath same = make_path("race_pstable");
  same.exact_neighbour = same.exact;
  EXPECT_THROW(run_audit(same, default_options(1000)), UsageError);
  EXPECT_THROW(make_path("no_such_path"), UsageError);
}

// The command refuses bad input with exit status 2 and says what is wrong, before any run.
struct ToolRun {
  int code;
  std::string output;  // stdout and stderr
};
ToolRun run_tool(const std::string& args) {
  const std::string cmd = std::string(PRIVRACE_AUDIT_TOOL) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(AuditTool, RefusesBadInputWithTheReason) {
  auto r = run_tool("--path race_pstable --epsilon 0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--epsilon must be positive"), std::string::npos) << r.output;
  r = run_tool("--path race_pstable --epsilon -0.5");
  EXPECT_EQ(r.code, 2) << r.output;
  // Too few runs for the confidence: the minimum is named.
  const std::size_t minimum = minimum_runs({1.0, 0.0, false}, 0.99);
  r = run_tool("--path race_pstable --runs " + std::to_string(minimum - 1));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("at least " + std::to_string(minimum) + " runs"), std::string::npos) << r.output;
  // A higher confidence raises the minimum.
  const std::size_t strict = minimum_runs({1.0, 0.0, false}, 0.999999);
  ASSERT_GT(strict, minimum);
  r = run_tool("--path race_pstable --confidence 0.999999 --runs " + std::to_string(strict - 1));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("at least " + std::to_string(strict) + " runs"), std::string::npos) << r.output;
  r = run_tool("--path race_pstable --confidence 1");
  EXPECT_EQ(r.code, 2) << r.output;
  r = run_tool("--path no_such_path");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("race_pstable"), std::string::npos) << "the known paths are listed: " << r.output;
  r = run_tool("");
  EXPECT_EQ(r.code, 2) << r.output;
  // A small passing run: exit 0, the verdict, runs and confidence on the line.
  r = run_tool("--path mechanism_discrete_laplace_table --runs 20000 --threads 1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("mechanism_discrete_laplace_table: pass"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("runs=20000 per data set, confidence=0.99"), std::string::npos) << r.output;
}

TEST(AuditDeterminism, SameSeedSameBoundOnAnyThreadCount) {
  const AuditPath p = make_path("race_srp");
  AuditOptions o = default_options(20000);
  o.runs = 20000;
  o.threads = 1;
  const auto a = run_audit(p, o);
  o.threads = 2;
  const auto b = run_audit(p, o);
  EXPECT_EQ(a.epsilon_lower, b.epsilon_lower);
  EXPECT_EQ(a.epsilon_event, b.epsilon_event);
  EXPECT_NEAR(a.variance_measured, b.variance_measured, 1e-9 * a.variance_measured);
}

class RealPath : public ::testing::TestWithParam<std::string> {};

TEST_P(RealPath, Passes) {
  const AuditPath p = make_path(GetParam());
  // Mechanism paths cost nanoseconds a release, sketch paths tens of microseconds.
  const bool mechanism = GetParam().rfind("mechanism_", 0) == 0;
  const auto r = run_audit(p, default_options(mechanism ? 400000 : 20000));
  std::cout << r.summary() << std::endl;
  EXPECT_TRUE(r.pass()) << r.summary();
  // The auditor has power: on the real Laplace paths the bound comes close to the claim.
  // (Not where the release adds more noise than one record's change needs: a merge of two
  // noisy parts, two releases of which the record touches one, the 2R-noised insert pairs.)
  const std::set<std::string> weaker = {"regression_insert_pairs", "merge_disjoint", "two_releases",
                                         "race_pstable_replace"};
  if (!p.claim.gaussian && !weaker.count(GetParam())) {
    EXPECT_GT(r.epsilon_lower, 0.4 * p.claim.epsilon) << r.summary();
  }
  // A randomised-response bit has no additive noise whose variance could be compared.
  if (GetParam() != "ldp_bit") {
    EXPECT_TRUE(r.variance_tested);
  }
}

INSTANTIATE_TEST_SUITE_P(Audit, RealPath, ::testing::ValuesIn(path_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(AuditTeeth, DiscreteGaussianCalibratedForTenfoldEpsilonFails) {
  PathOptions o;
  o.epsilon = 10;  // the noise of eps = 10 ...
  AuditPath p = make_path("mechanism_discrete_gaussian", o);
  p.claim = {1.0, o.delta, true};  // ... claimed as eps = 1
  const auto r = run_audit(p, default_options(400000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.pass());
}

TEST(AuditTeeth, ScaleOverNFails) {
  const auto r = run_audit(broken_scale_over_n(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.pass());
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditTeeth, OneOverEpsilonFails) {
  const auto r = run_audit(broken_scale_one_over_eps(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditTeeth, InsertPairsWithRFails) {
  const auto r = run_audit(broken_insert_pairs_r(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditTeeth, DoubleNoiseFails) {
  const auto r = run_audit(broken_double_noise(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.pass());
  EXPECT_FALSE(r.variance_ok);
}

TEST(AuditTeeth, SeedReuseFails) {
  const auto r = run_audit(broken_seed_reuse(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditTeeth, GaussianDeltaTooLargeFails) {
  const auto r = run_audit(broken_gaussian_delta(), default_options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.pass());
  EXPECT_FALSE(r.profile_ok);
}

}  // namespace
}  // namespace privrace::audit
