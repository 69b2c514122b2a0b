// The auditor's whole-file check: a released file must be epsilon-DP as a whole, not only its
// counts. A deliberately leaky path (a test-only writer whose header carries the exact record
// count) is caught; every real path that writes a file passes. Seeded and deterministic.
// PRIVRACE_AUDIT_FILE_THOROUGH=1 runs the real paths at the thorough audit's epsilons (0.25, 1, 4)
// and confidence (0.999) instead, printing one summary line each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "privrace/audit/auditor.hpp"
#include "privrace/audit/paths.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace::audit {
namespace {

bool thorough() {
  const char* v = std::getenv("PRIVRACE_AUDIT_FILE_THOROUGH");
  return v && std::string(v) == "1";
}

AuditOptions options_for(const Claim& claim, double confidence = 0.99) {
  AuditOptions o;
  // The main checks at a few times their minimum: this file is about the whole-file check,
  // which takes its own number of files (AuditOptions::file_runs, automatic).
  o.runs = std::max<std::size_t>(4 * minimum_runs(claim, confidence), 4000);
  o.confidence = confidence;
  o.seed = 20261128;
  return o;
}

bool has_name(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& name) {
  return std::any_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; });
}

std::vector<std::string> file_paths() {
  std::vector<std::string> out;
  for (const auto& name : path_names())
    if (make_path(name).release_files) out.push_back(name);
  return out;
}

TEST(AuditFileFields, TheContainerAndEveryHeaderFieldButTheNoisyOnes) {
  const AuditPath p = make_path("race_pstable");
  ASSERT_TRUE(p.release_files);
  const auto a = p.release_files(false, {true, 1});
  const auto b = p.release_files(false, {true, 2});  // other noise, same data
  ASSERT_EQ(a.size(), 1u);
  const auto fa = file_fields(a[0]), fb = file_fields(b[0]);
  for (const char* name : {"container.magic", "container.version", "container.payload_counts", "container.field_order",
                           "format", "rows", "width", "family.seed", "privacy.epsilon", "privacy.sensitivity_l1"})
    EXPECT_TRUE(has_name(fa, name)) << name;
  for (const char* name : {"n_hat", "privacy.count", "privacy.noise_id", "privacy.noise_seed"})
    EXPECT_FALSE(has_name(fa, name)) << name;
  // Only the noise differs between a and b: every compared field is the same.
  EXPECT_EQ(fa, fb);
  EXPECT_THROW(file_fields("not a sketch file"), Error);
}

// A test-only writer (never in the library): the real release, but a header that also carries
// the exact record count, as every private file did before the release record was enforced.
AuditPath leaky_path() {
  const PathOptions o;
  AuditPath p = make_path("race_pstable", o);
  const ExactBuilder builder = audit_builder("l2", o);
  const DenseMatrix d = audit_points(o.records, 2, o.seed);
  const DenseMatrix candidates = audit_points(32, 2, derive_seed(o.seed, 1));
  const DenseMatrix d_prime = with_row(d, candidates, most_sensitive_row(builder, d, candidates));
  PrivacySpec spec;
  spec.epsilon = o.epsilon;
  auto folder = std::make_shared<ScratchFolder>();
  p.name = "leaky_record_count";
  p.release_files = [=](bool neighbour, const NoiseSource& noise) {
    const Release release = builder.build(neighbour ? d_prime : d).release(spec, noise);
    nlohmann::json header = sketch_header(release.sketch());
    header["build"] = {{"points", release.build().points}};  // exact: a function of the records
    const std::string path = folder->next_path();
    write_sketch_file(path, header, release.sketch().counts());
    return std::vector<std::string>{take_file(path)};
  };
  return p;
}

TEST(AuditFileTeeth, ExactRecordCountInTheHeaderFails) {
  const AuditPath p = leaky_path();
  const auto r = run_audit(p, options_for(p.claim));
  std::cout << r.summary() << std::endl;
  ASSERT_TRUE(r.file_tested);
  EXPECT_FALSE(r.file_ok);
  EXPECT_FALSE(r.pass());
  EXPECT_GT(r.file_epsilon_lower, p.claim.epsilon);
  EXPECT_NE(r.file_event.find("build.points"), std::string::npos) << r.file_event;
  // The counts alone are fine: only the whole file gives the leak away.
  EXPECT_TRUE(r.epsilon_ok) << r.summary();
}

TEST(AuditFileTeeth, CaughtAtEveryThoroughEpsilon) {
  for (const double eps : {0.25, 1.0, 4.0}) {
    AuditPath p = leaky_path();
    p.claim.epsilon = eps;  // the claim only: a deterministic field leaks at any epsilon
    AuditOptions o = options_for(p.claim, 0.999);
    o.runs = minimum_runs(p.claim, 0.999);
    const auto r = run_audit(p, o);
    EXPECT_FALSE(r.file_ok) << r.summary();
  }
}

TEST(AuditFileOptions, TooFewFilesAreRefused) {
  const AuditPath p = make_path("race_pstable");
  AuditOptions o = options_for(p.claim);
  o.file_runs = 2;
  EXPECT_THROW(run_audit(p, o), UsageError);
}

class RealFilePath : public ::testing::TestWithParam<std::string> {};

TEST_P(RealFilePath, PassesTheWholeFileCheck) {
  const std::vector<double> epsilons = thorough() ? std::vector<double>{0.25, 1.0, 4.0} : std::vector<double>{1.0};
  for (const double eps : epsilons) {
    PathOptions po;
    po.epsilon = eps;
    const AuditPath p = make_path(GetParam(), po);
    const auto r = run_audit(p, options_for(p.claim, thorough() ? 0.999 : 0.99));
    std::cout << r.summary() << std::endl;
    ASSERT_TRUE(r.file_tested) << GetParam();
    EXPECT_TRUE(r.file_ok) << r.summary();
    EXPECT_TRUE(r.pass()) << r.summary();
    EXPECT_GT(r.file_fields, 20u) << "the header is compared field by field";
  }
}

INSTANTIATE_TEST_SUITE_P(AuditFile, RealFilePath, ::testing::ValuesIn(file_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(AuditFilePaths, MechanismAndLocalPathsWriteNoFile) {
  EXPECT_FALSE(make_path("mechanism_discrete_laplace_table").release_files);
  EXPECT_FALSE(make_path("ldp_bit").release_files);
  EXPECT_GE(file_paths().size(), 12u);
}

}  // namespace
}  // namespace privrace::audit
