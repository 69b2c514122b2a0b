// The release API (sketch/release.hpp): a seeded release equals the pre-API path (make_family +
// build + privatize with the seeds derived from the master) byte for byte, the counts do not
// depend on the thread count, validation names the field, exact counts cannot be written as a
// release, merges refuse private + exact and different parameters, and feature sketches
// (rff, hist) go through the same calls.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/sketch/set_builder.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

namespace privrace {
// ExactSketch's adopting constructor is private (only the release API makes exact sketches);
// this test reaches it to check its refusals.
struct ExactSketchTestAccess {
  static ExactSketch adopt(RaceSketch counts, BuildReport report) { return ExactSketch(std::move(counts), std::move(report)); }
};
}  // namespace privrace

namespace fs = std::filesystem;
using namespace privrace;
using privrace::testing::message_of;

namespace {

std::vector<std::int64_t> counts_of(const RaceSketch& s) { return {s.counts().begin(), s.counts().end()}; }


ReleaseParams l2_params(std::size_t rows = 40, std::size_t width = 64) {
  ReleaseParams p;
  p.family.kernel = Kernel::L2;
  p.family.bandwidth = 1.5;
  p.family.rows = rows;
  p.width = width;
  p.seed = 7;
  p.privacy = PrivacySpec{.epsilon = 1.0};
  return p;
}

SetCollection some_sets(std::size_t n, std::uint64_t seed) {
  SeededRandom rng(seed);
  SetCollection sets;
  std::vector<std::uint32_t> cur;
  for (std::size_t i = 0; i < n; ++i) {
    cur.clear();
    const std::size_t k = rng.below(20);  // some empty sets too
    for (std::size_t j = 0; j < k; ++j) cur.push_back(static_cast<std::uint32_t>(rng.below(500)));
    std::sort(cur.begin(), cur.end());
    cur.erase(std::unique(cur.begin(), cur.end()), cur.end());
    sets.push_back(cur);
  }
  return sets;
}

// Uniform points in [0, 1)^d.
DenseMatrix unit_points(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.unit());
  return x;
}

// No function writes an ExactSketch: only a Release (or, deliberately, a RaceSketch with the flag).
template <class T>
concept Saveable = requires(const T& t) { save_release(std::string{}, t); };
static_assert(Saveable<Release>);
static_assert(!Saveable<ExactSketch>);

}  // namespace

TEST(Release, SeedsAreDerivedFromTheMaster) {
  const MasterSeed s = MasterSeed::resolve(7);
  EXPECT_TRUE(s.fixed());
  EXPECT_EQ(s.hash_seed(), derive_seed(7, 101));
  EXPECT_TRUE(s.noise().seeded);
  EXPECT_EQ(s.noise().seed, derive_seed(7, 202));
  EXPECT_FALSE(MasterSeed::resolve(std::nullopt).fixed());
  EXPECT_FALSE(MasterSeed::resolve(std::nullopt).noise().seeded);  // the OS CSPRNG
}

TEST(Release, SeededDenseReleaseEqualsThePreviousPath) {
  const DenseMatrix x = privrace::testing::clustered_points(9000, 3, 21);
  for (const Kernel kernel : {Kernel::L2, Kernel::Angular, Kernel::AngularPair}) {
    ReleaseParams p = l2_params();
    p.family.kernel = kernel;
    p.family.power = kernel == Kernel::L2 ? 1 : 3;
    p.family.pair_mode = PairMode::Insert;
    p.threads = 2;
    const Release r = build_exact(p, MasterSeed::resolve(p.seed), x).release();

    // By hand, as `privrace sketch --seed 7` did before the API.
    FamilySpec fam = p.family;
    fam.dim = 3;
    fam.seed = derive_seed(7, 101);
    RaceSketch old(std::shared_ptr<const LshFamily>(make_family(fam)), p.width);
    build_dense(old, x, BuildOptions{.threads = 2});
    privatize(old, *p.privacy, NoiseSource{true, derive_seed(7, 202)});

    EXPECT_EQ(counts_of(r.sketch()), counts_of(old)) << to_string(kernel);
    EXPECT_EQ(sketch_header(r.sketch()), sketch_header(old)) << to_string(kernel);
    EXPECT_TRUE(r.is_private());
    EXPECT_EQ(r.build().points, 9000u);
  }
}

TEST(Release, StreamedAndInMemoryBuildsAgree) {
  const DenseMatrix x = privrace::testing::clustered_points(10000, 4, 3);
  const ReleaseParams p = l2_params();
  const MasterSeed seed = MasterSeed::resolve(p.seed);
  std::size_t next = 0;
  const Release streamed = build_exact(p, seed, 4, [&](DenseMatrix& chunk) {
                             const std::size_t n = std::min<std::size_t>(4096, 10000 - next);
                             chunk = x.middleRows(static_cast<Eigen::Index>(next), static_cast<Eigen::Index>(n));
                             next += n;
                             return n;
                           }).release();
  const Release whole = build_exact(p, seed, x).release();
  EXPECT_EQ(counts_of(streamed.sketch()), counts_of(whole.sketch()));
}

TEST(Release, SeededSetReleaseEqualsThePreviousPath) {
  const SetCollection sets = some_sets(3000, 5);
  ReleaseParams p = l2_params(30, 50);
  p.family.kernel = Kernel::Jaccard;
  const Release r = build_exact(p, MasterSeed::resolve(p.seed), sets).release();
  FamilySpec fam = p.family;
  fam.seed = derive_seed(7, 101);
  RaceSketch old(std::shared_ptr<const LshFamily>(make_family(fam)), p.width);
  build_set_sketch(old, sets, SetBuildOptions{.threads = 1});
  privatize(old, *p.privacy, NoiseSource{true, derive_seed(7, 202)});
  EXPECT_EQ(counts_of(r.sketch()), counts_of(old));
  EXPECT_EQ(to_string(r.build().strategy), "two_phase");
  EXPECT_THROW(build_exact(p, MasterSeed::resolve(1), privrace::testing::clustered_points(10, 2, 1)), UsageError);
  EXPECT_THROW(build_exact(l2_params(), MasterSeed::resolve(1), sets), UsageError);
}

TEST(Release, CountsDoNotDependOnTheThreadCount) {
  const DenseMatrix x = privrace::testing::clustered_points(20000, 3, 8);
  const SetCollection sets = some_sets(4000, 9);
  for (const std::string strategy : {"auto", "replicate", "split_rows"}) {
    std::vector<std::vector<std::int64_t>> dense, set;
    for (const int threads : {1, 2}) {
      ReleaseParams p = l2_params();
      p.threads = threads;
      p.strategy = parse_build_strategy(strategy, p.kernel());
      dense.push_back(counts_of(build_exact(p, MasterSeed::resolve(p.seed), x).release().sketch()));
      p.family.kernel = Kernel::Jaccard;
      set.push_back(counts_of(build_exact(p, MasterSeed::resolve(p.seed), sets).release().sketch()));
    }
    EXPECT_EQ(dense[0], dense[1]) << strategy;
    EXPECT_EQ(set[0], set[1]) << strategy;
  }
}

TEST(Release, ValidationNamesTheField) {
  auto msg = [](ReleaseParams p, std::string_view prefix = "--") { return message_of([&] { p.validate(prefix); }); };
  ReleaseParams p = l2_params();
  EXPECT_EQ(msg(p), "(no exception)");
  p.family.rows = 0;
  EXPECT_EQ(msg(p), "--rows must be at least 1");
  EXPECT_EQ(msg(p, ""), "rows must be at least 1");
  p = l2_params();
  p.width = 0;
  EXPECT_EQ(msg(p), "--width must be at least 1");
  p = l2_params();
  p.family.power = 65;
  EXPECT_NE(msg(p).find("power (p)"), std::string::npos);
  p = l2_params();
  p.family.bandwidth = -1;
  EXPECT_NE(msg(p).find("bandwidth"), std::string::npos);
  p = l2_params();
  p.family.kernel = Kernel::AngularPair;
  // A pair mode is parsed where its name is read (the front ends, a header): an enum here.
  EXPECT_NE(message_of([] { parse_pair_mode("both"); }).find("pair mode"), std::string::npos);
  p = l2_params();
  p.threads = -2;
  EXPECT_EQ(msg(p), "--threads must be 0 (all) or positive, got -2");
  p = l2_params();
  p.privacy->epsilon = 0;
  EXPECT_NE(msg(p).find("epsilon must be a positive finite number"), std::string::npos);
  p = l2_params();
  p.privacy->delta = 0.1;
  EXPECT_NE(msg(p).find("delta"), std::string::npos);
  p = l2_params(1000000, 4000000000);
  EXPECT_THROW(p.validate(), ResourceError);
  EXPECT_NE(msg(p).find("MiB"), std::string::npos);

  ReleaseParams f;
  f.family.kernel = Kernel::Rff;
  f.family.features = 7;
  EXPECT_EQ(msg(f), "--features must be a positive even number (m = 2 m' random Fourier features), got 7");
  f.family.features = 8;
  f.family.sigma = 0;
  EXPECT_NE(msg(f).find("--sigma must be a positive number"), std::string::npos);
  f.family.sigma = 1;
  f.privacy = PrivacySpec{.epsilon = 1.0, .mechanism = NoiseMechanism::FlooredLaplace};
  EXPECT_NE(msg(f).find("--mechanism floored_laplace"), std::string::npos);
  f.privacy->mechanism = NoiseMechanism::DiscreteLaplace;
  f.num_share = 1.0;
  EXPECT_NE(msg(f).find("--num-share must be in (0, 1)"), std::string::npos);
  f.num_share = 0.98;
  EXPECT_EQ(msg(f), "(no exception)");
  EXPECT_DOUBLE_EQ(f.noise_spec().count_share, 1.0 - 0.98);
  EXPECT_EQ(f.rows(), 2u);
  EXPECT_EQ(f.columns(), 4u);
  ReleaseParams h;
  h.family.kernel = Kernel::Hist;
  EXPECT_EQ(msg(h), "--bins must be at least 1, got 0");
  h.family.bins = 4;
  EXPECT_NE(msg(h).find("--kernel hist needs --domain LO:HI"), std::string::npos);

  EXPECT_EQ(parse_kernel("jaccard_classic"), Kernel::JaccardClassic);
  EXPECT_EQ(to_string(Kernel::AngularPair), "angular_pair");
  EXPECT_EQ(message_of([] { parse_kernel("gaussian"); }),
            "unknown kernel 'gaussian' (expected l2, angular, angular_pair, jaccard, jaccard_classic, rff or hist)");
}

TEST(Release, ExactCountsAreNeverWrittenAsARelease) {
  const fs::path dir = privrace::testing::temp_dir("release_exact");
  const DenseMatrix x = privrace::testing::clustered_points(500, 2, 4);
  const ReleaseParams p = l2_params(10, 16);
  const ExactSketch exact = build_exact(p, MasterSeed::resolve(p.seed), x);
  EXPECT_FALSE(exact.counts().is_private());
  // The exact counts in memory are no release: refused without the explicit flag, nothing left.
  EXPECT_THROW(save_sketch((dir / "e.rsk").string(), exact.counts()), UsageError);
  EXPECT_FALSE(fs::exists(dir / "e.rsk"));
  // Noise once: a released copy cannot be privatized again, nor adopted as exact.
  Release r = exact.release(*p.privacy, MasterSeed::resolve(3).noise());
  EXPECT_TRUE(r.is_private());
  RaceSketch noisy = std::move(r).take_sketch();
  EXPECT_THROW(privatize(noisy, *p.privacy, NoiseSource{true, 1}), UsageError);
  EXPECT_THROW(ExactSketchTestAccess::adopt(noisy, BuildReport{}), UsageError);
  // An exact sketch adopted without release parameters has no default release.
  ExactSketch adopted = ExactSketchTestAccess::adopt(exact.counts(), exact.report());
  EXPECT_THROW(std::move(adopted).release(), UsageError);
  // Parameters without privacy: the exact counts, written because they were asked for.
  ReleaseParams none = p;
  none.privacy.reset();
  const Release exact_release = build_exact(none, MasterSeed::resolve(none.seed), x).release();
  EXPECT_FALSE(exact_release.is_private());
  save_release((dir / "n.rsk").string(), exact_release);
  EXPECT_FALSE(load_sketch((dir / "n.rsk").string()).is_private());
  fs::remove_all(dir);
}

TEST(Release, SweepPrivatizesACopyPerEpsilon) {
  const DenseMatrix x = privrace::testing::clustered_points(3000, 3, 6);
  const ReleaseParams p = l2_params(20, 32);
  const ExactSketch exact = build_exact(p, MasterSeed::resolve(p.seed), x);
  const auto before = counts_of(exact.counts());
  const Release a = exact.release(PrivacySpec{.epsilon = 0.5}, NoiseSource{true, 11});
  const Release a2 = exact.release(PrivacySpec{.epsilon = 0.5}, NoiseSource{true, 11});
  const Release b = exact.release(PrivacySpec{.epsilon = 4.0}, NoiseSource{true, 11});
  EXPECT_EQ(counts_of(exact.counts()), before) << "the exact counts stay exact";
  EXPECT_EQ(counts_of(a.sketch()), counts_of(a2.sketch()));
  EXPECT_NE(counts_of(a.sketch()), counts_of(b.sketch()));
  EXPECT_EQ(privacy_record_json(a.sketch().privacy()).at("epsilon"), 0.5);
  EXPECT_EQ(privacy_record_json(b.sketch().privacy()).at("epsilon"), 4.0);
  // The same as the single release of the parameters when given their noise.
  const Release once = build_exact(p, MasterSeed::resolve(p.seed), x).release();
  EXPECT_EQ(counts_of(exact.release(*p.privacy, MasterSeed::resolve(p.seed).noise()).sketch()), counts_of(once.sketch()));
}

namespace {
// privrace sketch under mpirun from 4 ranks on: after a reduce-scatter, slice k of the summed
// counts lies on rank k, which noises and encodes it; the encoded slices travel to rank 0 (as
// bytes, adopted there). Simulated with one copy of the (already summed) exact sketch per rank,
// the other ranks first.
std::optional<Release> release_by_slices(const ExactSketch& exact, const std::vector<std::size_t>& offsets) {
  const std::size_t n = exact.counts().counts().size(), K = offsets.size();
  const auto slice = [&](std::size_t k) { return std::pair{offsets[k], (k + 1 < K ? offsets[k + 1] : n) - offsets[k]}; };
  std::vector<EncodedCountBlocks> sent(K);
  for (std::size_t k = K - 1; k >= 1; --k) {
    const auto [first, len] = slice(k);
    ExactSketch rank = exact;
    const std::optional<Release> none = std::move(rank).release_in_shares(first, len, false, [&](EncodedCountBlocks mine) {
      std::string bytes;  // what MPI carries: the frames as bytes, the block table beside them
      std::vector<std::uint64_t> sizes;
      for (const auto f : mine.frames) bytes += f, sizes.push_back(f.size());
      sent[k] = EncodedCountBlocks::adopt(std::move(bytes), mine.counts, mine.total, mine.planes, sizes, mine.crcs, "rank " + std::to_string(k));
      return EncodedCountBlocks{};
    });
    EXPECT_FALSE(none.has_value()) << "rank " << k;
  }
  ExactSketch root = exact;
  const auto [first, len] = slice(0);
  return std::move(root).release_in_shares(first, len, true, [&](EncodedCountBlocks mine) {
    for (std::size_t k = 1; k < K; ++k) mine.append(std::move(sent[k]));
    return mine;
  });
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST(Release, SlicesNoisedWhereTheyLieGiveTheSeededRelease) {
  const DenseMatrix x = privrace::testing::clustered_points(3000, 3, 21);
  // 5 x 500,000 = 2.5M counts: the exact table sampler (from 2^18 counts on), 3 blocks of the
  // file's encoding (2^20 counts, 16 noise blocks each).
  const ReleaseParams p = l2_params(5, 500000);
  const ExactSketch exact = build_exact(p, MasterSeed::resolve(p.seed), x);
  ExactSketch copy = exact;
  const Release whole = std::move(copy).release();
  ASSERT_EQ(privacy_record_json(whole.sketch().privacy()).at("noise_sampler"), "exact_geometric_table");
  privrace::testing::TempDir dir;
  const std::string whole_file = (dir.path / "whole.rsk").string();
  save_release(whole_file, whole);
  constexpr std::size_t B = ExactSketch::kShareAlignment;
  for (const std::vector<std::size_t>& offsets : std::vector<std::vector<std::size_t>>{
           {0}, {0, B}, {0, B, 2 * B}, {0, B, 2 * B, 2500000} /* the last slice empty */}) {
    const std::optional<Release> r = release_by_slices(exact, offsets);
    ASSERT_TRUE(r.has_value());
    // Written first, from the blocks the slices encoded and nothing decoded (the header's n_hat
    // from the sum the blocks carry): the bytes one process writes.
    const std::string sliced_file = (dir.path / ("sliced" + std::to_string(offsets.size()) + ".rsk")).string();
    save_release(sliced_file, *r);
    EXPECT_EQ(file_bytes(sliced_file), file_bytes(whole_file)) << offsets.size() << " slices";
    EXPECT_EQ(r->rows(), whole.sketch().rows());
    // Then the counts, decoded at this first use (the root's own slice kept, not decoded).
    EXPECT_EQ(counts_of(r->sketch()), counts_of(whole.sketch())) << offsets.size() << " slices";
    EXPECT_EQ(privacy_record_json(r->sketch().privacy()).dump(), privacy_record_json(whole.sketch().privacy()).dump());
    EXPECT_TRUE(r->is_private());
  }
  // A slice must start on an encoding block (whole noise blocks too): otherwise its noise
  // would draw other streams and its blocks would not join.
  EXPECT_NE(message_of([&] { (void)release_by_slices(exact, {0, kNoiseBlockCounts}); }).find("whole blocks of 1048576 counts"),
            std::string::npos);

  // hist with 3 x 400,000 bins: rank 0 also draws the released record count, from its own stream.
  ReleaseParams hist;
  hist.family.kernel = Kernel::Hist;
  hist.family.bins = 400000;
  hist.family.lo = {-20.0};
  hist.family.hi = {20.0};
  hist.seed = 3;
  hist.privacy = PrivacySpec{.epsilon = 1.0};
  const ExactSketch hist_exact = build_exact(hist, MasterSeed::resolve(hist.seed), x);
  ExactSketch hist_copy = hist_exact;
  const Release hist_whole = std::move(hist_copy).release();
  const std::optional<Release> hist_sliced = release_by_slices(hist_exact, {0, B});
  ASSERT_TRUE(hist_sliced.has_value());
  EXPECT_EQ(counts_of(hist_sliced->sketch()), counts_of(hist_whole.sketch()));
  EXPECT_EQ(privacy_record_json(hist_sliced->sketch().privacy()).dump(), privacy_record_json(hist_whole.sketch().privacy()).dump());
  EXPECT_TRUE(privacy_record_json(hist_whole.sketch().privacy()).contains("epsilon_den"));

  // Without privacy the slices are gathered exact, and the release says it was asked for.
  ReleaseParams none = p;
  none.privacy.reset();
  const ExactSketch none_exact = build_exact(none, MasterSeed::resolve(none.seed), x);
  const std::optional<Release> exact_sliced = release_by_slices(none_exact, {0, B, 2 * B});
  ASSERT_TRUE(exact_sliced.has_value());
  EXPECT_FALSE(exact_sliced->is_private());
  EXPECT_EQ(counts_of(exact_sliced->sketch()), counts_of(none_exact.counts()));
}

TEST(Release, ExactSharesCombineBeforeTheRelease) {
  // Two shares (MPI ranks, Dask partitions) merged exactly, then released once, equal one build.
  const DenseMatrix x = privrace::testing::clustered_points(8192, 3, 12);
  const ReleaseParams p = l2_params(16, 32);
  const MasterSeed seed = MasterSeed::resolve(p.seed);
  ExactSketch first = build_exact(p, seed, DenseMatrix(x.topRows(4096)));
  first.merge(build_exact(p, seed, DenseMatrix(x.bottomRows(4096))));
  EXPECT_EQ(first.report().points, 8192u);
  const Release merged = std::move(first).release();
  const Release whole = build_exact(p, seed, x).release();
  EXPECT_EQ(counts_of(merged.sketch()), counts_of(whole.sketch()));
  EXPECT_EQ(merged.build().points, 8192u);
  EXPECT_FALSE(merged.build_record("dir/in.csv").contains("input")) << "a private file names no input";
  EXPECT_THROW(build_exact(p, MasterSeed::resolve(8), x).merge(build_exact(p, seed, x)), InputError);
}

TEST(Release, MergeChecksParametersAndPrivacy) {
  const DenseMatrix x = privrace::testing::clustered_points(2000, 2, 14);
  // Two owners: one public hash seed, each its own noise (seeds 7 and 8 stand for the CSPRNG here).
  ReleaseParams p = l2_params(8, 16);
  p.hash_seed = 1234;
  ReleaseParams q = p;
  q.seed = 8;
  const RaceSketch a = build_exact(p, MasterSeed::resolve(p.seed), DenseMatrix(x.topRows(1000))).release().sketch();
  const RaceSketch b = build_exact(q, MasterSeed::resolve(q.seed), DenseMatrix(x.bottomRows(1000))).release().sketch();
  ReleaseParams none = p;
  none.privacy.reset();
  const RaceSketch exact = build_exact(none, MasterSeed::resolve(p.seed), x).release().sketch();
  ReleaseParams other = p;
  other.hash_seed.reset();
  const RaceSketch other_seed = build_exact(other, MasterSeed::resolve(99), x).release().sketch();

  RaceSketch target = a;
  {
    ReleaseMerge m(target, "a.rsk");
    EXPECT_EQ(message_of([&] { m.add(exact, "e.rsk"); }),
              "cannot merge 'e.rsk' into 'a.rsk': cannot merge a private sketch with a non-private one: the sum would expose exact counts");
    EXPECT_EQ(counts_of(target), counts_of(a)) << "a refused part leaves the target unchanged";
    const std::string diff = message_of([&] { m.add(other_seed, "s.rsk"); });
    EXPECT_EQ(diff.rfind("cannot merge 's.rsk' into 'a.rsk': different seed", 0), 0u) << diff;
    EXPECT_EQ(counts_of(target), counts_of(a));
    m.add(b, "b.rsk");
    m.finish();
  }
  for (std::size_t i = 0; i < a.counts().size(); ++i) ASSERT_EQ(target.counts()[i], a.counts()[i] + b.counts()[i]);
  EXPECT_TRUE(target.is_private());
  EXPECT_EQ(privacy_record_json(target.privacy()).at("merged_from").size(), 2u);
  EXPECT_EQ(privacy_record_json(target.privacy()).at("composition").get<std::string>().rfind("parallel", 0), 0u);
  EXPECT_EQ(privacy_record_json(target.privacy()).at("neighbors"), "add-remove");
  EXPECT_DOUBLE_EQ(privacy_record_json(target.privacy()).at("epsilon").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(privacy_record_json(target.privacy()).at("epsilon_if_overlapping").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(privacy_record_json(target.privacy()).at("noise_variance").get<double>(),
                   privacy_record_json(a.privacy()).at("noise_variance").get<double>() + privacy_record_json(b.privacy()).at("noise_variance").get<double>());
  RaceSketch unnamed = a;
  ReleaseMerge m(unnamed);
  EXPECT_EQ(message_of([&] { m.add(other_seed); }).rfind("cannot merge: different seed", 0), 0u);
}

TEST(Release, MergeRefusesPartsThatShareTheirNoise) {
  const DenseMatrix x = privrace::testing::clustered_points(2000, 2, 15);
  ReleaseParams p = l2_params(8, 16);
  // Two halves of one --seed: the same noise in both (noisy A - noisy B = exact A - exact B).
  const RaceSketch a = build_exact(p, MasterSeed::resolve(p.seed), DenseMatrix(x.topRows(1000))).release().sketch();
  const RaceSketch b = build_exact(p, MasterSeed::resolve(p.seed), DenseMatrix(x.bottomRows(1000))).release().sketch();
  EXPECT_EQ(privacy_record_json(a.privacy()).at("noise_id"), privacy_record_json(b.privacy()).at("noise_id"));
  EXPECT_FALSE(privacy_record_json(a.privacy()).contains("noise_seed")) << "a fingerprint of the noise seed, never the seed";
  RaceSketch t = a;
  ReleaseMerge m(t, "a.rsk");
  EXPECT_NE(message_of([&] { m.add(b, "b.rsk"); }).find("share their noise"), std::string::npos);
  EXPECT_NE(message_of([&] { m.add(a, "a2.rsk"); }).find("share their noise"), std::string::npos);
  EXPECT_EQ(counts_of(t), counts_of(a));
  // A release (CSPRNG noise) merged with itself, and a merge merged with one of its parts.
  ReleaseParams r = p;
  r.seed.reset();
  r.hash_seed = 5;
  const RaceSketch c = build_exact(r, MasterSeed::resolve(r.seed), DenseMatrix(x.topRows(1000))).release().sketch();
  const RaceSketch d = build_exact(r, MasterSeed::resolve(r.seed), DenseMatrix(x.bottomRows(1000))).release().sketch();
  EXPECT_NE(privacy_record_json(c.privacy()).at("noise_id"), privacy_record_json(d.privacy()).at("noise_id"));
  EXPECT_TRUE(privacy_record_json(c.privacy()).at("fit_for_release").get<bool>());
  RaceSketch cc = c;
  ReleaseMerge self(cc);
  EXPECT_NE(message_of([&] { self.add(c); }).find("share their noise"), std::string::npos);
  RaceSketch cd = c;
  ReleaseMerge both(cd);
  both.add(d);
  both.finish();
  EXPECT_TRUE(privacy_record_json(cd.privacy()).at("fit_for_release").get<bool>());
  RaceSketch again = cd;
  ReleaseMerge nested(again);
  EXPECT_NE(message_of([&] { nested.add(d); }).find("share their noise"), std::string::npos);
}

// Over 200 merges of two owners' released halves (one public hash seed, CSPRNG noise), the merged
// noise (merged counts minus the exact counts of the whole) has the variance the record states.
TEST(Release, MergedNoiseHasTheRecordedVariance) {
  const DenseMatrix x = privrace::testing::clustered_points(600, 2, 16);
  ReleaseParams p = l2_params(8, 16);
  p.seed.reset();
  p.hash_seed = 77;
  p.privacy->epsilon = 2.0;
  ReleaseParams none = p;
  none.privacy.reset();
  const MasterSeed any = MasterSeed::resolve(std::nullopt);
  const ExactSketch whole = build_exact(none, any, x);
  const ExactSketch top = build_exact(none, any, DenseMatrix(x.topRows(300)));
  const ExactSketch bottom = build_exact(none, any, DenseMatrix(x.bottomRows(300)));
  double sum = 0.0, sum2 = 0.0, recorded = 0.0;
  std::size_t n = 0;
  for (int trial = 0; trial < 200; ++trial) {
    RaceSketch m = top.release(*p.privacy, any.noise()).sketch();
    ReleaseMerge merge(m);
    merge.add(bottom.release(*p.privacy, any.noise()).sketch());
    merge.finish();
    recorded = privacy_record_json(m.privacy()).at("noise_variance").get<double>();
    for (std::size_t i = 0; i < m.counts().size(); ++i) {
      const double z = static_cast<double>(m.counts()[i] - whole.counts().counts()[i]);
      sum += z;
      sum2 += z * z;
      ++n;
    }
  }
  const double mean = sum / static_cast<double>(n), var = sum2 / static_cast<double>(n) - mean * mean;
  // 25,600 draws of a sum of two discrete Laplace: relative standard error of the variance ~1.4%.
  EXPECT_NEAR(var / recorded, 1.0, 0.07) << "measured " << var << ", recorded " << recorded;
}

TEST(Release, PrivateHeaderHoldsNoExactField) {
  const DenseMatrix x = privrace::testing::clustered_points(3001, 2, 17);
  ReleaseParams p = l2_params(8, 16);
  const Release r = build_exact(p, MasterSeed::resolve(p.seed), x).release();
  const nlohmann::json build = r.build_record("owner/patients-3001.csv");
  EXPECT_FALSE(build.contains("points"));
  EXPECT_FALSE(build.contains("input"));
  EXPECT_EQ(r.build().points, 3001u) << "the owner's in-memory report keeps the exact count";
  nlohmann::json header = sketch_header(r.sketch());
  header["build"] = build;
  for (const auto& [path, cls] : classify_header(header)) EXPECT_NE(cls, FieldClass::Exact) << path;
  header["build"]["points"] = 3001;
  EXPECT_NE(message_of([&] { check_release_header(header); }).find("'build.points' is exact"), std::string::npos);
  header["build"].erase("points");
  header["graph"] = {{"edge_lines", 4001}};
  EXPECT_NE(message_of([&] { check_release_header(header); }).find("'graph.edge_lines' is exact"), std::string::npos);
  header.erase("graph");
  header["whatever"] = 1;
  EXPECT_NE(message_of([&] { check_release_header(header); }).find("no declared class"), std::string::npos);
  const fs::path dir = privrace::testing::temp_dir("release_header");
  const std::string path = (dir / "leak.rsk").string();
  header.erase("whatever");
  EXPECT_NO_THROW(save_release(path, r, {{"build", build}}));
  EXPECT_THROW(save_release((dir / "leak2.rsk").string(), r, {{"build", {{"points", 3001}}}}), Error);
  EXPECT_FALSE(fs::exists(dir / "leak2.rsk")) << "nothing is written when the header is refused";
  // Exact counts written by request keep their exact fields, and say they are not for release.
  ReleaseParams none = p;
  none.privacy.reset();
  const Release e = build_exact(none, MasterSeed::resolve(p.seed), x).release();
  EXPECT_EQ(e.build_record("in.csv").at("points"), 3001);
  EXPECT_FALSE(privacy_record_json(e.sketch().privacy()).at("fit_for_release").get<bool>());
  EXPECT_TRUE(release_warning(e.sketch().privacy()).has_value());
  EXPECT_TRUE(release_warning(r.sketch().privacy()).has_value()) << "seeded noise";
  fs::remove_all(dir);
}

TEST(Release, ReaderChecksThePrivacyRecordsMeaning) {
  const DenseMatrix x = privrace::testing::clustered_points(500, 2, 18);
  const fs::path dir = privrace::testing::temp_dir("release_meaning");
  ReleaseParams p = l2_params(8, 16);
  p.seed.reset();
  const std::string good = (dir / "good.rsk").string();
  save_release(good, build_exact(p, MasterSeed::resolve(p.seed), x).release());
  ReleaseParams none = p;
  none.privacy.reset();
  const std::string exact = (dir / "exact.rsk").string();
  save_release(exact, build_exact(none, MasterSeed::resolve(7), x).release());
  ReleaseParams seeded = p;
  seeded.seed = 3;
  const std::string seeded_path = (dir / "seeded.rsk").string();
  save_release(seeded_path, build_exact(seeded, MasterSeed::resolve(seeded.seed), x).release());
  EXPECT_NO_THROW(load_sketch(good));
  EXPECT_NO_THROW(load_sketch(exact));
  EXPECT_NO_THROW(load_sketch(seeded_path));
  // A hand-edited privacy record, written with the file's own counts and a valid checksum.
  auto edited = [&](const std::string& from, const std::function<void(nlohmann::json&)>& edit) {
    SketchFileContents c = read_sketch_file(from);
    edit(c.header["privacy"]);
    const std::string out = (dir / "edited.rsk").string();
    write_sketch_file(out, c);
    return message_of([&] { load_sketch(out); });
  };
  auto refused = [](const std::string& msg, const std::string& field) {
    return msg.find("'privacy." + field + "'") != std::string::npos;
  };
  EXPECT_PRED2(refused, edited(exact, [](auto& p) { p["private"] = true; }), "epsilon");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["epsilon"] = 0.001; }), "noise_scale");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["epsilon"] = -1; }), "epsilon");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["epsilon"] = "inf"; }), "epsilon");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["sensitivity_l1"] = 1.0; }), "sensitivity_l1");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["neighbors"] = "anything"; }), "neighbors");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["mechanism"] = "none"; }), "mechanism");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p["mechanism"] = "gaussian"; }), "delta");
  EXPECT_PRED2(refused, edited(good, [](auto& p) { p.erase("neighbors"); }), "neighbors");
  EXPECT_PRED2(refused, edited(seeded_path, [](auto& p) { p["fit_for_release"] = true; }), "fit_for_release");
  EXPECT_PRED2(refused, edited(exact, [](auto& p) { p["fit_for_release"] = true; }), "fit_for_release");
  // The discrete Gaussian: its scale follows (epsilon, delta) through rho-zCDP, not the analytic
  // Gaussian's calibration, and it needs its delta.
  ReleaseParams dg = p;
  dg.privacy = PrivacySpec{.epsilon = 1.0, .delta = 1e-5, .mechanism = NoiseMechanism::DiscreteGaussian};
  const std::string dg_path = (dir / "dg.rsk").string();
  save_release(dg_path, build_exact(dg, MasterSeed::resolve(dg.seed), x).release());
  EXPECT_NO_THROW(load_sketch(dg_path));
  EXPECT_PRED2(refused, edited(dg_path, [](auto& p) { p["delta"] = 1e-3; }), "noise_scale");
  EXPECT_PRED2(refused, edited(dg_path, [](auto& p) { p["mechanism"] = "gaussian"; }), "noise_scale");
  EXPECT_PRED2(refused, edited(dg_path, [](auto& p) { p["mechanism"] = "discrete_laplace"; }), "delta");
  EXPECT_PRED2(refused, edited(dg_path, [](auto& p) { p["delta"] = 0; }), "delta");
  fs::remove_all(dir);
}

// The discrete Gaussian release of neighbouring tables (one record removed) under the same
// seeded noise: the privacy records are identical, and the noisy counts differ exactly as the
// exact counts do, by one in one cell of every row (the L1 and L2 sensitivities R and sqrt(R)
// that calibrate sigma), so nothing of the noise depends on the data.
TEST(Release, DiscreteGaussianNeighboursDifferOnlyByTheirCounts) {
  const DenseMatrix x = privrace::testing::clustered_points(801, 2, 23);
  const DenseMatrix fewer = x.topRows(800);
  ReleaseParams p = l2_params(12, 4096);  // 49,152 counts: rejection sampler
  p.privacy = PrivacySpec{.epsilon = 0.5, .delta = 1e-6, .mechanism = NoiseMechanism::DiscreteGaussian};
  ReleaseParams wide = p;
  wide.width = 32768;  // 393,216 counts: table sampler
  for (const ReleaseParams& params : {p, wide}) {
    const Release a = build_exact(params, MasterSeed::resolve(params.seed), x).release();
    const Release b = build_exact(params, MasterSeed::resolve(params.seed), fewer).release();
    ReleaseParams none = params;
    none.privacy.reset();
    const Release ea = build_exact(none, MasterSeed::resolve(params.seed), x).release();
    const Release eb = build_exact(none, MasterSeed::resolve(params.seed), fewer).release();
    EXPECT_EQ(privacy_record_json(a.sketch().privacy()), privacy_record_json(b.sketch().privacy()));
    EXPECT_EQ(a.sketch().privacy().noise_sampler, params.width == 4096 ? "discrete_gaussian_rejection" : "discrete_gaussian_table");
    const auto ca = a.sketch().counts(), cb = b.sketch().counts(), xa = ea.sketch().counts(), xb = eb.sketch().counts();
    ASSERT_EQ(ca.size(), params.family.rows * params.width);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < ca.size(); ++i) {
      ASSERT_EQ(ca[i] - cb[i], xa[i] - xb[i]) << i;
      differing += ca[i] != cb[i];
    }
    EXPECT_EQ(differing, params.family.rows) << "one cell a row";
    const double rho = zcdp_rho(0.5, 1e-6);
    EXPECT_NEAR(*a.sketch().privacy().noise_scale, std::sqrt(12.0) / std::sqrt(2.0 * rho), 1e-6 * std::sqrt(12.0 / rho));
  }
}

TEST(Release, EdgeNeighboursCalibrateToTheSetsOneEdgeChanges) {
  // One edge changes one node's set (directed) or two (undirected); a set change is a replacement.
  for (const std::size_t rows : {1u, 32u}) {
    const double r = static_cast<double>(rows);
    const Sensitivity rec = race_sensitivity(rows, 1, NeighborRelation::AddRemove, NeighborUnit::Record);
    const Sensitivity edge = race_sensitivity(rows, 1, NeighborRelation::AddRemove, NeighborUnit::Edge);
    const Sensitivity und = race_sensitivity(rows, 1, NeighborRelation::AddRemove, NeighborUnit::UndirectedEdge);
    const Sensitivity und_rep = race_sensitivity(rows, 1, NeighborRelation::Replace, NeighborUnit::UndirectedEdge);
    EXPECT_DOUBLE_EQ(rec.l1, r);
    EXPECT_DOUBLE_EQ(edge.l1, 2 * r);
    EXPECT_DOUBLE_EQ(edge.l2, std::sqrt(2 * r));
    EXPECT_DOUBLE_EQ(und.l1, 4 * r);
    EXPECT_DOUBLE_EQ(und.l2, 2 * std::sqrt(2 * r));
    EXPECT_DOUBLE_EQ(und_rep.l1, 8 * r);
  }
  // The exact change of one edge at a node with one out-neighbour: within the bound, and beyond
  // the record-level bound R (the new neighbour takes the minimum in about half the rows, and
  // each such row moves one count from one column to another: 2 per row).
  ReleaseParams p;
  p.family.kernel = Kernel::Jaccard;
  p.family.rows = 32;
  p.width = 4096;
  p.seed = 3;
  p.threads = 1;
  SetCollection sets = some_sets(200, 9);
  const std::vector<std::uint32_t> big{7};
  sets.push_back(big);
  const Sensitivity bound = race_sensitivity(32, 1, NeighborRelation::AddRemove, NeighborUnit::Edge);
  const RaceSketch d = build_exact(p, MasterSeed::resolve(p.seed), sets).counts();
  double worst = 0.0;
  for (std::uint32_t v = 1000; v < 1040; ++v) {
    SetCollection more;
    for (std::size_t i = 0; i + 1 < sets.size(); ++i) more.push_back(sets.set(i));
    std::vector<std::uint32_t> b = big;
    b.push_back(v);
    more.push_back(b);
    const RaceSketch d2 = build_exact(p, MasterSeed::resolve(p.seed), more).counts();
    double l1 = 0.0;
    for (std::size_t i = 0; i < d.counts().size(); ++i) l1 += static_cast<double>(std::abs(d.counts()[i] - d2.counts()[i]));
    EXPECT_LE(l1, bound.l1);
    worst = std::max(worst, l1);
  }
  EXPECT_GT(worst, race_sensitivity(32, 1, NeighborRelation::AddRemove).l1) << "the record-level bound R is exceeded by one edge";
}

TEST(Release, FeatureSketchesRoundTrip) {
  const fs::path dir = privrace::testing::temp_dir("release_feature");
  const DenseMatrix x = unit_points(3000, 3, 2);
  // rff: the same as the pre-API path, written and read back as M2M reads it.
  ReleaseParams rff;
  rff.family.kernel = Kernel::Rff;
  rff.family.features = 20;
  rff.family.sigma = 0.5;
  rff.seed = 4;
  rff.privacy = PrivacySpec{.epsilon = 2.0};
  const Release r = build_exact(rff, MasterSeed::resolve(rff.seed), x).release();
  FamilySpec fam = rff.family;
  fam.dim = 3;
  fam.seed = derive_seed(4, 101);
  RaceSketch old(std::shared_ptr<const LshFamily>(make_family(fam)), 10);
  build_dense(old, x);
  PrivacySpec spec = *rff.privacy;
  spec.count_share = 1.0 - 0.98;
  privatize(old, spec, NoiseSource{true, derive_seed(4, 202)});
  EXPECT_EQ(counts_of(r.sketch()), counts_of(old));
  save_release((dir / "r.rsk").string(), r);
  const FeatureSketchRelease back = load_feature_release((dir / "r.rsk").string());
  EXPECT_TRUE(back.is_private);
  EXPECT_EQ(back.map->kind(), "rff");
  EXPECT_EQ(back.sums.size(), 20);
  EXPECT_DOUBLE_EQ(back.epsilon, 2.0);
  EXPECT_NEAR(back.count, 3000.0, 1000.0);
  // A feature release needs a count: a spec without a count share is refused.
  const ExactSketch exact_rff = build_exact(rff, MasterSeed::resolve(rff.seed), x);
  EXPECT_THROW(exact_rff.release(PrivacySpec{.epsilon = 1.0}, NoiseSource{true, 1}), UsageError);
  EXPECT_TRUE(exact_rff.release(spec, NoiseSource{true, 1}).is_private());

  // hist without privacy: the exact count is recorded; records outside the domain are refused.
  ReleaseParams hist;
  hist.family.kernel = Kernel::Hist;
  hist.family.bins = 5;
  hist.family.lo = {0.0};
  hist.family.hi = {1.0};
  hist.seed = 1;
  const Release h = build_exact(hist, MasterSeed::resolve(hist.seed), x).release();
  EXPECT_EQ(h.sketch().rows(), 3u);
  EXPECT_EQ(privacy_record_json(h.sketch().privacy()).at("count"), 3000);
  save_release((dir / "h.rsk").string(), h);
  EXPECT_DOUBLE_EQ(load_feature_release((dir / "h.rsk").string()).count, 3000.0);
  DenseMatrix outside = x;
  outside(5, 1) = 2.0f;
  EXPECT_THROW(build_exact(hist, MasterSeed::resolve(hist.seed), outside), InputError);
  fs::remove_all(dir);
}

// A thread count beyond kMaxThreads is refused before anything runs (100000 threads crashed
// the build: libgomp lays out a start record per thread on the caller's stack), so every front
// end passing through validate() (the CLI, Python's fit) is bounded.
TEST(Release, ValidateBoundsTheThreadCount) {
  ReleaseParams p = l2_params();
  p.threads = 100000;
  EXPECT_THROW(p.validate(), UsageError);
  EXPECT_EQ(message_of([&] { p.validate("--"); }),
            "--threads must be at most " + std::to_string(kMaxThreads) + " (0 = all cores), got 100000");
  p.threads = kMaxThreads;
  EXPECT_NO_THROW(p.validate());
  p.threads = 0;
  EXPECT_NO_THROW(p.validate());
}

TEST(Release, ValidateChecksTheStrategyBeforeAnyData) {
  ReleaseParams p = l2_params();
  // A strategy's name is parsed once, where it is read (the front ends), with today's message.
  EXPECT_EQ(message_of([&] { p.strategy = parse_build_strategy("bogus", p.kernel()); }),
            "--strategy must be one of auto, replicate, split_rows for the l2 kernel, got 'bogus'");
  p.strategy = BuildStrategy::TwoPhase;  // sets only
  EXPECT_EQ(message_of([&] { p.validate(); }),
            "--strategy must be one of auto, replicate, split_rows for the l2 kernel, got 'two_phase'");
  EXPECT_THROW(p.validate(), UsageError);
  p.family.kernel = Kernel::Jaccard;
  EXPECT_NO_THROW(p.validate());
  for (const char* s : {"auto", "replicate", "split_rows"}) {
    p.strategy = parse_build_strategy(s, p.kernel());
    EXPECT_NO_THROW(p.validate()) << s;
  }
}
