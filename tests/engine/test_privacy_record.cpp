// The typed privacy record (privacy/record.hpp) and its one meeting with JSON at the file edge
// (sketch/release_record.hpp): a record -> JSON -> record round trip gives the record back
// (merged records and their parts included), a header written, read and written again is the
// same bytes, the reader names a mistyped field, and fields it does not interpret are kept.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using privrace::testing::message_of;

namespace {

ReleaseParams l2_params(std::uint64_t seed, std::optional<PrivacySpec> privacy = PrivacySpec{.epsilon = 1.0}) {
  ReleaseParams p;
  p.family.kernel = Kernel::L2;
  p.family.bandwidth = 1.5;
  p.family.rows = 12;
  p.width = 32;
  p.seed = seed;
  p.privacy = privacy;
  return p;
}

ReleaseParams rff_params(std::uint64_t seed) {
  ReleaseParams p;
  p.family.kernel = Kernel::Rff;
  p.family.features = 8;
  p.family.sigma = 0.5;
  p.seed = seed;
  p.privacy = PrivacySpec{.epsilon = 2.0};
  return p;
}

Release released(const ReleaseParams& p, const DenseMatrix& x) { return build_exact(p, MasterSeed::resolve(p.seed), x).release(); }

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_round_trip(const PrivacyRecord& record, const std::string& what) {
  const nlohmann::json j = privacy_record_json(record);
  const PrivacyRecord back = privacy_record_from_json(j);
  EXPECT_TRUE(back == record) << what << ": " << j.dump();
  EXPECT_EQ(privacy_record_json(back).dump(), j.dump()) << what;
}

}  // namespace

TEST(PrivacyRecord, RoundTripsThroughJson) {
  const DenseMatrix x = privrace::testing::clustered_points(400, 2, 5);
  const Release seeded = released(l2_params(3), x);
  ReleaseParams os_noise = l2_params(3);
  os_noise.seed.reset();  // noise from the CSPRNG: fit for release, a fresh noise_id
  const Release csprng = released(os_noise, x);
  const Release exact = released(l2_params(4, std::nullopt), x);
  const Release gaussian = released(l2_params(5, PrivacySpec{.epsilon = 1.0, .delta = 1e-6, .mechanism = NoiseMechanism::Gaussian}), x);
  const Release feature = released(rff_params(6), x);
  const Release discrete_gaussian =
      released(l2_params(7, PrivacySpec{.epsilon = 1.0, .delta = 1e-6, .mechanism = NoiseMechanism::DiscreteGaussian}), x);
  EXPECT_EQ(discrete_gaussian.sketch().privacy().mechanism, NoiseMechanism::DiscreteGaussian);
  for (const Release* r : {&seeded, &csprng, &exact, &gaussian, &feature, &discrete_gaussian})
    expect_round_trip(r->sketch().privacy(), privacy_record_json(r->sketch().privacy()).dump());
  EXPECT_TRUE(seeded.sketch().privacy().is_private);
  EXPECT_EQ(seeded.sketch().privacy().mechanism, NoiseMechanism::DiscreteLaplace);
  EXPECT_EQ(seeded.sketch().privacy().neighbors, NeighborRelation::AddRemove);
  EXPECT_FALSE(seeded.sketch().privacy().fit());
  EXPECT_TRUE(csprng.sketch().privacy().fit());
  EXPECT_TRUE(feature.sketch().privacy().count.has_value());
  EXPECT_TRUE(feature.sketch().privacy().epsilon_num.has_value());

  // A merged record: parallel composition of typed parts, each part's record kept.
  const RaceSketch b = released(l2_params(8), x).sketch();
  ReleaseParams p9 = l2_params(9);
  p9.hash_seed = 7;  // hash functions of seed 7's, noise of its own
  ReleaseParams p7 = l2_params(7);
  p7.hash_seed = 7;
  RaceSketch c = released(p7, x).sketch();
  const RaceSketch d = released(p9, x).sketch();
  ReleaseMerge merge(c);
  merge.add(d);
  merge.finish();
  const PrivacyRecord& m = c.privacy();
  ASSERT_EQ(m.merged_from.size(), 2u);
  EXPECT_TRUE(m.merged_from[0] == released(p7, x).sketch().privacy());
  EXPECT_EQ(m.epsilon, 1.0);
  EXPECT_EQ(m.epsilon_if_overlapping, 2.0);
  expect_round_trip(m, "merged");
  // A merge of merges, and of exact parts (merged_parts, the exact count summed).
  const PrivacyRecord nested = merged_privacy({m, b.privacy()});
  ASSERT_EQ(nested.merged_from.size(), 2u);
  EXPECT_TRUE(nested.merged_from[0].merged());
  expect_round_trip(nested, "merged of merged");
  RaceSketch e1 = released(l2_params(4, std::nullopt), x).sketch();
  record_exact_count(e1);
  const PrivacyRecord exact_merge = merged_privacy({e1.privacy(), e1.privacy()});
  EXPECT_EQ(exact_merge.merged_parts, 2u);
  EXPECT_EQ(exact_merge.count_value(), 800.0);
  expect_round_trip(exact_merge, "merged exact");
}

TEST(PrivacyRecord, HeaderWrittenReadAndRewrittenIsTheSameBytes) {
  const fs::path dir = privrace::testing::temp_dir("privacy_record_bytes");
  const DenseMatrix x = privrace::testing::clustered_points(500, 2, 6);
  ReleaseParams p1 = l2_params(11), p2 = l2_params(12);
  p1.hash_seed = p2.hash_seed = 5;
  RaceSketch merged = released(p1, x).sketch();
  ReleaseMerge merge(merged);
  merge.add(released(p2, x).sketch());
  merge.finish();
  RaceSketch edges = released(l2_params(13), x).sketch();
  const std::vector<std::pair<std::string, RaceSketch>> cases = {
      {"private", released(l2_params(11), x).sketch()},
      {"gaussian", released(l2_params(14, PrivacySpec{.epsilon = 0.5, .delta = 1e-5, .mechanism = NoiseMechanism::Gaussian}), x).sketch()},
      {"rff", released(rff_params(15), x).sketch()},
      {"discrete_gaussian",
       released(l2_params(16, PrivacySpec{.epsilon = 0.5, .delta = 1e-5, .mechanism = NoiseMechanism::DiscreteGaussian}), x).sketch()},
      {"merged", merged}};
  for (const auto& [name, sketch] : cases) {
    const fs::path first = dir / (name + ".rsk"), second = dir / (name + "-again.rsk");
    save_sketch(first.string(), sketch);
    nlohmann::json header;
    const RaceSketch back = load_sketch(first.string(), &header);
    EXPECT_TRUE(back.privacy() == sketch.privacy()) << name;
    EXPECT_EQ(privacy_record_json(back.privacy()), header.at("privacy")) << name;
    save_sketch(second.string(), back);
    EXPECT_EQ(bytes_of(first), bytes_of(second)) << name;
  }
  // Exact counts with their record count (--no-privacy).
  ReleaseParams none = rff_params(16);
  none.privacy.reset();
  const Release exact = released(none, x);
  save_release((dir / "exact.rsk").string(), exact);
  const RaceSketch back = load_sketch((dir / "exact.rsk").string());
  EXPECT_EQ(back.records(), 500);
  save_sketch((dir / "exact-again.rsk").string(), back, /*allow_nonprivate=*/true);
  const SketchFileContents one = read_sketch_file((dir / "exact.rsk").string());
  const SketchFileContents two = read_sketch_file((dir / "exact-again.rsk").string());
  EXPECT_EQ(one.header.at("privacy").dump(), two.header.at("privacy").dump());
  fs::remove_all(dir);
}

TEST(PrivacyRecord, ReaderNamesMistypedFieldsAndKeepsUnknownOnes) {
  nlohmann::json p = {{"private", true}, {"epsilon", "1"}};
  EXPECT_EQ(message_of([&] { privacy_record_from_json(p, "f: header field 'privacy"); }),
            "f: header field 'privacy.epsilon': expected a number, got \"1\"");
  p = {{"private", 1}};
  EXPECT_NE(message_of([&] { privacy_record_from_json(p, "f: header field 'privacy"); }).find("'privacy.private': expected true or false, got 1"),
            std::string::npos);
  p = {{"private", true}, {"neighbors", "anything"}};
  EXPECT_NE(message_of([&] { privacy_record_from_json(p, "w"); }).find("w.neighbors': expected add-remove or replace, got 'anything'"),
            std::string::npos);
  p = {{"private", true}, {"merged_from", nlohmann::json::array({{{"private", false}}})}};
  EXPECT_NE(message_of([&] { privacy_record_from_json(p, "w"); }).find("w.merged_from': expected an array of two or more records"),
            std::string::npos);
  // Fields this version does not interpret, and values it cannot type in a record whose meaning
  // does not depend on them, are written back as they were.
  p = {{"private", false}, {"fit_for_release", false}, {"custom", {{"a", {1, 2}}}}, {"neighbors", 3}, {"count", 12}};
  const PrivacyRecord r = privacy_record_from_json(p);
  EXPECT_EQ(r.other.size(), 2u);
  EXPECT_EQ(r.count_value(), 12.0);
  EXPECT_EQ(privacy_record_json(r).dump(), p.dump());
}

TEST(PrivacyRecord, ReleaseWarningAndNoiseIdsReadTheTypedRecord) {
  const DenseMatrix x = privrace::testing::clustered_points(200, 2, 7);
  EXPECT_TRUE(release_warning(PrivacyRecord{}).has_value());
  const Release seeded = released(l2_params(3), x);
  EXPECT_NE(release_warning(seeded.sketch().privacy())->find("seed"), std::string::npos);
  PrivacyRecord fit = seeded.sketch().privacy();
  fit.fit_for_release = true;
  EXPECT_FALSE(release_warning(fit).has_value());
  EXPECT_EQ(noise_ids(seeded.sketch().privacy()), std::vector<std::string>{*seeded.sketch().privacy().noise_id});
  const Release other = released(l2_params(4), x);
  const PrivacyRecord m = merged_privacy({seeded.sketch().privacy(), other.sketch().privacy()});
  EXPECT_EQ(noise_ids(m), (std::vector<std::string>{*seeded.sketch().privacy().noise_id, *other.sketch().privacy().noise_id}));
  EXPECT_THROW(merged_privacy({seeded.sketch().privacy(), seeded.sketch().privacy()}), UsageError);  // shared noise
}
