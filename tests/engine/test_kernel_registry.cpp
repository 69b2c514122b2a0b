// The kernel registry (lsh/kernel_registry.hpp): a kernel registered at run time is parsed by
// name, built exactly and released privately through the release API alone, and queried; its
// counts agree with a direct count and its exact collision probability with the rows' empirical
// collision rate. The built-ins keep their names, ids and kinds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/kernel_registry.hpp"
#include "privrace/sketch/release.hpp"
#include "test_util.hpp"

using namespace privrace;
using privrace::testing::message_of;

namespace {

// A toy 1-bit hash of the first coordinate: row r's code is [x_0 >= t_r], the thresholds t_r
// drawn uniformly from [-1, 1) by the seed. For x_0, q_0 in [-1, 1] the two codes differ exactly
// when t_r falls between them: k(x, q) = 1 - |x_0 - q_0| / 2.
class ThresholdBit final : public LshFamily {
 public:
  ThresholdBit(std::size_t rows, std::size_t dim, std::uint64_t seed) : LshFamily(rows, seed), dim_(dim) {
    SeededRandom rng(derive_seed(seed, 1));
    for (std::size_t r = 0; r < rows; ++r) thresholds_.push_back(2.0 * rng.unit() - 1.0);
    set_code_space(2);
  }
  std::string kernel_name() const override { return "threshold_bit"; }
  InputKind input_kind() const override { return InputKind::Dense; }
  std::size_t dim() const override { return dim_; }
  void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override {
    codes.resize(static_cast<Eigen::Index>(row_end - row_begin), batch.rows());
    for (std::size_t r = row_begin; r < row_end; ++r)
      for (Eigen::Index i = 0; i < batch.rows(); ++i)
        codes(static_cast<Eigen::Index>(r - row_begin), i) = static_cast<double>(batch(i, 0)) >= thresholds_[r] ? 1 : 0;
  }
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override {
    const double a = std::clamp(x[0], -1.0, 1.0), b = std::clamp(q[0], -1.0, 1.0);
    return 1.0 - std::abs(a - b) / 2.0;
  }
  nlohmann::json params() const override {
    return {{"kernel", "threshold_bit"}, {"rows", rows()}, {"dim", dim_}, {"power", 1}, {"seed", seed()}};
  }

 private:
  std::size_t dim_;
  std::vector<double> thresholds_;
};

// One registration: the whole of what the toy kernel adds to the engine.
Kernel threshold_bit() {
  static const Kernel id = [] {
    KernelInfo info{.name = "threshold_bit", .help = "toy: first coordinate above a random threshold"};
    info.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
      if (f.dim == 0) throw UsageError("the threshold_bit kernel needs the input dimension");
      return std::make_unique<ThresholdBit>(f.rows, f.dim, f.seed);
    };
    return register_kernel(std::move(info));
  }();
  return id;
}

ReleaseParams toy_params(std::size_t rows) {
  ReleaseParams p;
  p.family.kernel = threshold_bit();
  p.family.rows = rows;
  p.width = 4;
  p.seed = 11;
  p.threads = 2;
  return p;
}

DenseMatrix uniform_points(std::size_t n, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), 2);
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < 2; ++j) x(i, j) = static_cast<float>(2.0 * rng.unit() - 1.0);
  return x;
}

}  // namespace

TEST(KernelRegistry, BuiltinsKeepTheirNamesIdsAndKinds) {
  const std::vector<std::string> builtin{"l2", "angular", "angular_pair", "jaccard", "jaccard_classic", "rff", "hist"};
  const auto names = kernel_names();
  ASSERT_GE(names.size(), builtin.size());
  for (std::size_t i = 0; i < builtin.size(); ++i) {
    EXPECT_EQ(names[i], builtin[i]);
    EXPECT_EQ(static_cast<std::size_t>(parse_kernel(builtin[i])), i);
  }
  EXPECT_TRUE(is_set_kernel(Kernel::Jaccard) && is_set_kernel(Kernel::JaccardClassic));
  EXPECT_FALSE(is_set_kernel(Kernel::L2) || is_set_kernel(Kernel::Rff));
  EXPECT_TRUE(is_feature_kernel(Kernel::Rff) && is_feature_kernel(Kernel::Hist));
  EXPECT_FALSE(is_feature_kernel(Kernel::AngularPair));
  EXPECT_EQ(message_of([] { parse_kernel("gauss"); }).rfind("unknown kernel 'gauss' (expected l2, angular, angular_pair, jaccard, ", 0), 0u);
  EXPECT_THROW(register_kernel(KernelInfo{.name = "l2", .make = kernel_info(Kernel::L2).make}), UsageError);
  EXPECT_THROW(register_kernel(KernelInfo{.name = "no_factory"}), UsageError);
}

TEST(KernelRegistry, ARegisteredKernelParsesAndHasItsKind) {
  const Kernel k = threshold_bit();
  EXPECT_GT(static_cast<std::size_t>(k), static_cast<std::size_t>(Kernel::Hist));
  EXPECT_EQ(parse_kernel("threshold_bit"), k);
  EXPECT_EQ(to_string(k), "threshold_bit");
  EXPECT_FALSE(is_set_kernel(k));
  EXPECT_FALSE(is_feature_kernel(k));
  const ReleaseParams p = toy_params(8);
  EXPECT_EQ(p.rows(), 8u);
  EXPECT_EQ(p.columns(), 4u);
  EXPECT_NO_THROW(p.validate());
  ReleaseParams bad = p;
  bad.family.rows = 0;
  EXPECT_EQ(message_of([&] { bad.validate(); }), "--rows must be at least 1");
  // Sets are refused: its entry says dense.
  EXPECT_THROW(ExactBuilder::sets(p, MasterSeed::resolve(1)), UsageError);
}

TEST(KernelRegistry, ARegisteredKernelIsBuiltReleasedAndQueriedThroughTheReleaseApi) {
  const std::size_t rows = 64, n = 3000;
  const DenseMatrix x = uniform_points(n, 5);
  const ReleaseParams p = toy_params(rows);
  const MasterSeed seed = MasterSeed::resolve(p.seed);
  const ExactBuilder builder = ExactBuilder::dense(p, seed, 2);
  const ExactSketch exact = builder.build(x);
  const RaceSketch& counts = exact.counts();
  ASSERT_EQ(counts.rows(), rows);
  ASSERT_EQ(counts.width(), 4u);
  EXPECT_EQ(exact.report().points, n);

  // A direct count: every record's code in every row (2 codes in 4 columns: the sketch maps a code
  // space within its width to columns one-to-one).
  const LshFamily& family = *builder.family();
  CodeMatrix codes;
  family.hash_dense(DenseRef(x), codes);
  std::vector<std::int64_t> direct(rows * 4, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < n; ++i)
      ++direct[r * 4 + codes(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i))];
  const auto c = counts.counts();
  EXPECT_EQ(std::vector<std::int64_t>(c.begin(), c.end()), direct);

  // The query estimate (mean over rows) equals the direct collision count of each query.
  const DenseMatrix q = uniform_points(20, 6);
  const std::vector<double> est = counts.query_dense(DenseRef(q));
  CodeMatrix qcodes;
  family.hash_dense(DenseRef(q), qcodes);
  for (Eigen::Index j = 0; j < q.rows(); ++j) {
    double hits = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < n; ++i)
        hits += codes(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i)) == qcodes(static_cast<Eigen::Index>(r), j);
    EXPECT_NEAR(est[static_cast<std::size_t>(j)], hits / static_cast<double>(rows), 1e-9) << j;
  }

  // A private release of the same build (the noise once, on a copy): the same shape, noisy counts.
  ReleaseParams priv = p;
  priv.privacy = PrivacySpec{.epsilon = 1.0};
  const Release release = build_exact(priv, MasterSeed::resolve(priv.seed), DenseRef(x)).release();
  EXPECT_TRUE(release.is_private());
  EXPECT_EQ(release.rows(), rows);
  EXPECT_EQ(release.width(), 4u);
  const auto noisy = release.sketch().counts();
  EXPECT_NE(std::vector<std::int64_t>(noisy.begin(), noisy.end()), direct);
  // The record count the rows imply survives the noise (each row sums to n before it).
  EXPECT_NEAR(release.sketch().n_hat(), static_cast<double>(n), 0.05 * static_cast<double>(n));
  const std::vector<double> noisy_est = release.sketch().query_dense(DenseRef(q));
  for (std::size_t j = 0; j < est.size(); ++j) EXPECT_NEAR(noisy_est[j], est[j], 0.1 * static_cast<double>(n)) << j;
  // The exact build releases too, and the rows' per-record sensitivity is the family's: 1 cell.
  EXPECT_EQ(release.sketch().family().cells_per_record(), 1u);
  EXPECT_TRUE(exact.release(*priv.privacy, MasterSeed::resolve(3).noise()).is_private());
}

TEST(KernelRegistry, ARegisteredKernelsCollisionProbabilityMatchesItsRows) {
  const std::size_t rows = 20000;
  ReleaseParams p = toy_params(rows);
  const ExactBuilder builder = ExactBuilder::dense(p, MasterSeed::resolve(p.seed), 2);
  const LshFamily& family = *builder.family();
  DenseMatrix pair(2, 2);
  for (const auto& [a, b] : {std::pair{0.1, 0.3}, std::pair{-0.8, 0.6}, std::pair{0.5, 0.5}, std::pair{-0.2, 0.9}}) {
    pair << static_cast<float>(a), 0.0f, static_cast<float>(b), 0.0f;
    CodeMatrix codes;
    family.hash_dense(DenseRef(pair), codes);
    double same = 0;
    for (std::size_t r = 0; r < rows; ++r) same += codes(static_cast<Eigen::Index>(r), 0) == codes(static_cast<Eigen::Index>(r), 1);
    const std::vector<double> x{static_cast<float>(a), 0.0}, q{static_cast<float>(b), 0.0};
    const double k = family.kernel_dense(x, q);
    // Binomial(R, k): 4 standard deviations at most 4 * 0.5 / sqrt(R) = 0.014.
    EXPECT_NEAR(same / static_cast<double>(rows), k, 0.015) << a << " " << b;
  }
}
