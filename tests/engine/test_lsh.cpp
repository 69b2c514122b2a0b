// LSH families: the empirical collision rate of every family equals its kernel(x, q).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/lsh/families.hpp"
#include "test_util.hpp"

using namespace privrace;

namespace {
// Fraction of rows in which the two points get the same code.
double collision_rate(const LshFamily& f, const DenseMatrix& pair, bool mirror_first = false) {
  CodeMatrix codes;
  f.hash_dense(pair, codes);
  std::size_t same = 0;
  for (Eigen::Index r = 0; r < codes.rows(); ++r) {
    const std::uint64_t a = mirror_first ? f.mirror(codes(r, 0)) : codes(r, 0);
    same += a == codes(r, 1);
  }
  return static_cast<double>(same) / static_cast<double>(codes.rows());
}

std::vector<double> to_double(const DenseMatrix& m, Eigen::Index row) {
  std::vector<double> v(static_cast<std::size_t>(m.cols()));
  for (Eigen::Index j = 0; j < m.cols(); ++j) v[static_cast<std::size_t>(j)] = m(row, j);
  return v;
}

void expect_rate(double rate, double p, std::size_t rows, const std::string& what) {
  const double sd = std::sqrt(std::max(p * (1 - p), 1e-4) / static_cast<double>(rows));
  EXPECT_NEAR(rate, p, 5 * sd) << what;
}
}  // namespace

TEST(PStable, CollisionProbabilityFormula) {
  EXPECT_DOUBLE_EQ(pstable_collision(0.0, 1.0), 1.0);
  double prev = 1.0;
  for (double c = 0.1; c < 20; c *= 1.5) {
    const double p = pstable_collision(c, 1.0);
    EXPECT_LT(p, prev);
    EXPECT_GT(p, 0.0);
    prev = p;
  }
  // Scale invariance: only c / w matters.
  EXPECT_NEAR(pstable_collision(2.0, 4.0), pstable_collision(0.5, 1.0), 1e-12);
}

TEST(PStable, EmpiricalCollisionMatchesKernel) {
  const std::size_t rows = 40000;
  for (const std::size_t power : {1, 2}) {
    FamilySpec spec{.kernel = Kernel::L2, .bandwidth = 2.0, .power = power, .rows = rows, .dim = 4, .seed = 42 + power};
    const auto f = make_family(spec);
    for (const double dist : {0.3, 1.0, 2.5, 6.0}) {
      DenseMatrix pair = DenseMatrix::Zero(2, 4);
      pair.row(0) << 0.5f, -1.0f, 2.0f, 0.25f;
      pair.row(1) = pair.row(0);
      pair(1, 0) += static_cast<float>(dist * 0.6);
      pair(1, 3) -= static_cast<float>(dist * 0.8);
      const double k = f->kernel_dense(to_double(pair, 0), to_double(pair, 1));
      EXPECT_NEAR(k, std::pow(pstable_collision(dist, 2.0), static_cast<double>(power)), 1e-5);
      expect_rate(collision_rate(*f, pair), k, rows, "l2 p=" + std::to_string(power) + " dist " + std::to_string(dist));
    }
  }
}

TEST(SignedRandomProjection, EmpiricalCollisionMatchesKernel) {
  const std::size_t rows = 40000;
  for (const std::size_t power : {1, 3}) {
    const auto f = make_family(FamilySpec{.kernel = Kernel::Angular, .power = power, .rows = rows, .dim = 2, .seed = 7});
    for (const double angle : {0.2, 1.0, 2.0, 3.0}) {
      DenseMatrix pair(2, 2);
      pair << 1.0f, 0.0f, static_cast<float>(2 * std::cos(angle)), static_cast<float>(2 * std::sin(angle));
      const double k = f->kernel_dense(to_double(pair, 0), to_double(pair, 1));
      EXPECT_NEAR(k, std::pow(1 - angle / std::numbers::pi, static_cast<double>(power)), 1e-5);
      expect_rate(collision_rate(*f, pair), k, rows, "srp angle " + std::to_string(angle));
    }
  }
}

TEST(SrpPair, MirroredCodesGiveTheTwoSidedKernel) {
  const std::size_t rows = 40000, power = 2;
  for (const std::string mode : {"insert", "query"}) {
    const auto f = make_family(FamilySpec{.kernel = Kernel::AngularPair, .power = power, .rows = rows, .dim = 2, .seed = 3, .pair_mode = parse_pair_mode(mode)});
    EXPECT_EQ(f->cells_per_record(), mode == "insert" ? 2u : 1u);
    for (const double angle : {0.3, 1.5, 2.8}) {
      DenseMatrix pair(2, 2);
      pair << 1.0f, 0.0f, static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle));
      const double t = angle / std::numbers::pi;
      const double k = f->kernel_dense(to_double(pair, 0), to_double(pair, 1));
      EXPECT_NEAR(k, std::pow(1 - t, 2.0) + std::pow(t, 2.0), 1e-5);
      // P[l(x) = l(q)] + P[l(-x) = l(q)]
      const double rate = collision_rate(*f, pair) + collision_rate(*f, pair, true);
      EXPECT_NEAR(rate, k, 5 * std::sqrt(2.0 / rows)) << "angle " << angle;
    }
  }
}

TEST(MinHash, EmpiricalCollisionMatchesJaccard) {
  const std::size_t rows = 40000;
  SetCollection sets;
  std::vector<std::uint32_t> a, b, c;
  for (std::uint32_t i = 0; i < 30; ++i) a.push_back(i * 3);
  for (std::uint32_t i = 10; i < 50; ++i) b.push_back(i * 3);  // |a & b| = 20, |a | b| = 50: J = 0.4
  c = {1, 2};
  sets.push_back(a);
  sets.push_back(b);
  sets.push_back(c);
  EXPECT_DOUBLE_EQ(MinHash::jaccard(sets.set(0), sets.set(1)), 0.4);
  for (const std::size_t power : {1, 2}) {
    const auto f = make_family(FamilySpec{.kernel = Kernel::Jaccard, .power = power, .rows = rows, .seed = 99});
    CodeMatrix codes;
    f->hash_sets(SetBatch{&sets, 0, 3}, codes);
    std::size_t ab = 0, ac = 0;
    for (Eigen::Index r = 0; r < codes.rows(); ++r) {
      ab += codes(r, 0) == codes(r, 1);
      ac += codes(r, 0) == codes(r, 2);
    }
    const double k = f->kernel_sets(sets.set(0), sets.set(1));
    EXPECT_NEAR(k, std::pow(0.4, static_cast<double>(power)), 1e-12);
    expect_rate(static_cast<double>(ab) / rows, k, rows, "minhash p=" + std::to_string(power));
    EXPECT_EQ(ac, 0u);  // disjoint sets never collide
  }
}

TEST(Families, BatchHashingEqualsOneByOneAndRowRanges) {
  const DenseMatrix x = privrace::testing::clustered_points(300, 5, 1);
  for (const std::string kernel : {"l2", "angular"}) {
    const auto f = make_family(FamilySpec{.kernel = parse_kernel(kernel), .bandwidth = 1.5, .power = 2, .rows = 64, .dim = 5, .seed = 5});
    CodeMatrix all, one, part;
    f->hash_dense(x, all);
    for (Eigen::Index i = 0; i < x.rows(); i += 37) {
      f->hash_dense(x.middleRows(i, 1), one);
      EXPECT_EQ(one.col(0), all.col(i)) << kernel << " point " << i;
    }
    f->hash_dense(x, part, 10, 30);
    EXPECT_EQ(part, all.middleRows(10, 20));
  }
}

// A signed bucket index's column from its 32-bit form equals the column of its 64-bit code,
// for random hash constants and widths, at the edges of the int32 range and around 0.
TEST(ColumnHash, OfIndexEqualsTheHashOfTheSignExtendedCode) {
  SeededRandom rng(17);
  std::vector<std::int32_t> indices = {0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 1 << 30, -(1 << 30)};
  for (int i = 0; i < 2000; ++i) indices.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(rng.next())));
  for (int t = 0; t < 500; ++t) {
    const ColumnHash h{.a0 = rng.next(), .a1 = rng.next(), .b = rng.next(), .width = 1 + rng.below(1u << 20)};
    for (const std::int32_t v : indices)
      ASSERT_EQ(h.of_index(v), h(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)))) << "index " << v << " trial " << t;
  }
}

// The fused columns of a dense batch (PStableL2's one pass from its projections; the default
// through hash_dense for the others) equal hash_dense's codes through the column hashes: every
// kernel and power, batch sizes around the tile, row ranges, and points far enough out that
// their bucket indices saturate at +-2^30.
TEST(Families, DenseColumnsEqualCodesThroughTheColumnHashes) {
  DenseMatrix x = privrace::testing::clustered_points(1100, 3, 4);
  x(3, 0) = 3e9f;  // saturates: +2^30 widths
  x(4, 1) = -3e9f;
  x(5, 2) = -0.0f;
  SeededRandom rng(3);
  std::vector<ColumnHash> hashes(64);
  for (auto& h : hashes) h = {.a0 = rng.next(), .a1 = rng.next(), .b = rng.next(), .width = 1 + rng.below(5000)};
  for (const std::string kernel : {"l2", "angular"}) {
    for (const std::size_t power : {1u, 3u}) {
      const auto f = make_family(FamilySpec{.kernel = parse_kernel(kernel), .bandwidth = 0.7, .power = power, .rows = 64, .dim = 3, .seed = 9});
      for (const Eigen::Index n : {Eigen::Index{1}, Eigen::Index{511}, Eigen::Index{512}, Eigen::Index{1100}}) {
        for (const auto& [r0, r1] : {std::pair<std::size_t, std::size_t>{0, 64}, {13, 30}}) {
          CodeMatrix codes, scratch;
          f->hash_dense(x.topRows(n), codes, r0, r1);
          std::vector<std::uint32_t> cols((r1 - r0) * static_cast<std::size_t>(n));
          f->dense_columns(x.topRows(n), hashes.data() + r0, cols.data(), r0, r1, scratch);
          for (std::size_t r = 0; r < r1 - r0; ++r)
            for (Eigen::Index i = 0; i < n; ++i)
              ASSERT_EQ(cols[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)], hashes[r0 + r](codes(static_cast<Eigen::Index>(r), i)))
                  << kernel << " power " << power << " n " << n << " row " << r0 + r << " point " << i;
        }
      }
    }
  }
}

TEST(Families, SeedDeterminesTheFunctionsAndParamsRebuildThem) {
  const DenseMatrix x = privrace::testing::clustered_points(50, 3, 2);
  const auto a = make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 1.0, .rows = 32, .dim = 3, .seed = 1});
  const auto b = make_family(a->params());
  const auto c = make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 1.0, .rows = 32, .dim = 3, .seed = 2});
  CodeMatrix ca, cb, cc;
  a->hash_dense(x, ca);
  b->hash_dense(x, cb);
  c->hash_dense(x, cc);
  EXPECT_EQ(ca, cb);
  EXPECT_NE(ca, cc);
}

TEST(Families, BadSpecsAreRejected) {
  EXPECT_THROW(parse_kernel("gaussian"), UsageError);
  EXPECT_THROW(make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 0.0, .dim = 2}), UsageError);
  EXPECT_THROW(make_family(FamilySpec{.kernel = Kernel::L2, .rows = 0, .dim = 2}), UsageError);
  EXPECT_THROW(make_family(nlohmann::json{{"kernel", "l2"}, {"rows", 4}}), InputError);
}
