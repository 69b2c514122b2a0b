// RACE sketch: unbiasedness against exact kernel sums, thread-count invariance, merge,
// file round trips and the privacy step.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release_record.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

using namespace privrace;
using privrace::testing::clustered_points;

namespace {
std::shared_ptr<const LshFamily> l2_family(std::size_t rows, std::size_t dim, double width, std::uint64_t seed = 17) {
  return make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = width, .rows = rows, .dim = dim, .seed = seed});
}

std::vector<double> exact_sums(const LshFamily& f, const DenseMatrix& data, const DenseMatrix& queries) {
  std::vector<double> out(static_cast<std::size_t>(queries.rows()));
#pragma omp parallel for
  for (Eigen::Index i = 0; i < queries.rows(); ++i) {
    std::vector<double> q(queries.row(i).begin(), queries.row(i).end()), x(static_cast<std::size_t>(data.cols()));
    double s = 0;
    for (Eigen::Index j = 0; j < data.rows(); ++j) {
      for (Eigen::Index k = 0; k < data.cols(); ++k) x[static_cast<std::size_t>(k)] = data(j, k);
      s += f.kernel_dense(x, q);
    }
    out[static_cast<std::size_t>(i)] = s;
  }
  return out;
}

double mean_relative_error(const std::vector<double>& est, const std::vector<double>& truth) {
  double e = 0;
  for (std::size_t i = 0; i < est.size(); ++i) e += std::abs(est[i] - truth[i]) / truth[i];
  return e / static_cast<double>(est.size());
}
}  // namespace

TEST(RaceSketch, NonPrivateEstimateConvergesToExactKernelSum) {
  // 10,000 points, R = 2000: the mean relative error of the (debiased) estimate is <= 2%.
  const DenseMatrix data = clustered_points(10000, 3, 1);
  const DenseMatrix queries = clustered_points(200, 3, 2);
  const auto family = l2_family(2000, 3, 4.0);
  RaceSketch sketch(family, 1000);
  build_dense(sketch, data);
  EXPECT_DOUBLE_EQ(sketch.n_hat(), 10000.0);
  const auto truth = exact_sums(*family, data, queries);
  const double err = mean_relative_error(sketch.query_dense(queries, {.debias = true}), truth);
  EXPECT_LE(err, 0.02);
  const double err_mom = mean_relative_error(sketch.query_dense(queries, {.estimator = Estimator::MedianOfMeans, .debias = true}), truth);
  EXPECT_LE(err_mom, 0.03);
  // Fewer rows -> larger error: the estimate really depends on R (the test can fail).
  RaceSketch small(l2_family(20, 3, 4.0), 1000);
  build_dense(small, data);
  EXPECT_GT(mean_relative_error(small.query_dense(queries, {.debias = true}), exact_sums(small.family(), data, queries)), err);
}

TEST(RaceSketch, DebiasRemovesColumnCollisions) {
  // W = 4: unequal codes collide with probability 1/4, so the raw mean is biased up by ~N/W.
  const DenseMatrix data = clustered_points(4000, 2, 3);
  const DenseMatrix queries = clustered_points(100, 2, 4);
  const auto family = l2_family(1000, 2, 1.0);
  RaceSketch sketch(family, 4);
  build_dense(sketch, data);
  const auto truth = exact_sums(*family, data, queries);
  const auto raw = sketch.query_dense(queries);
  const auto debiased = sketch.query_dense(queries, {.debias = true});
  double bias_raw = 0, bias_deb = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    bias_raw += raw[i] - truth[i];
    bias_deb += debiased[i] - truth[i];
  }
  bias_raw /= static_cast<double>(truth.size());
  bias_deb /= static_cast<double>(truth.size());
  EXPECT_GT(bias_raw, 0.15 * 4000.0 / 4.0);
  EXPECT_LT(std::abs(bias_deb), 0.1 * std::abs(bias_raw));
}

TEST(RaceSketch, SrpPairBothPlacementsEstimateTheSameKernelSum) {
  // Wide clusters: SRP buckets split them, which keeps the per-row variance moderate.
  const DenseMatrix data = clustered_points(3000, 4, 5, 3.0);
  const DenseMatrix queries = clustered_points(50, 4, 6, 3.0);
  for (const std::string mode : {"insert", "query"}) {
    auto family = make_family(FamilySpec{.kernel = Kernel::AngularPair, .power = 4, .rows = 2000, .dim = 4, .seed = 8, .pair_mode = parse_pair_mode(mode)});
    RaceSketch sketch(std::shared_ptr<const LshFamily>(std::move(family)), 1024);
    build_dense(sketch, data);
    EXPECT_DOUBLE_EQ(sketch.n_hat(), 3000.0);
    const double err = mean_relative_error(sketch.query_dense(queries, {.debias = true}), exact_sums(sketch.family(), data, queries));
    EXPECT_LE(err, 0.03) << mode;
  }
}

TEST(Builder, CountsAreIdenticalForAnyThreadCountAndStrategy) {
  const DenseMatrix data = clustered_points(20011, 8, 7);
  const auto family = l2_family(200, 8, 2.0);
  RaceSketch reference(family, 500);
  build_dense(reference, data, {.threads = 1});
  for (const int threads : {2, 3, 8}) {
    for (const std::string strategy : {"replicate", "split_rows"}) {
      RaceSketch s(family, 500);
      const auto report = build_dense(s, data, {.threads = threads, .batch = 97, .strategy = parse_build_strategy(strategy, Kernel::L2)});
      EXPECT_EQ(to_string(report.strategy), strategy);
      EXPECT_TRUE(std::equal(s.counts().begin(), s.counts().end(), reference.counts().begin()))
          << threads << " threads, " << strategy;
    }
  }
  // Streaming in uneven chunks gives the same counts too.
  RaceSketch streamed(family, 500);
  Eigen::Index pos = 0;
  build_dense_stream(streamed, [&](DenseMatrix& chunk) -> std::size_t {
    const Eigen::Index n = std::min<Eigen::Index>(1234, data.rows() - pos);
    chunk = data.middleRows(pos, n);
    pos += n;
    return static_cast<std::size_t>(n);
  }, {.threads = 2});
  EXPECT_TRUE(std::equal(streamed.counts().begin(), streamed.counts().end(), reference.counts().begin()));
}

TEST(Builder, SetsAreIdenticalForAnyThreadCount) {
  SetCollection sets;
  SeededRandom rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::uint32_t> s;
    for (std::uint32_t e = 0; e < 200; ++e)
      if (rng.below(10) == 0) s.push_back(e);
    sets.push_back(s);
  }
  RaceSketch ref(std::shared_ptr<const LshFamily>(make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = 64, .seed = 1})), 100);
  build_sets(ref, sets, {.threads = 1});
  for (const int threads : {2, 3, 8}) {
    RaceSketch s(ref.family_ptr(), 100);
    build_sets(s, sets, {.threads = threads});
    EXPECT_TRUE(std::equal(s.counts().begin(), s.counts().end(), ref.counts().begin())) << threads;
  }
}

TEST(RaceSketch, MergeOfPartsEqualsSketchOfUnion) {
  const DenseMatrix data = clustered_points(5000, 3, 9);
  const auto family = l2_family(100, 3, 1.0);
  RaceSketch whole(family, 200), a(family, 200), b(family, 200);
  build_dense(whole, data);
  build_dense(a, data.topRows(1800));
  build_dense(b, data.bottomRows(3200));
  a.merge(b);
  EXPECT_TRUE(std::equal(a.counts().begin(), a.counts().end(), whole.counts().begin()));
}

TEST(RaceSketch, MergeRefusesDifferentParametersNamingTheField) {
  RaceSketch a(l2_family(10, 3, 1.0, 1), 50);
  auto expect_diff = [&](const RaceSketch& b, const std::string& field) {
    try {
      a.merge(b);
      FAIL() << "merge should fail on " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_diff(RaceSketch(l2_family(10, 3, 1.0, 2), 50), "seed");
  expect_diff(RaceSketch(l2_family(10, 3, 2.0, 1), 50), "bandwidth");
  expect_diff(RaceSketch(l2_family(10, 3, 1.0, 1), 51), "width");
  expect_diff(RaceSketch(l2_family(11, 3, 1.0, 1), 50), "rows");
}

TEST(RaceSketch, RefusesSketchesTooLargeForMemoryBeforeAllocating) {
  EXPECT_THROW(check_sketch_fits(1u << 20, 1u << 30, 1), ResourceError);
  EXPECT_THROW(RaceSketch(l2_family(1u << 16, 3, 1.0), 1ull << 31), ResourceError);
  EXPECT_THROW(check_sketch_fits(0, 10, 1), UsageError);
  EXPECT_THROW(check_sketch_fits(10, 0, 1), UsageError);
}

TEST(Privatize, NoiseFollowsDiscreteLaplaceWithScaleROverEpsilon) {
  const std::size_t rows = 20;
  RaceSketch sketch(l2_family(rows, 2, 1.0), 5000);  // empty: the counts are pure noise
  const PrivacySpec spec{.epsilon = 8.0};
  privatize(sketch, spec, {.seeded = true, .seed = 4});
  const DiscreteLaplace expected(static_cast<double>(rows) / spec.epsilon);  // scale R / eps = 2.5
  std::map<long long, long long> hist;
  for (const auto c : sketch.counts()) ++hist[c];
  const auto [stat, df] = privrace::testing::chi_square(hist, [&](long long y) { return expected.pmf(y); }, -20, 20,
                                                        static_cast<long long>(sketch.counts().size()));
  EXPECT_LT(stat, privrace::testing::chi_square_critical(df));
  EXPECT_TRUE(sketch.is_private());
  EXPECT_LE(privacy_record_json(sketch.privacy())["realised_epsilon"].get<double>(), 8.0);
  EXPECT_FALSE(privacy_record_json(sketch.privacy())["fit_for_release"].get<bool>());
  EXPECT_THROW(privatize(sketch, spec, {}), UsageError);  // noise is added once
}

TEST(Privatize, ReplaceNeighboursDoubleTheNoiseAndSeedsReproduce) {
  auto spread = [](NeighborRelation rel, std::uint64_t seed) {
    RaceSketch s(l2_family(10, 2, 1.0), 20000);
    privatize(s, {.epsilon = 1.0, .neighbors = rel}, {.seeded = true, .seed = seed});
    double v = 0;
    for (const auto c : s.counts()) v += static_cast<double>(c) * static_cast<double>(c);
    return std::make_pair(std::sqrt(v / static_cast<double>(s.counts().size())), std::vector<std::int64_t>(s.counts().begin(), s.counts().end()));
  };
  const auto [sd1, c1] = spread(NeighborRelation::AddRemove, 1);
  const auto [sd2, c2] = spread(NeighborRelation::Replace, 1);
  const auto [sd1b, c1b] = spread(NeighborRelation::AddRemove, 1);
  EXPECT_NEAR(sd2 / sd1, 2.0, 0.05);
  EXPECT_EQ(c1, c1b);
  // OS noise differs between runs.
  RaceSketch x(l2_family(4, 2, 1.0), 100), y(l2_family(4, 2, 1.0), 100);
  privatize(x, {.epsilon = 1.0}, {});
  privatize(y, {.epsilon = 1.0}, {});
  EXPECT_FALSE(std::equal(x.counts().begin(), x.counts().end(), y.counts().begin()));
  EXPECT_TRUE(privacy_record_json(x.privacy())["fit_for_release"].get<bool>());
}

TEST(Privatize, MechanismsHaveTheirScales) {
  auto rms = [](const PrivacySpec& spec) {
    RaceSketch s(l2_family(10, 2, 1.0), 20000);
    privatize(s, spec, {.seeded = true, .seed = 2});
    double v = 0;
    for (const auto c : s.counts()) v += static_cast<double>(c) * static_cast<double>(c);
    return std::sqrt(v / static_cast<double>(s.counts().size()));
  };
  // Laplace(b) has sd b sqrt(2): b = R / eps = 10.
  EXPECT_NEAR(rms({.epsilon = 1.0, .mechanism = NoiseMechanism::FlooredLaplace}), 10 * std::sqrt(2.0), 0.5);
  const double sigma = analytic_gaussian_sigma(1.0, 1e-5, std::sqrt(10.0));
  EXPECT_NEAR(rms({.epsilon = 1.0, .delta = 1e-5, .mechanism = NoiseMechanism::Gaussian}), sigma, 0.05 * sigma);
}

// The exact discrete Gaussian on a sketch: sigma = sqrt(R) / sqrt(2 rho) with rho the zCDP budget
// of (1, 1e-5), more than the analytic calibration; over 200,000 noised zero counts the spread is
// sigma (within 2%, about 12 standard errors), the mean 0, and the mass at 0 that of N_Z(0, sigma^2).
TEST(Privatize, DiscreteGaussianNoiseHasItsDistribution) {
  RaceSketch s(l2_family(10, 2, 1.0), 20000);
  const NoiseReport report = privatize(s, {.epsilon = 1.0, .delta = 1e-5, .mechanism = NoiseMechanism::DiscreteGaussian},
                                       {.seeded = true, .seed = 4});
  (void)report;
  const double sigma = std::sqrt(10.0) / std::sqrt(2.0 * zcdp_rho(1.0, 1e-5));
  EXPECT_GT(sigma, 1.2 * analytic_gaussian_sigma(1.0, 1e-5, std::sqrt(10.0)));
  double sum = 0, sq = 0;
  std::size_t zeros = 0;
  for (const auto c : s.counts()) {
    sum += static_cast<double>(c);
    sq += static_cast<double>(c) * static_cast<double>(c);
    zeros += c == 0;
  }
  const double n = static_cast<double>(s.counts().size());
  EXPECT_NEAR(std::sqrt(sq / n), sigma, 0.02 * sigma);
  EXPECT_NEAR(sum / n, 0.0, 6 * sigma / std::sqrt(n));
  const double p0 = DiscreteGaussian(sigma).pmf(0);
  EXPECT_NEAR(static_cast<double>(zeros) / n, p0, 6 * std::sqrt(p0 / n));
  EXPECT_EQ(s.privacy().noise_sampler, "discrete_gaussian_rejection");  // 200,000 counts: below the table's 2^18
  EXPECT_NEAR(*s.privacy().noise_scale, sigma, 1e-6 * sigma);
}

TEST(SketchFile, RoundTripAndRefusals) {
  const auto dir = privrace::testing::temp_dir("file");
  const DenseMatrix data = clustered_points(2000, 3, 11);
  RaceSketch sketch(l2_family(50, 3, 1.0), 100);
  build_dense(sketch, data);
  const std::string path = (dir / "exact.rsk").string();
  EXPECT_THROW(save_sketch(path, sketch), UsageError);  // no noise -> refused without the flag
  EXPECT_FALSE(std::filesystem::exists(path));
  save_sketch(path, sketch, /*allow_nonprivate=*/true);
  nlohmann::json header;
  const RaceSketch back = load_sketch(path, &header);
  EXPECT_TRUE(std::equal(back.counts().begin(), back.counts().end(), sketch.counts().begin()));
  EXPECT_EQ(back.family().params(), sketch.family().params());
  EXPECT_EQ(back.query_dense(data.topRows(10)), sketch.query_dense(data.topRows(10)));
  EXPECT_FALSE(header["privacy"]["private"].get<bool>());

  privatize(sketch, {.epsilon = 2.0}, {.seeded = true, .seed = 1});
  const std::string priv = (dir / "private.rsk").string();
  save_sketch(priv, sketch);
  const RaceSketch pback = load_sketch(priv);
  EXPECT_TRUE(std::equal(pback.counts().begin(), pback.counts().end(), sketch.counts().begin()));
  EXPECT_TRUE(pback.is_private());

  // Truncation at every length and a flipped byte are both detected.
  std::ifstream in(priv, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string bad = (dir / "bad.rsk").string();
  for (std::size_t len : {std::size_t{0}, std::size_t{5}, std::size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, len);
    EXPECT_THROW(load_sketch(bad), InputError) << "length " << len;
  }
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x10;
  std::ofstream(bad, std::ios::binary) << flipped;
  try {
    load_sketch(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_sketch((dir / "missing.rsk").string()), InputError);
  std::filesystem::remove_all(dir);
}

TEST(SketchFile, MergedPrivacyRecordsParallelComposition) {
  auto record = [](double epsilon) {
    PrivacyRecord r;
    r.is_private = true;
    r.epsilon = epsilon;
    r.mechanism = NoiseMechanism::DiscreteLaplace;
    r.fit_for_release = true;
    return r;
  };
  const PrivacyRecord a = record(1.0), b = record(0.5);
  auto m = privacy_record_json(merged_privacy({a, b}));
  EXPECT_TRUE(m["private"].get<bool>());
  EXPECT_DOUBLE_EQ(m["epsilon"].get<double>(), 1.0);
  EXPECT_EQ(m["merged_from"].size(), 2u);
  EXPECT_THROW(merged_privacy({a, PrivacyRecord{}}), UsageError);  // {"private": false}
}

TEST(RaceSketch, SmallCodeSpacesMapOneToOneWithoutRehashCollisions) {
  // SRP with p = 4 bits has 16 codes: at W = 16 every code gets its own column, so each row's
  // counts are exactly the code histogram and the estimate is unbiased without debiasing.
  const DenseMatrix data = clustered_points(3000, 3, 21, 3.0);
  auto family = std::shared_ptr<const LshFamily>(make_family(FamilySpec{.kernel = Kernel::Angular, .power = 4, .rows = 300, .dim = 3, .seed = 4}));
  RaceSketch sketch(family, 16);
  EXPECT_TRUE(sketch.direct_columns());
  build_dense(sketch, data);
  CodeMatrix codes;
  family->hash_dense(data, codes);
  for (std::size_t r = 0; r < sketch.rows(); r += 37) {
    std::vector<std::int64_t> histogram(16, 0);
    for (Eigen::Index i = 0; i < codes.cols(); ++i) ++histogram[codes(static_cast<Eigen::Index>(r), i)];
    EXPECT_TRUE(std::equal(histogram.begin(), histogram.end(), sketch.row(r))) << "row " << r;
  }
  const DenseMatrix queries = clustered_points(20, 3, 22, 3.0);
  EXPECT_EQ(sketch.query_dense(queries, {.debias = true}), sketch.query_dense(queries));
  EXPECT_FALSE(RaceSketch(family, 15).direct_columns());  // 16 codes do not fit in 15 columns
}

// The batched query path (blocks of up to 4096 queries, lookups row by row) gives exactly the
// per-query answer: the row values of row_estimates_single combined by combine(), for the mean
// and the median of means, plain and debiased, mirrored queries included, on any thread count.
TEST(RaceSketch, BatchedQueriesEqualPerQueryCombinationForAnyThreadCount) {
  const DenseMatrix data = clustered_points(3000, 3, 5);
  const DenseMatrix queries = clustered_points(9000, 3, 6);  // several blocks and a partial one
  for (const Kernel kernel : {Kernel::L2, Kernel::AngularPair}) {
    FamilySpec spec{.kernel = kernel, .bandwidth = 1.5, .power = 2, .rows = 37, .dim = 3, .seed = 3};
    RaceSketch sketch(make_family(spec), 29);
    build_dense(sketch, data);
    for (const QueryOptions base : {QueryOptions{}, QueryOptions{.estimator = Estimator::MedianOfMeans, .mom_groups = 4},
                                    QueryOptions{.debias = true}}) {
      QueryOptions one = base, two = base;
      one.threads = 1;
      two.threads = 2;
      const auto a = sketch.query_dense(queries, one), b = sketch.query_dense(queries, two);
      ASSERT_EQ(a, b);
      CodeMatrix codes;
      for (const Eigen::Index i : {Eigen::Index{0}, Eigen::Index{4095}, Eigen::Index{4096}, Eigen::Index{8999}}) {
        sketch.family().hash_dense(queries.middleRows(i, 1), codes);
        EXPECT_EQ(a[static_cast<std::size_t>(i)], sketch.combine(sketch.row_estimates_single(codes.data()), base)) << i;
      }
    }
  }
}
