// The densified MinHash family ("jaccard"): both computation paths give identical codes, every
// path's collision rate equals the Jaccard similarity (small-vs-large pairs included), rows
// behave like independent MinHashes, and legacy "jaccard" headers still mean classic MinHash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/families.hpp"

using namespace privrace;
using Path = DensifiedMinHash::Path;

namespace {

std::vector<std::uint32_t> random_set(SeededRandom& rng, std::size_t size, std::uint32_t universe) {
  std::vector<std::uint32_t> s;
  while (s.size() < size) {
    s.push_back(static_cast<std::uint32_t>(rng.below(universe)));
    if (s.size() == size) {
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
  }
  return s;
}

// A pair with prescribed sizes and overlap: |A| = a, |B| = b, |A n B| = common.
std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>> pair_with(std::size_t a, std::size_t b, std::size_t common,
                                                                            std::uint32_t offset) {
  std::vector<std::uint32_t> x, y;
  for (std::uint32_t i = 0; i < common; ++i) x.push_back(offset + i), y.push_back(offset + i);
  for (std::uint32_t i = 0; i < a - common; ++i) x.push_back(offset + 1000000 + i);
  for (std::uint32_t i = 0; i < b - common; ++i) y.push_back(offset + 2000000 + i);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return {x, y};
}

}  // namespace

TEST(DensifiedMinHash, PathsGiveIdenticalCodes) {
  SeededRandom rng(11);
  for (const std::size_t rows : {1, 2, 7, 64, 2000, 3000}) {
    for (const std::size_t power : {1, 2}) {
      const DensifiedMinHash f(rows, power, 1234 + rows);
      for (const std::size_t size : {0, 1, 2, 5, 12, 40, 200, 1500, 5000}) {
        const auto s = random_set(rng, size, 1u << 20);
        std::vector<std::uint64_t> small(rows), large(rows), autoc(rows);
        f.hash_one(s, small.data(), 0, rows, Path::Small);
        f.hash_one(s, large.data(), 0, rows, Path::Large);
        f.hash_one(s, autoc.data(), 0, rows, Path::Auto);
        ASSERT_EQ(small, large) << "rows " << rows << " size " << size;
        ASSERT_EQ(small, autoc);
        // Any row range gives the same codes as the full range.
        if (rows >= 7) {
          const std::size_t r0 = rows / 3, r1 = rows - rows / 5;
          std::vector<std::uint64_t> part(r1 - r0);
          for (const Path p : {Path::Small, Path::Large}) {
            f.hash_one(s, part.data(), r0, r1, p);
            ASSERT_TRUE(std::equal(part.begin(), part.end(), small.begin() + static_cast<std::ptrdiff_t>(r0)));
          }
        }
      }
    }
  }
}

TEST(DensifiedMinHash, BatchHashingEqualsOneByOne) {
  SeededRandom rng(5);
  SetCollection sets;
  for (const std::size_t size : {0, 3, 12, 150, 400, 2500, 1, 30}) sets.push_back(random_set(rng, size, 1u << 16));
  const auto f = make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = 500, .seed = 8});
  const auto& d = dynamic_cast<const DensifiedMinHash&>(*f);
  CodeMatrix codes;
  f->hash_sets(SetBatch{&sets, 0, sets.size()}, codes);
  std::vector<std::uint64_t> one(500);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    d.hash_one(sets.set(i), one.data(), 0, 500);
    for (std::size_t r = 0; r < 500; ++r) ASSERT_EQ(codes(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i)), one[r]);
  }
}

// The collision rate over many rows and seeds equals J (and J^p), per path, for pairs of every
// size mix: both small, small vs large, both large. Rates are averaged over 25 seeds x 2000
// rows; the tolerance is 5 standard errors of independent rows (rows are nearly independent,
// tested below), plus nothing else: a biased scheme would fail by far more.
TEST(DensifiedMinHash, CollisionRateEqualsJaccardForEveryPath) {
  struct Case {
    std::size_t a, b, common;
  };
  const std::vector<Case> cases = {{12, 12, 6}, {3, 40, 3}, {12, 3000, 12}, {10, 15, 1}, {200, 260, 120},
                                   {1500, 2500, 900}, {5000, 5000, 1000}, {1, 1, 1}, {1, 2, 0}};
  const std::size_t rows = 2000, seeds = 25;
  for (const auto& c : cases) {
    const auto [x, y] = pair_with(c.a, c.b, c.common, 17);
    const double j = static_cast<double>(c.common) / static_cast<double>(c.a + c.b - c.common);
    ASSERT_DOUBLE_EQ(MinHash::jaccard(x, y), j);
    for (const std::size_t power : {1, 2}) {
      for (const Path p : {Path::Small, Path::Large, Path::Auto}) {
        std::size_t hits = 0;
        std::vector<std::uint64_t> cx(rows), cy(rows);
        for (std::size_t seed = 0; seed < seeds; ++seed) {
          const DensifiedMinHash f(rows, power, 1000 * seed + 7);
          // Mixed paths on purpose: x by p, y by the other one (codes must still agree).
          f.hash_one(x, cx.data(), 0, rows, p);
          f.hash_one(y, cy.data(), 0, rows, p == Path::Small ? Path::Large : Path::Small);
          for (std::size_t r = 0; r < rows; ++r) hits += cx[r] == cy[r];
        }
        const double n = static_cast<double>(rows * seeds);
        const double k = std::pow(j, static_cast<double>(power));
        const double rate = static_cast<double>(hits) / n;
        const double se = std::sqrt(std::max(k * (1 - k), 1e-9) / n);
        EXPECT_NEAR(rate, k, 5 * se + 1e-12) << c.a << "/" << c.b << "/" << c.common << " p=" << power;
        if (c.common == 0) {
          EXPECT_EQ(hits, 0u);
        }
      }
    }
  }
}

// Rows behave like independent MinHashes: over many seeds, the number of colliding rows out of
// R has the binomial variance R J (1 - J) (a densification that copied one bin into many rows
// would inflate it by up to R times). Checked for small sets, where densification does most work.
TEST(DensifiedMinHash, RowsAreNearlyIndependent) {
  const auto [x, y] = pair_with(12, 12, 6, 99);  // J = 1/3
  const std::size_t rows = 2000, seeds = 400;
  std::vector<double> counts;
  std::vector<std::uint64_t> cx(rows), cy(rows);
  for (std::size_t seed = 0; seed < seeds; ++seed) {
    const DensifiedMinHash f(rows, 1, seed * 7919 + 1);
    f.hash_one(x, cx.data(), 0, rows);
    f.hash_one(y, cy.data(), 0, rows);
    double h = 0;
    for (std::size_t r = 0; r < rows; ++r) h += cx[r] == cy[r];
    counts.push_back(h);
  }
  const double mean = std::accumulate(counts.begin(), counts.end(), 0.0) / seeds;
  double var = 0;
  for (const double c : counts) var += (c - mean) * (c - mean);
  var /= seeds - 1;
  const double j = 1.0 / 3.0, binom = rows * j * (1 - j);
  EXPECT_NEAR(mean / rows, j, 0.005);
  // Sample variance of 400 draws: within a factor of 1.5 of the binomial (the shared bin
  // assignment adds a little; a broken densification adds orders of magnitude).
  EXPECT_LT(var, 1.5 * binom) << "var " << var << " binomial " << binom;
  EXPECT_GT(var, 0.6 * binom);
}

TEST(DensifiedMinHash, EmptySetsCollideOnlyWithEmptySets) {
  const DensifiedMinHash f(100, 1, 3);
  std::vector<std::uint64_t> e1(100), e2(100), one(100);
  const std::vector<std::uint32_t> empty, single = {5};
  f.hash_one(empty, e1.data(), 0, 100);
  f.hash_one(empty, e2.data(), 0, 100);
  f.hash_one(single, one.data(), 0, 100);
  EXPECT_EQ(e1, e2);
  for (std::size_t r = 0; r < 100; ++r) EXPECT_NE(e1[r], one[r]);
  EXPECT_DOUBLE_EQ(f.kernel_sets(empty, empty), 1.0);
}

TEST(DensifiedMinHash, HeaderRoundTripAndLegacyClassic) {
  const auto f = make_family(FamilySpec{.kernel = Kernel::Jaccard, .power = 2, .rows = 30, .seed = 77});
  EXPECT_EQ(f->params().at("scheme"), "doph");
  const auto g = make_family(f->params());
  EXPECT_EQ(g->params(), f->params());
  SetCollection sets;
  sets.push_back(std::vector<std::uint32_t>{1, 5, 9});
  CodeMatrix a, b;
  f->hash_sets(SetBatch{&sets, 0, 1}, a);
  g->hash_sets(SetBatch{&sets, 0, 1}, b);
  EXPECT_EQ(a, b);
  // A header without "scheme" (written before this family existed) is classic MinHash.
  const nlohmann::json legacy = {{"kernel", "jaccard"}, {"rows", 30}, {"power", 1}, {"seed", 5}};
  const auto c = make_family(legacy);
  EXPECT_NE(dynamic_cast<const MinHash*>(c.get()), nullptr);
  EXPECT_EQ(c->params(), legacy);
  EXPECT_EQ(c->kernel_name(), "jaccard");
  EXPECT_THROW(make_family(nlohmann::json{{"kernel", "jaccard"}, {"scheme", "weird"}, {"rows", 3}, {"power", 1}, {"seed", 1}}),
               InputError);
}
