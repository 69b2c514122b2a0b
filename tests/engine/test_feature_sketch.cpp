// Private feature-map sketches (RFF, HIST, RACE) for M2M: exact sums, thread invariance, the
// noise scale of each mechanism, the budget split in the header, files and merges, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "privrace/core/error.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

using namespace privrace;
namespace fs = std::filesystem;

namespace {
DenseMatrix uniform_points(std::size_t n, std::size_t d, std::uint64_t seed, float lo = 0.0f, float hi = 1.0f) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = lo + (hi - lo) * static_cast<float>(rng.unit());
  return x;
}
FeatureSketchSpec rff_spec(std::size_t m = 20) {
  FeatureSketchSpec s;
  s.kind = "rff";
  s.features = m;
  s.sigma = 1.0;
  s.seed = 11;
  return s;
}
FeatureSketchSpec hist_spec(std::size_t bins = 10) {
  FeatureSketchSpec s;
  s.kind = "hist";
  s.bins = bins;
  s.lo = {0.0};
  s.hi = {1.0};
  s.seed = 12;
  return s;
}
FeatureSketchSpec race_spec() {
  FeatureSketchSpec s;
  s.kind = "race";
  s.rows = 8;
  s.width = 16;
  s.bandwidth = 0.5;
  s.seed = 13;
  return s;
}
}  // namespace

TEST(FeatureSketch, RffSumsMatchTheQuantisedFeatures) {
  const DenseMatrix x = uniform_points(500, 3, 1);
  const auto sums = build_feature_sums(x, rff_spec(8), 1);
  EXPECT_EQ(sums->records(), 500);
  DoubleMatrix phi;
  sums->map().features(x, phi);
  const Eigen::VectorXd exact = phi.colwise().sum().transpose();
  const Eigen::VectorXd got = sums->sums();
  ASSERT_EQ(got.size(), 8);
  // Each record's feature is rounded to the grid 2^-20 (error <= 2^-21 each) and float cos/sin
  // are within ~1e-6 of the double ones.
  for (Eigen::Index j = 0; j < 8; ++j) EXPECT_NEAR(got[j], exact[j], 500 * 3e-6) << j;
}

TEST(FeatureSketch, SumsIdenticalOnOneTwoThreeThreads) {
  const DenseMatrix x = uniform_points(20000, 5, 2);
  for (const auto& spec : {rff_spec(40), hist_spec(), race_spec()}) {
    const auto one = build_feature_sums(x, spec, 1);
    for (int t : {2, 3}) {
      const auto many = build_feature_sums(x, spec, t);
      ASSERT_EQ(one->sketch().counts().size(), many->sketch().counts().size());
      EXPECT_TRUE(std::equal(one->sketch().counts().begin(), one->sketch().counts().end(),
                             many->sketch().counts().begin()))
          << spec.kind << " on " << t << " threads";
      EXPECT_EQ(many->records(), 20000);
    }
  }
}

TEST(FeatureSketch, RffNoiseVarianceMatchesTheRecordAndTheDraws) {
  const DenseMatrix x = uniform_points(1000, 4, 3);
  const auto sums = build_feature_sums(x, rff_spec(20), 2);
  FeatureSketchPrivacy priv;
  priv.epsilon = 2.0;
  const Eigen::VectorXd exact = sums->sums();
  double sq = 0.0;
  std::size_t draws = 0;
  FeatureSketchRelease rel;
  for (std::uint64_t s = 0; s < 400; ++s) {
    rel = release_feature_sketch(*sums, priv, NoiseSource{true, 1000 + s});
    sq += (rel.sums - exact).squaredNorm();
    draws += static_cast<std::size_t>(exact.size());
  }
  // Discrete Laplace of scale Delta_1 / eps_num: variance ~ 2 (m' (sqrt 2 + 2^-20) / (0.98 eps))^2.
  const double b = 10.0 * (std::sqrt(2.0) + 1.0 / 1048576.0) / (0.98 * 2.0);
  EXPECT_NEAR(rel.noise_variance, 2.0 * b * b, 1e-3 * 2.0 * b * b);
  EXPECT_NEAR(sq / static_cast<double>(draws), rel.noise_variance, 0.1 * rel.noise_variance);
  EXPECT_DOUBLE_EQ(rel.epsilon_num + rel.epsilon_den, 2.0);
  EXPECT_NEAR(rel.epsilon_num, 1.96, 1e-12);
  EXPECT_TRUE(rel.is_private);
}

namespace {
// Mean squared deviation of the released sums (feature units) from the exact ones, and of the
// released counts, over `draws` seeded releases.
struct NoiseMoments {
  double sums = 0.0, count = 0.0;
  FeatureSketchRelease last;
};
NoiseMoments noise_moments(const FeatureSums& sums, const FeatureSketchPrivacy& priv, std::uint64_t draws) {
  const Eigen::VectorXd exact = sums.sums();
  NoiseMoments m;
  for (std::uint64_t s = 0; s < draws; ++s) {
    m.last = release_feature_sketch(sums, priv, NoiseSource{true, 77 + 1000 * s});
    m.sums += (m.last.sums - exact).squaredNorm();
    const double dc = m.last.count - static_cast<double>(sums.records());
    m.count += dc * dc;
  }
  m.sums /= static_cast<double>(draws) * static_cast<double>(exact.size());
  m.count /= static_cast<double>(draws);
  return m;
}
double discrete_laplace_variance(double scale) {
  const double a = std::exp(-1.0 / scale);
  return 2.0 * a / ((1.0 - a) * (1.0 - a));
}
}  // namespace

TEST(FeatureSketch, HistAndRaceNoiseHaveTheRightScale) {
  const DenseMatrix x = uniform_points(3000, 5, 4);
  FeatureSketchPrivacy priv;
  priv.epsilon = 0.5;
  // HIST: L1 sensitivity d = 5 (one bin per attribute); RACE: R = 8 (one bucket per row).
  for (const auto& [spec, l1] : {std::pair{hist_spec(10), 5.0}, std::pair{race_spec(), 8.0}}) {
    const auto sums = build_feature_sums(x, spec, 2);
    const NoiseMoments m = noise_moments(*sums, priv, 400);
    const double want = discrete_laplace_variance(l1 / (0.98 * 0.5));
    // The sampler's scale is the requested one rounded up to a dyadic rational.
    EXPECT_NEAR(m.last.noise_variance, want, 1e-3 * want) << spec.kind;
    EXPECT_NEAR(m.sums, m.last.noise_variance, 0.1 * m.last.noise_variance) << spec.kind;
    EXPECT_DOUBLE_EQ(m.last.header["privacy"]["sensitivity_l1"].get<double>(), l1) << spec.kind;
    EXPECT_DOUBLE_EQ(m.last.map->l1_sensitivity(), l1) << spec.kind;
  }
}

TEST(FeatureSketch, CountNoiseHasScaleOneOverEpsilonDen) {
  // A tiny sketch, many releases: zeta ~ discrete Laplace of scale 1 / (0.02 eps).
  const DenseMatrix x = uniform_points(100, 1, 5);
  const auto sums = build_feature_sums(x, hist_spec(1), 1);
  FeatureSketchPrivacy priv;
  priv.epsilon = 5.0;  // epsilon_den = 0.1: scale 10
  const NoiseMoments m = noise_moments(*sums, priv, 20000);
  const double want = discrete_laplace_variance(10.0);
  EXPECT_NEAR(m.last.header["privacy"]["count_noise_variance"].get<double>(), want, 1e-3 * want);
  EXPECT_NEAR(m.count, want, 0.1 * want);
  EXPECT_NEAR(m.last.epsilon_den, 0.1, 1e-12);
}

TEST(FeatureSketch, GaussianNoiseHasTheAnalyticSigma) {
  const DenseMatrix x = uniform_points(2000, 3, 6);
  FeatureSketchPrivacy priv;
  priv.epsilon = 1.0;
  priv.mechanism = NoiseMechanism::Gaussian;
  priv.delta = 1e-6;
  for (const auto& spec : {rff_spec(20), hist_spec(8)}) {
    const auto sums = build_feature_sums(x, spec, 2);
    const NoiseMoments m = noise_moments(*sums, priv, 300);
    const auto& p = m.last.header["privacy"];
    const double l2 = p["sensitivity_l2"].get<double>();
    const double q = spec.kind == "rff" ? 1.0 / 1048576.0 : 1.0;
    const double sigma = analytic_gaussian_sigma(0.98, 1e-6, l2);  // container units
    EXPECT_NEAR(m.last.noise_variance, (sigma * sigma + 1.0 / 12.0) * q * q, 1e-9 * sigma * sigma * q * q);
    EXPECT_NEAR(m.sums, m.last.noise_variance, 0.1 * m.last.noise_variance) << spec.kind;
    // L2 sensitivity: sqrt(m') (1 + O(2^-20)) feature units for RFF, sqrt(d) for HIST.
    EXPECT_NEAR(l2 * q, spec.kind == "rff" ? std::sqrt(10.0) : std::sqrt(3.0), 1e-5) << spec.kind;
    EXPECT_EQ(p["count_mechanism"], "discrete_laplace");
  }
}

TEST(FeatureSketch, RffSensitivityHoldsForEveryRecord) {
  // Every single record's quantised features stay inside the derived L1 and L2 bounds, and
  // the L1 bound is m' (floor(sqrt 2 G) + 1) grid units.
  const auto family = make_feature_family(rff_spec(64), 4);
  EXPECT_EQ(family->record_l1(), 32.0 * (std::floor(std::sqrt(2.0) * 1048576.0) + 1.0));
  const DenseMatrix x = uniform_points(3000, 4, 7, -50.0f, 50.0f);
  double worst_l1 = 0.0, worst_l2 = 0.0, worst_pair_l1 = 0.0;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    RaceSketch one(family, 32);
    one.insert_dense(x.middleRows(i, 1));
    const auto c = one.counts();  // one record: cell j of row 0 and of row 1 are its pair j
    double l1 = 0.0, l2 = 0.0;
    for (std::size_t j = 0; j < 32; ++j) {
      const double a = static_cast<double>(c[j]), b = static_cast<double>(c[32 + j]);
      l1 += std::abs(a) + std::abs(b);
      l2 += a * a + b * b;
      worst_pair_l1 = std::max(worst_pair_l1, std::abs(a) + std::abs(b));
      EXPECT_LE(a * a + b * b, static_cast<double>(RandomFourierFeatures::kPairL2Squared));
    }
    worst_l1 = std::max(worst_l1, l1);
    worst_l2 = std::max(worst_l2, std::sqrt(l2));
  }
  EXPECT_LE(worst_l1, family->record_l1());
  EXPECT_LE(worst_l2, family->record_l2());
  EXPECT_LE(worst_pair_l1, static_cast<double>(RandomFourierFeatures::kPairL1));
  // Some phase lands near pi/4 (mod pi/2): the per-pair bound sqrt(2) G is nearly attained.
  EXPECT_GT(worst_pair_l1, 0.9999 * static_cast<double>(RandomFourierFeatures::kPairL1));
}

TEST(FeatureSketch, EpsilonSplitIsRecordedAndSurvivesTheFile) {
  const fs::path dir = privrace::testing::temp_dir("feature_sketch");
  const DenseMatrix x = uniform_points(1500, 4, 8);
  for (const auto& spec : {rff_spec(16), hist_spec(6), race_spec()}) {
    const auto sums = build_feature_sums(x, spec, 2);
    FeatureSketchPrivacy priv;
    priv.epsilon = 3.0;
    priv.num_share = 0.9;
    RaceSketch copy = sums->sketch();
    privatize(copy, feature_privacy_spec(priv), NoiseSource{true, 5});
    const std::string path = (dir / (spec.kind + ".rsk")).string();
    save_sketch(path, copy);
    const FeatureSketchRelease rel = load_feature_release(path);
    const auto& p = rel.header["privacy"];
    EXPECT_EQ(rel.header["kind"], spec.kind);
    EXPECT_DOUBLE_EQ(p["epsilon_num"].get<double>() + p["epsilon_den"].get<double>(), p["epsilon"].get<double>());
    EXPECT_NEAR(p["epsilon_num"].get<double>(), 2.7, 1e-12);
    EXPECT_DOUBLE_EQ(rel.epsilon, 3.0);
    EXPECT_TRUE(rel.is_private);
    EXPECT_EQ(rel.map->kind(), spec.kind);
    // The file holds what privatize produced: same sums, count and noise record.
    const FeatureSketchRelease direct = feature_release_of(copy, sketch_header(copy));
    EXPECT_EQ(rel.sums, direct.sums) << spec.kind;
    EXPECT_EQ(rel.count, direct.count);
    EXPECT_EQ(rel.noise_variance, direct.noise_variance);
    EXPECT_NE(rel.count, 1500.0);  // noisy (scale 1 / 0.3: P(zeta = 0) = 0.15, not for seed 5)
    EXPECT_EQ(rel.map->params(), direct.map->params());
  }
  fs::remove_all(dir);
}

TEST(FeatureSketch, NoPrivacyReleasesExactSumsAndIsNeverWrittenByAccident) {
  const DenseMatrix x = uniform_points(700, 3, 9);
  const auto sums = build_feature_sums(x, hist_spec(4), 1);
  FeatureSketchPrivacy priv;
  priv.epsilon = std::numeric_limits<double>::infinity();
  const FeatureSketchRelease rel = release_feature_sketch(*sums, priv, NoiseSource{});
  EXPECT_FALSE(rel.is_private);
  EXPECT_EQ(rel.count, 700.0);
  EXPECT_EQ(rel.noise_variance, 0.0);
  EXPECT_EQ(rel.sums, sums->sums());
  EXPECT_TRUE(std::isinf(rel.epsilon_num));
  // Each attribute's histogram counts every record once.
  for (Eigen::Index r = 0; r < 3; ++r) EXPECT_EQ(rel.sums.segment(4 * r, 4).sum(), 700.0);
  const fs::path dir = privrace::testing::temp_dir("feature_sketch_np");
  EXPECT_THROW(save_sketch((dir / "x.rsk").string(), sums->sketch()), UsageError);
  EXPECT_FALSE(fs::exists(dir / "x.rsk"));
  fs::remove_all(dir);
}

TEST(FeatureSketch, MergeOfDisjointPartsEqualsTheWhole) {
  const DenseMatrix x = uniform_points(4000, 3, 10);
  for (const auto& spec : {rff_spec(12), hist_spec(5), race_spec()}) {
    const auto whole = build_feature_sums(x, spec, 2);
    const auto a = build_feature_sums(x.topRows(1500), spec, 1);
    const auto b = build_feature_sums(x.bottomRows(2500), spec, 3);
    RaceSketch merged = a->sketch();
    merged.merge(b->sketch());
    EXPECT_TRUE(std::equal(merged.counts().begin(), merged.counts().end(), whole->sketch().counts().begin())) << spec.kind;
    EXPECT_EQ(merged.records(), 4000);
    // Private parts: the released counts and the noise variances add up.
    FeatureSketchPrivacy priv;
    RaceSketch pa = a->sketch(), pb = b->sketch();
    privatize(pa, feature_privacy_spec(priv), NoiseSource{true, 1});
    privatize(pb, feature_privacy_spec(priv), NoiseSource{true, 2});
    const PrivacyRecord merged_record = merged_privacy({pa.privacy(), pb.privacy()});
    const auto mp = privacy_record_json(merged_record);
    EXPECT_EQ(mp["count"].get<std::int64_t>(), privacy_record_json(pa.privacy())["count"].get<std::int64_t>() + privacy_record_json(pb.privacy())["count"].get<std::int64_t>());
    EXPECT_DOUBLE_EQ(mp["noise_variance"].get<double>(), 2.0 * privacy_record_json(pa.privacy())["noise_variance"].get<double>());
    EXPECT_DOUBLE_EQ(mp["epsilon_num"].get<double>(), 0.98);
    pa.merge(pb);
    pa.set_privacy(merged_record);
    const FeatureSketchRelease rel = feature_release_of(pa, sketch_header(pa));
    EXPECT_EQ(rel.count, mp["count"].get<double>());
  }
  // Different seeds (different frequencies) do not merge.
  auto other = rff_spec(12);
  other.seed = 99;
  RaceSketch s1 = build_feature_sums(x, rff_spec(12), 1)->sketch();
  EXPECT_THROW(s1.merge(build_feature_sums(x, other, 1)->sketch()), InputError);
}

TEST(FeatureSketch, OneHotMapsReproduceTheSketchCounts) {
  // The M2M feature map of a RACE (hashed columns) or HIST (identity columns) sketch is exactly
  // the cell each record incremented: summing the one-hot features gives the counts.
  const DenseMatrix x = uniform_points(2000, 4, 11);
  for (const auto& spec : {hist_spec(7), race_spec()}) {
    const auto sums = build_feature_sums(x, spec, 2);
    IndexMatrix idx;
    sums->map().active_indices(x, idx);
    ASSERT_EQ(idx.cols(), static_cast<Eigen::Index>(sums->map().active_per_point()));
    std::vector<std::int64_t> counts(sums->map().size(), 0);
    for (Eigen::Index i = 0; i < idx.rows(); ++i)
      for (Eigen::Index j = 0; j < idx.cols(); ++j) ++counts[idx(i, j)];
    EXPECT_TRUE(std::equal(counts.begin(), counts.end(), sums->sketch().counts().begin())) << spec.kind;
    DoubleMatrix phi;
    sums->map().features(x.topRows(3), phi);
    EXPECT_EQ(phi.rowwise().sum(), Eigen::VectorXd::Constant(3, static_cast<double>(idx.cols())));
  }
  // HIST bins: equal width, hi in the last bin.
  const auto hist = make_feature_family(hist_spec(4), 1);
  DenseMatrix pts(5, 1);
  pts << 0.0f, 0.249f, 0.25f, 0.99f, 1.0f;
  CodeMatrix codes;
  hist->hash_dense(pts, codes);
  EXPECT_EQ(codes(0, 0), 0u);
  EXPECT_EQ(codes(0, 1), 0u);
  EXPECT_EQ(codes(0, 2), 1u);
  EXPECT_EQ(codes(0, 3), 3u);
  EXPECT_EQ(codes(0, 4), 3u);
}

TEST(FeatureSketch, KdeRaceSketchFileIsReadByM2M) {
  // A RACE sketch written for KDE (no count released) is usable as is: count = N-hat.
  const DenseMatrix x = uniform_points(3000, 3, 12);
  auto family = std::shared_ptr<const LshFamily>(
      make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 0.5, .rows = 20, .dim = 3, .seed = 4}));
  RaceSketch sketch(family, 32);
  build_dense(sketch, x);
  PrivacySpec spec;
  spec.epsilon = 2.0;
  privatize(sketch, spec, NoiseSource{true, 3});
  const fs::path dir = privrace::testing::temp_dir("feature_sketch_kde");
  const std::string path = (dir / "kde.rsk").string();
  save_sketch(path, sketch);
  const FeatureSketchRelease rel = load_feature_release(path);
  EXPECT_EQ(rel.map->kind(), "race");
  EXPECT_EQ(rel.map->size(), 20u * 32u);
  EXPECT_DOUBLE_EQ(rel.count, sketch.n_hat());
  EXPECT_DOUBLE_EQ(rel.epsilon_num, 2.0);
  EXPECT_DOUBLE_EQ(rel.epsilon_den, 0.0);
  EXPECT_NEAR(rel.noise_variance, discrete_laplace_variance(20.0 / 2.0), 1e-3 * rel.noise_variance);
  // An rff sketch without a count (a stripped header) is refused, naming the field.
  const auto rff = build_feature_sums(x, rff_spec(8), 1);
  RaceSketch stripped = rff->sketch();
  stripped.set_privacy(PrivacyRecord{});  // {"private": false}
  save_sketch((dir / "nocount.rsk").string(), stripped, true);
  try {
    load_feature_release((dir / "nocount.rsk").string());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("privacy.count"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(FeatureSketch, ReplaceNeighboursReleaseTheCountExactly) {
  const DenseMatrix x = uniform_points(500, 2, 13);
  const auto sums = build_feature_sums(x, hist_spec(3), 1);
  FeatureSketchPrivacy priv;
  priv.neighbors = NeighborRelation::Replace;
  const FeatureSketchRelease rel = release_feature_sketch(*sums, priv, NoiseSource{true, 1});
  EXPECT_EQ(rel.count, 500.0);
  EXPECT_DOUBLE_EQ(rel.epsilon_den, 0.0);
  EXPECT_DOUBLE_EQ(rel.epsilon_num, 1.0);
  EXPECT_DOUBLE_EQ(rel.header["privacy"]["sensitivity_l1"].get<double>(), 4.0);  // 2 d
}

TEST(FeatureSketch, BadInputIsRefusedNamingTheValue) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const DenseMatrix x = uniform_points(50, 2, 14);
  auto odd = rff_spec(7);
  EXPECT_NE(message([&] { build_feature_sums(x, odd, 1); }).find("got 7"), std::string::npos);
  auto zero = rff_spec(0);
  EXPECT_NE(message([&] { build_feature_sums(x, zero, 1); }).find("got 0"), std::string::npos);
  auto nobins = hist_spec(0);
  EXPECT_NE(message([&] { build_feature_sums(x, nobins, 1); }).find("got 0"), std::string::npos);
  auto flipped = hist_spec(3);
  flipped.lo = {1.0};
  flipped.hi = {0.5};
  EXPECT_NE(message([&] { build_feature_sums(x, flipped, 1); }).find("LO = 1 must be below HI = 0.5"), std::string::npos);
  EXPECT_THROW(parse_box_domain("2:2"), UsageError);
  EXPECT_THROW(parse_box_domain("0:1,a:2"), UsageError);
  EXPECT_THROW(parse_box_domain("0-1"), UsageError);
  const auto [lo, hi] = parse_box_domain("0:1,-2.5:3e2");
  EXPECT_EQ(lo, (std::vector<double>{0.0, -2.5}));
  EXPECT_EQ(hi, (std::vector<double>{1.0, 300.0}));
  // Data outside the declared domain is refused (not clipped), naming record, attribute, value.
  DenseMatrix out = x;
  out(37, 1) = 1.5f;
  for (int threads : {1, 2}) {
    const std::string m = message([&] { build_feature_sums(out, hist_spec(3), threads); });
    EXPECT_NE(m.find("record 38, attribute 2: value 1.5 is outside the declared domain [0, 1]"), std::string::npos) << m;
  }
  DenseMatrix nan = x;
  nan(3, 0) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(message([&] { build_feature_sums(nan, rff_spec(4), 2); }).find("record 4, attribute 1"), std::string::npos);
  FeatureSketchPrivacy all_num;
  all_num.num_share = 1.0;
  EXPECT_THROW(feature_privacy_spec(all_num), UsageError);
}

// ---- the command line: privrace sketch --kernel rff|hist, info, merge ----
namespace {
struct CliResult {
  int code;
  std::string out, err;
};
CliResult run_cli(const std::string& args, const fs::path& dir) {
  const fs::path err_file = dir / "stderr.txt";
  const std::string cmd = std::string(PRIVRACE_CLI) + " " + args + " 2>" + err_file.string();
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, ss.str()};
}
class FeatureSketchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("feature_cli");
    std::ofstream f(dir / "u.csv");
    f << "a,b,c\n";
    SeededRandom rng(3);
    for (int i = 0; i < 400; ++i) f << rng.unit() << "," << rng.unit() << "," << rng.unit() << "\n";
    std::ofstream g(dir / "v.csv");
    g << "a,b,c\n";
    for (int i = 0; i < 300; ++i) g << rng.unit() << "," << rng.unit() << "," << rng.unit() << "\n";
    std::ofstream h(dir / "out.csv");
    h << "a,b,c\n0.5,0.5,0.5\n0.25,1.75,0.5\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  nlohmann::json info(const std::string& file) {
    const CliResult r = run_cli("info " + p(file), dir);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  void expect_refused(const std::string& args, int code, const std::string& fragment) {
    const CliResult r = run_cli(args + " -q -o " + p("bad.rsk"), dir);
    EXPECT_EQ(r.code, code) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr was: " << r.err;
    EXPECT_FALSE(fs::exists(p("bad.rsk"))) << args << " left an output file";
  }
  fs::path dir;
};
}  // namespace

TEST_F(FeatureSketchCli, RffAndHistFilesRecordTheRelease) {
  ASSERT_EQ(run_cli("sketch -i " + p("u.csv") + " --kernel rff --features 20 --sigma 0.5 --epsilon 2 --seed 4 -q -o " + p("r.rsk"), dir).code, 0);
  const auto r = info("r.rsk");
  EXPECT_EQ(r["kind"], "rff");
  EXPECT_EQ(r["family"]["features"], 20);
  EXPECT_EQ(r["family"]["sigma"], 0.5);
  EXPECT_TRUE(r["family"].contains("seed"));
  const auto& p1 = r["privacy"];
  EXPECT_TRUE(p1["private"].get<bool>());
  EXPECT_EQ(p1["mechanism"], "discrete_laplace");
  EXPECT_DOUBLE_EQ(p1["epsilon_num"].get<double>() + p1["epsilon_den"].get<double>(), 2.0);
  EXPECT_NEAR(p1["epsilon_num"].get<double>(), 1.96, 1e-12);
  EXPECT_NEAR(p1["sensitivity_l1"].get<double>() * p1["quantum"].get<double>(), 10 * std::sqrt(2.0), 1e-4);
  EXPECT_TRUE(p1["count"].is_number_integer());
  EXPECT_FALSE(r.contains("n_hat"));
  // HIST with a per-attribute domain and its own budget split.
  ASSERT_EQ(run_cli("sketch -i " + p("u.csv") + " --kernel hist --bins 5 --domain 0:1,0:1,-1:1 --num-share 0.9 --epsilon 1 -q -o " + p("h.rsk"), dir).code, 0);
  const auto h = info("h.rsk");
  EXPECT_EQ(h["kind"], "hist");
  EXPECT_EQ(h["family"]["lo"], (std::vector<double>{0.0, 0.0, -1.0}));
  EXPECT_EQ(h["privacy"]["sensitivity_l1"], 3.0);
  EXPECT_NEAR(h["privacy"]["epsilon_den"].get<double>(), 0.1, 1e-12);
  EXPECT_TRUE(h["privacy"]["fit_for_release"].get<bool>());
  const FeatureSketchRelease rel = load_feature_release(p("h.rsk"));
  EXPECT_EQ(rel.sums.size(), 15);
  // Exact sketches only with --no-privacy, and then with the exact count.
  ASSERT_EQ(run_cli("sketch -i " + p("u.csv") + " --kernel hist --bins 5 --domain 0:1 --no-privacy -q -o " + p("e.rsk"), dir).code, 0);
  const auto e = info("e.rsk");
  EXPECT_FALSE(e["privacy"]["private"].get<bool>());
  EXPECT_EQ(e["privacy"]["count"], 400);
}

TEST_F(FeatureSketchCli, MergeAddsSumsAndCounts) {
  for (const std::string kernel : {"--kernel rff --features 8", "--kernel hist --bins 4 --domain 0:1"}) {
    ASSERT_EQ(run_cli("sketch -i " + p("u.csv") + " " + kernel + " --no-privacy --seed 9 -q -o " + p("a.rsk"), dir).code, 0);
    ASSERT_EQ(run_cli("sketch -i " + p("v.csv") + " " + kernel + " --no-privacy --seed 9 -q -o " + p("b.rsk"), dir).code, 0);
    const CliResult m = run_cli("merge " + p("a.rsk") + " " + p("b.rsk") + " --no-privacy -o " + p("m.rsk"), dir);
    ASSERT_EQ(m.code, 0) << m.err;
    const FeatureSketchRelease a = load_feature_release(p("a.rsk")), b = load_feature_release(p("b.rsk")),
                               merged = load_feature_release(p("m.rsk"));
    EXPECT_EQ(merged.count, 700.0) << kernel;
    EXPECT_EQ(merged.sums, a.sums + b.sums) << kernel;  // grid sums: exact in double here
    ASSERT_EQ(run_cli("sketch -i " + p("u.csv") + " " + kernel + " --epsilon 1 --seed 9 -q -o " + p("pa.rsk"), dir).code, 0);
    ASSERT_EQ(run_cli("sketch -i " + p("v.csv") + " " + kernel + " --epsilon 1 --seed 10 -q -o " + p("pb.rsk"), dir).code, 0);
    const CliResult pm = run_cli("merge " + p("pa.rsk") + " " + p("pb.rsk") + " -o " + p("pm.rsk"), dir);
    if (kernel.find("rff") != std::string::npos) {
      EXPECT_EQ(pm.code, 1);  // different seeds: different frequencies
      EXPECT_NE(pm.err.find("seed"), std::string::npos) << pm.err;
    } else {
      ASSERT_EQ(pm.code, 0) << pm.err;  // HIST has no seed
      // Read in process: each command start loads the whole library, which is not free.
      EXPECT_EQ(load_feature_release(p("pm.rsk")).count,
                load_feature_release(p("pa.rsk")).count + load_feature_release(p("pb.rsk")).count);
    }
  }
}

TEST_F(FeatureSketchCli, BadInputGetsItsErrorAndNoFile) {
  const std::string base = "sketch -i " + p("u.csv") + " --epsilon 1";
  expect_refused(base + " --kernel rff --features 7", 2, "--features must be a positive even number (m = 2 m' random Fourier features), got 7");
  expect_refused(base + " --kernel rff --features 0", 2, "got 0");
  expect_refused(base + " --kernel rff --features 10 --rows 5", 2, "--rows and --width do not apply to --kernel rff");
  expect_refused(base + " --kernel rff --features 10 --mechanism floored_laplace", 2, "exact discrete Laplace");
  expect_refused(base + " --kernel rff --features 10 --domain 0:1", 2, "--domain does not apply to --kernel rff");
  expect_refused(base + " --kernel hist --bins 0 --domain 0:1", 2, "--bins must be at least 1, got 0");
  expect_refused(base + " --kernel hist --bins 4", 2, "needs --domain");
  // (Other malformed domains are covered in process by BadInputIsRefusedNamingTheValue.)
  expect_refused(base + " --kernel hist --bins 4 --domain 1:0", 2, "--domain '1:0': LO = 1 is not below HI = 0");
  expect_refused(base + " --kernel hist --bins 4 --domain 0:1,0:1", 2, "the domain gives 2 intervals but the data has 3 attributes");
  expect_refused(base + " --kernel hist --bins 4 --domain 0:1 --num-share 1", 2, "--num-share must be in (0, 1)");
  // Data outside the declared domain: refused, naming the file, record, attribute and value.
  expect_refused("sketch -i " + p("out.csv") + " --epsilon 1 --kernel hist --bins 4 --domain 0:1", 1,
                 "out.csv: record 2, attribute 2: value 1.75 is outside the declared domain [0, 1]");
  // The LSH kernels still need their shape.
  expect_refused(base + " --kernel l2 --width 8", 2, "'--rows' is required");
}
