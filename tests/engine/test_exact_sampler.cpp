// The table-inversion sampler of the geometric distribution (bulk discrete Laplace noise):
// its draws follow the pmf at every scale regime (one level, several levels, restarts), its
// tables agree with the closed form, and the tie-breaking path decides exactly.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <map>
#include <tuple>

#include "privrace/core/error.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/exact_geometric.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release_record.hpp"
#include "test_util.hpp"

using namespace privrace;
using privrace::testing::chi_square;
using privrace::testing::chi_square_critical;

namespace {

// Plays a script of words first, then a seeded stream.
class ScriptedRandom final : public RandomSource {
 public:
  explicit ScriptedRandom(std::deque<std::uint64_t> script) : script_(std::move(script)), rest_(1) {}
  bool cryptographic() const override { return false; }

 protected:
  void fill(std::uint64_t* out, std::size_t words) override {
    for (std::size_t i = 0; i < words; ++i) {
      if (!script_.empty()) {
        out[i] = script_.front();
        script_.pop_front();
      } else {
        out[i] = rest_.next();
      }
    }
  }

 private:
  std::deque<std::uint64_t> script_;
  SeededRandom rest_;
};

// Chi-square of geometric draws against P(M = k) = (1 - a) a^k, a = exp(-rate), in 40 bins of
// equal probability (exact bin probabilities from the closed-form CDF).
void expect_geometric(const ExactGeometric& g, double rate, std::uint64_t seed, int n) {
  const int bins = 40;
  std::vector<double> edge(bins + 1);  // bin i = [edge[i], edge[i + 1])
  edge[0] = 0;
  for (int i = 1; i < bins; ++i) edge[i] = std::ceil(-std::log1p(-static_cast<double>(i) / bins) / rate);
  edge[bins] = INFINITY;
  auto tail = [&](double x) { return std::isinf(x) ? 0.0 : std::exp(-rate * x); };  // P(M >= x)
  SeededRandom rng(seed);
  std::map<long long, long long> hist;
  for (int i = 0; i < n; ++i) {
    const auto m = static_cast<double>(g.sample(rng));
    const int bin = static_cast<int>(std::upper_bound(edge.begin(), edge.end(), m) - edge.begin()) - 1;
    ++hist[bin];
  }
  const auto [stat, df] = chi_square(hist, [&](long long i) { return tail(edge[i]) - tail(edge[i + 1]); }, 0, bins - 1, n);
  EXPECT_LT(stat, chi_square_critical(df)) << "chi-square " << stat << " with " << df << " df, rate " << rate;
}

}  // namespace

TEST(ExactGeometric, MatchesThePmfInEveryRegime) {
  // scale t / s: 1 (tiny table), 17, 2000 (one full level: the Slashdot sketch), 10^5 (one
  // truncated level + top), 10^9 (two truncated levels + top).
  for (const auto& [t, s] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {1, 1}, {17, 1}, {8000, 4}, {100000, 1}, {1000000000, 1}}) {
    const ExactGeometric g(t, s);
    const double rate = static_cast<double>(s) / static_cast<double>(t);
    expect_geometric(g, rate, t + 3, 200000);
  }
  EXPECT_EQ(ExactGeometric(1000000000, 1).levels().size(), 3u);
  EXPECT_EQ(ExactGeometric(8000, 4).levels().size(), 1u);
  EXPECT_EQ(ExactGeometric(8000, 4).divisor(), 1u);
  EXPECT_THROW(ExactGeometric(0, 2), UsageError);
}

TEST(ExactGeometric, ScalesBelowOneDivideAFinerGeometricExactly) {
  // Scale t / s below 1: floor(Y / c) of the geometric of scale c t / s, c = ceil(s / t).
  for (const auto& [t, s, c] : std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>{
           {1, 2, 2}, {2, 5, 3}, {3, 7, 3}, {1, 1000, 1000}}) {
    const ExactGeometric g(t, s);
    EXPECT_EQ(g.divisor(), c) << t << "/" << s;
    const double a = std::exp(-static_cast<double>(s) / static_cast<double>(t));
    SeededRandom rng(t * 31 + s);
    const int n = 300000;
    std::map<long long, long long> hist;
    for (int i = 0; i < n; ++i) ++hist[static_cast<long long>(g.sample(rng))];
    if (a < 1e-12) {  // scale 1/1000: P(M > 0) = e^-1000
      EXPECT_EQ(hist[0], n);
      continue;
    }
    // Every value is a bin (pooled where the expected count is below 5).
    const auto [stat, df] = chi_square(hist, [&](long long k) { return (1 - a) * std::pow(a, static_cast<double>(k)); }, 0, 40, n);
    EXPECT_LT(stat, chi_square_critical(df)) << "scale " << t << "/" << s << ": " << stat << " / " << df;
    // P(M = 0) = 1 - a to within 5 standard errors.
    EXPECT_NEAR(static_cast<double>(hist[0]) / n, 1 - a, 5 * std::sqrt(a * (1 - a) / n) + 1e-9) << t << "/" << s;
  }
}

TEST(ExactGeometric, SmallCountsAreExactlyDistributed) {
  // Per-value chi-square at scale 2.5 (a = exp(-0.4)), where every value up to 40 is a bin.
  const ExactGeometric g(5, 2);
  const double a = std::exp(-0.4);
  SeededRandom rng(99);
  const int n = 300000;
  std::map<long long, long long> hist;
  for (int i = 0; i < n; ++i) ++hist[static_cast<long long>(g.sample(rng))];
  const auto [stat, df] = chi_square(hist, [&](long long k) { return (1 - a) * std::pow(a, static_cast<double>(k)); }, 0, 60, n);
  EXPECT_LT(stat, chi_square_critical(df)) << stat << " / " << df;
}

TEST(ExactGeometric, TablesHoldTheCdfTo128Bits) {
  const ExactGeometric g(8000, 4);  // rate 1/2000
  const auto& level = g.levels().back();
  ASSERT_FALSE(level.truncated);
  EXPECT_EQ(level.hi.size(), level.size + 1u);  // C(m), the restart point, is kept
  EXPECT_EQ(level.hi[0], 0u);
  for (std::uint32_t r : {1u, 7u, 500u, 4000u, level.size}) {
    // C(r) = 1 - exp(-r / 2000): the first word is floor(C 2^64), good to double precision.
    const double c = -std::expm1(-static_cast<double>(r) / 2000.0);
    EXPECT_NEAR(static_cast<double>(level.hi[r]) * 0x1.0p-64, c, 1e-15 * c + 1e-18) << r;
  }
  for (std::size_t r = 1; r < level.hi.size(); ++r) ASSERT_LT(level.hi[r - 1], level.hi[r]);
  // The guide: every bucket's r satisfies hi[r] <= bucket start < hi[r + 1].
  for (std::size_t j = 0; j < level.guide.size(); ++j) {
    const std::uint64_t start = static_cast<std::uint64_t>(j) << (64 - level.guide_bits);
    const auto& e = level.guide[j];
    ASSERT_LE(level.hi[e.r], start);
    if (e.r + 1 < level.hi.size()) {
      ASSERT_GT(level.hi[e.r + 1], start);
    }
  }
}

TEST(ExactGeometric, TiesAreDecidedByLaterBitsExactly) {
  const ExactGeometric g(8000, 4);
  const auto& level = g.levels().back();
  const std::uint32_t r = 1234;
  const std::uint64_t hi = level.hi[r], lo = level.lo[r];
  const auto words = g.precise_words(level, r);
  ASSERT_EQ(words.size(), 14u);
  auto draw = [&](std::deque<std::uint64_t> script) {
    ScriptedRandom rng(std::move(script));
    return g.sample_level(level, rng);
  };
  // U's first word equals floor(C(r) 2^64): the second word decides against floor(frac 2^64).
  EXPECT_EQ(draw({hi, lo + 1}), r);
  EXPECT_EQ(draw({hi, lo - 1}), r - 1);
  // Equal on 128 bits: the MPFR words at 1024-bit precision decide.
  EXPECT_EQ(draw({hi, lo, words[0] + 1}), r);
  EXPECT_EQ(draw({hi, lo, words[0] - 1}), r - 1);
  EXPECT_EQ(draw({hi, lo, words[0], words[1], words[2] + 1}), r);
  EXPECT_EQ(draw({hi, lo, words[0], words[1], words[2] - 1}), r - 1);
  // Off the boundary the fast path answers, and agrees with the slow one.
  EXPECT_EQ(draw({hi + 1}), r);
  EXPECT_EQ(draw({hi - 1}), r - 1);
  // A first word at a guide bucket's start goes through the slow path too.
  const std::uint64_t bucket_start = level.hi[r] >> (64 - level.guide_bits) << (64 - level.guide_bits);
  ScriptedRandom rng({bucket_start, 0});
  SeededRandom unused(1);
  EXPECT_EQ(g.sample_level(level, rng), g.sample_level_slow(level, bucket_start, unused));
  // In the thin tail several boundaries share a guide bucket (scanned inline): same answers.
  std::uint32_t tail_r = 0;
  for (std::uint32_t k = 20000; k < level.size; ++k)
    if (level.guide[level.hi[k] >> (64 - level.guide_bits)].scan) {
      tail_r = k;
      break;
    }
  ASSERT_GT(tail_r, 0u) << "no multi-boundary bucket found";
  EXPECT_EQ(draw({level.hi[tail_r], level.lo[tail_r] + 1}), tail_r);
  EXPECT_EQ(draw({level.hi[tail_r], level.lo[tail_r] - 1}), tail_r - 1);
  EXPECT_EQ(draw({level.hi[tail_r] + 1}), tail_r);
  EXPECT_EQ(draw({level.hi[tail_r] - 1}), tail_r - 1);
  // A first word past C(m) restarts the full geometric: r == m.
  EXPECT_EQ(draw({level.hi[level.size] + 1}), level.size);
}

TEST(DiscreteLaplace, BulkSamplerMatchesPmfAndVariance) {
  for (const double scale : {0.2, 0.5, 0.9, 1.0, 2.5, 17.0, 2000.0}) {
    const DiscreteLaplace noise(scale);
    const auto bulk = noise.bulk_sampler();
    ASSERT_TRUE(bulk);
    SeededRandom rng(static_cast<std::uint64_t>(scale * 10) + 1);
    const long long n = 200000;
    std::vector<std::int64_t> zeros(n, 0);
    noise.add_to(zeros, rng, bulk.get());
    std::map<long long, long long> hist;
    double sum2 = 0;
    for (const auto y : zeros) {
      ++hist[y];
      sum2 += static_cast<double>(y) * static_cast<double>(y);
    }
    const long long k = static_cast<long long>(std::ceil(6 * scale)) + 2;
    const auto [stat, df] = chi_square(hist, [&](long long y) { return noise.pmf(y); }, -k, k, n);
    EXPECT_LT(stat, chi_square_critical(df)) << "scale " << scale;
    EXPECT_NEAR(sum2 / n / noise.variance(), 1.0, 6.0 * std::sqrt(6.0 / n) + 0.01) << "scale " << scale;
  }
  EXPECT_GE(DiscreteLaplace(0.5).bulk_sampler()->divisor(), 2u);  // below scale 1: a finer table, divided
}

TEST(Privatize, LargeSketchesUseTheTableSamplerWithTheSameDistribution) {
  // 4 x 65536 = 2^18 counts: the bulk path. Scale R / eps = 4 / 0.5 = 8.
  RaceSketch sketch(make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 1.0, .rows = 4, .dim = 2, .seed = 3}), 65536);
  privatize(sketch, {.epsilon = 0.5}, {.seeded = true, .seed = 77});
  EXPECT_EQ(privacy_record_json(sketch.privacy()).at("noise_sampler"), "exact_geometric_table");
  const DiscreteLaplace expected(8.0);
  std::map<long long, long long> hist;
  for (const auto c : sketch.counts()) ++hist[c];
  const auto n = static_cast<long long>(sketch.counts().size());
  const auto [stat, df] = chi_square(hist, [&](long long y) { return expected.pmf(y); }, -60, 60, n);
  EXPECT_LT(stat, chi_square_critical(df));
}

TEST(ExactGeometric, DigitsAndRestartsComposeTheSample) {
  // One full level: a first word past C(m) restarts with m added (memorylessness).
  const ExactGeometric one(8000, 4);
  const auto& top = one.levels().back();
  ScriptedRandom restart({~std::uint64_t{0}, top.hi[5] + 1});
  EXPECT_EQ(one.sample(restart), top.size + 5u);
  // Three levels: M = D0 + 2^16 D1 + 2^32 T.
  const ExactGeometric three(1000000000, 1);
  const auto& lv = three.levels();
  ASSERT_EQ(lv.size(), 3u);
  ScriptedRandom digits({lv[0].hi[7] + 1, lv[1].hi[3] + 1, lv[2].hi[2] + 1});
  EXPECT_EQ(three.sample(digits), 7u + (3ull << 16) + (2ull << 32));
}

// The bulk form (levels of 2^8, U read 32 bits first) that DiscreteLaplace::add_to draws from.
namespace {
// Words for sample_compact: 32-bit halves of the source's words, low half first.
struct HalfWords {
  RandomSource& rng;
  std::uint32_t half = 0;
  bool ready = false;
  std::uint64_t next() { return rng.next(); }
  std::uint32_t next32() {
    if (ready) {
      ready = false;
      return half;
    }
    const std::uint64_t w = rng.next();
    half = static_cast<std::uint32_t>(w >> 32);
    ready = true;
    return static_cast<std::uint32_t>(w);
  }
};
}  // namespace

TEST(ExactGeometric, CompactFormMatchesThePmfInEveryRegime) {
  // rate = s / t: one full level (t / s = 2 and 30), two (2000), three (10^5), seven (2^50).
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> cases = {
      {2, 1}, {30, 1}, {8000, 4}, {100000, 1}, {std::uint64_t{1} << 50, 1}};
  for (const auto& [t, s] : cases) {
    const ExactGeometric g(t, s);
    const double rate = static_cast<double>(s) / static_cast<double>(t);
    const int bins = 40, n = 200000;
    std::vector<double> edge(bins + 1);
    edge[0] = 0;
    for (int i = 1; i < bins; ++i) edge[i] = std::ceil(-std::log1p(-static_cast<double>(i) / bins) / rate);
    edge[bins] = INFINITY;
    auto tail = [&](double x) { return std::isinf(x) ? 0.0 : std::exp(-rate * x); };
    SeededRandom rng(t + 17);
    HalfWords words{rng};
    std::map<long long, long long> hist;
    for (int i = 0; i < n; ++i) {
      const auto m = static_cast<double>(g.sample_compact(words, rng));
      ++hist[static_cast<int>(std::upper_bound(edge.begin(), edge.end(), m) - edge.begin()) - 1];
    }
    const auto [stat, df] = chi_square(hist, [&](long long i) { return tail(edge[i]) - tail(edge[i + 1]); }, 0, bins - 1, n);
    EXPECT_LT(stat, chi_square_critical(df)) << "t " << t << " s " << s;
  }
  EXPECT_EQ(ExactGeometric(8000, 4).compact_levels().size(), 2u);  // scale 2000: D0 + 2^8 T
  EXPECT_EQ(ExactGeometric(std::uint64_t{1} << 50, 1).compact_levels().size(), 7u);
}

TEST(ExactGeometric, CompactTablesAndGuidesAreConsistent) {
  for (const auto& [t, s] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{{8000, 4}, {3, 1}, {100000, 1}}) {
    const ExactGeometric g(t, s);
    for (const auto& level : g.compact_levels()) {
      ASSERT_EQ(level.hi32.size(), level.exact.hi.size());
      EXPECT_LE(level.exact.size, 256u);
      for (std::size_t r = 0; r < level.hi32.size(); ++r) ASSERT_EQ(level.hi32[r], level.exact.hi[r] >> 32);
      const auto last = static_cast<std::uint32_t>(level.hi32.size() - 1);
      std::size_t scanned = 0;
      for (std::size_t j = 0; j < level.guide.size(); ++j) {
        const std::uint64_t start = static_cast<std::uint64_t>(j) << (32 - level.guide_bits);
        const std::uint64_t end = start + (std::uint64_t{1} << (32 - level.guide_bits)) - 1;
        const auto& e = level.guide[j];
        ASSERT_TRUE(e.r == 0 || level.hi32[e.r] < start) << j;
        if (e.r < last) {
          ASSERT_GE(level.hi32[e.r + 1], start) << j;
          ASSERT_EQ(e.next, level.hi32[e.r + 1]) << j;
        } else {
          ASSERT_EQ(e.next, 0xFFFFFFFFu);
        }
        // Not scanned: no second boundary in the bucket.
        if (!e.scan && e.r + 2u <= last) {
          ASSERT_GT(level.hi32[e.r + 2], end) << j;
        }
        scanned += e.scan;
      }
      EXPECT_LE(scanned * 64, level.guide.size() + 64 * (level.guide_bits == 12));
    }
  }
}

TEST(ExactGeometric, CompactTiesAreDecidedByLaterBitsExactly) {
  const ExactGeometric g(8000, 4);
  const auto& top = g.compact_levels().back();
  const std::uint32_t r = 9;
  const std::uint64_t hi = top.exact.hi[r], lo = top.exact.lo[r];
  const auto v32 = static_cast<std::uint32_t>(hi >> 32);
  // U = 0.v32 w x ...: its second 64-bit word is (low half of hi) followed by w's... arranged
  // from the words after the first: w = (hi low 32 bits, lo's high 32 bits), x = (lo's low 32, ...).
  auto draw = [&](std::deque<std::uint64_t> after) {
    ScriptedRandom rng(std::move(after));
    struct One {
      std::uint32_t v;
      RandomSource& rng;
      std::uint64_t next() { return rng.next(); }
      std::uint32_t next32() { return v; }
    } words{v32, rng};
    return g.sample_compact_level(top, words, rng);
  };
  const std::uint64_t w = (hi << 32) | (lo >> 32);
  EXPECT_EQ(draw({w, (lo << 32) | 0xFFFFFFFFu}), r);          // U's bits 65..128 = lo, then more ones: U > C(r)
  EXPECT_EQ(draw({w, ((lo - 1) << 32) | 0xFFFFFFFFu}), r - 1);  // one below on bits 65..128
  EXPECT_EQ(draw({w + 1}), r);                                 // bits 33..64 above hi's: U > C(r)
  EXPECT_EQ(draw({w - (std::uint64_t{1} << 32)}), r - 1);      // below hi's low half: U < C(r)
  // Exact agreement on 128 bits: the MPFR words decide.
  const auto words = g.precise_words(top.exact, r);
  const std::uint64_t x = (lo << 32) | (words[0] >> 32);
  EXPECT_EQ(draw({w, x, (words[0] << 32) | (words[1] >> 32), ((words[1] + 1) << 32)}), r);
  EXPECT_EQ(draw({w, x, (words[0] << 32) | (words[1] >> 32) , ((words[1] - 1) << 32) | 0xFFFFFFFFu}), r - 1);
  // The fast path agrees with the slow one away from ties.
  SeededRandom rng(5);
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<std::uint32_t>(rng.next());
    ScriptedRandom a({}), b({});
    struct One {
      std::uint32_t v;
      RandomSource& rng;
      std::uint64_t next() { return rng.next(); }
      std::uint32_t next32() { return v; }
    } words{v, a};
    ASSERT_EQ(g.sample_compact_level(top, words, a), g.sample_compact_slow(top, v, b)) << v;
  }
}

TEST(DiscreteLaplace, BulkDrawsAreTheCompactSamplerWithASignBit) {
  // add_to's inlined kernel consumes words as sample_compact (halves, low first) with the sign
  // bits from whole words of the same stream: replayed here draw by draw.
  for (const double scale : {0.5, 3.0, 2000.0, 1e6}) {
    const DiscreteLaplace noise(scale);
    const auto bulk = noise.bulk_sampler();
    std::vector<std::int64_t> got(5000, 0);
    SeededRandom a(42);
    noise.add_to(got, a, bulk.get());
    SeededRandom b(42);
    struct Replay {
      RandomSource& rng;
      std::uint32_t half = 0;
      bool ready = false;
      std::uint64_t signs = 0;
      int left = 0;
      std::uint64_t next() { return rng.next(); }
      std::uint32_t next32() {
        if (ready) {
          ready = false;
          return half;
        }
        const std::uint64_t w = rng.next();
        half = static_cast<std::uint32_t>(w >> 32);
        ready = true;
        return static_cast<std::uint32_t>(w);
      }
      std::uint64_t bit() {
        if (left == 0) {
          signs = rng.next();
          left = 64;
        }
        const std::uint64_t v = signs & 1;
        signs >>= 1;
        --left;
        return v;
      }
    } words{b};
    for (std::size_t i = 0; i < got.size(); ++i) {
      std::int64_t y = 0;
      for (;;) {
        const auto m = static_cast<std::int64_t>(bulk->sample_compact(words, b));
        const bool negative = words.bit() != 0;
        if (negative && m == 0) continue;
        y = negative ? -m : m;
        break;
      }
      ASSERT_EQ(got[i], y) << "scale " << scale << " draw " << i;
    }
  }
}

// ---------------------------------------------------------------- the discrete Gaussian's table

namespace {
// The reference pmf of N_Z(0, s2) in long double, by direct summation (independent of the
// sampler's MPFR tables and of DiscreteGaussian::pmf).
std::function<double(long long)> gaussian_pmf(double s2) {
  long double z = 0;
  const auto reach = static_cast<long long>(std::ceil(40 * std::sqrt(s2))) + 10;
  for (long long x = -reach; x <= reach; ++x) z += std::exp(-static_cast<long double>(x) * x / (2.0L * s2));
  return [s2, z](long long x) { return static_cast<double>(std::exp(-static_cast<long double>(x) * x / (2.0L * s2)) / z); };
}
}  // namespace

TEST(DiscreteGaussian, BulkSamplerMatchesTheExactPmfAndTheTestHasPower) {
  // Per-value chi-square (bins merged below 5 expected draws) of the table sampler's draws
  // against the exact pmf, at the critical value of significance about 1e-4 (z = 3.719, the
  // Wilson-Hilferty approximation): a small sigma (the table has a few entries), non-dyadic
  // ones, the audit's (272) and a wide sketch's (2000). Power: at sigma 40 the same draws are
  // rejected against the pmf of sigma 1.01 x 40 (a 2% variance error; the expected statistic
  // is about 800 above its df).
  for (const double sigma : {0.6, 3.0, 7.3, 40.0, 272.0, 2000.0}) {
    const DiscreteGaussian noise(sigma);
    const auto table = noise.bulk_sampler();
    ASSERT_TRUE(table);
    const long long n = 1000000;
    std::vector<std::int64_t> draws(static_cast<std::size_t>(n), 0);
    SeededRandom rng(static_cast<std::uint64_t>(sigma * 977));
    noise.add_to(draws, rng, table.get());
    std::map<long long, long long> hist;
    for (const auto d : draws) ++hist[d];
    const auto reach = static_cast<long long>(std::ceil(8 * sigma)) + 2;
    const auto [stat, df] = chi_square(hist, gaussian_pmf(noise.sigma2()), -reach, reach, n);
    EXPECT_LT(stat, chi_square_critical(df)) << "sigma " << sigma << ": " << stat << " / " << df;
    EXPECT_NEAR(noise.pmf(3), gaussian_pmf(noise.sigma2())(3), 1e-12);
    if (sigma == 40.0) {
      const DiscreteGaussian wider(sigma * 1.01);
      const auto [wrong, wrong_df] = chi_square(hist, gaussian_pmf(wider.sigma2()), -reach, reach, n);
      EXPECT_GT(wrong, chi_square_critical(wrong_df)) << "the test cannot tell sigma from 1.01 sigma: " << wrong;
    }
  }
}

TEST(DiscreteGaussian, TableHoldsTheCdfTo128BitsAndItsTailIsExact) {
  for (const double sigma : {0.3, 3.0, 2000.0}) {
    const DiscreteGaussian noise(sigma);
    const auto table = noise.bulk_sampler();
    const auto& level = table->level();
    const std::uint32_t n = table->size();
    // N = the smallest k with k^2 / (2 s2) > 32.
    EXPECT_GT(static_cast<double>(n) * n / (2 * noise.sigma2()), 32.0);
    EXPECT_LE(static_cast<double>(n - 1) * (n - 1) / (2 * noise.sigma2()), 32.0);
    ASSERT_EQ(level.exact.hi.size(), n + 1u);
    const auto pmf = gaussian_pmf(noise.sigma2());
    long double cdf = 0;  // C(k) = P(|Y| < k)
    for (std::uint32_t k = 0; k <= n; ++k) {
      if (k > 0) {
        ASSERT_GT(level.exact.hi[k], level.exact.hi[k - 1]) << k;
      }
      const long double got = std::ldexp(static_cast<long double>(level.exact.hi[k]), -64);
      ASSERT_NEAR(static_cast<double>(got), static_cast<double>(cdf), 1e-15) << "sigma " << sigma << " k " << k;
      cdf += (k == 0 ? 1.0L : 2.0L) * pmf(k);  // P(M = k) = P(|Y| = k)
    }
    EXPECT_EQ(level.exact.hi.back() >> 60, 0xFu);  // C(N) = 1 - O(e^-32)
  }
  // The tail: k >= N drawn with P proportional to exp(-k^2 / (2 s2)), chi-square per value.
  const DiscreteGaussian noise(3.0);
  const auto table = noise.bulk_sampler();
  const long long n0 = table->size();
  const double s2 = noise.sigma2();
  double z = 0;
  for (long long k = n0; k < n0 + 60; ++k) z += std::exp(-static_cast<double>(k * k - n0 * n0) / (2 * s2));
  SeededRandom rng(11);
  std::map<long long, long long> hist;
  const long long draws = 100000;
  for (long long i = 0; i < draws; ++i) ++hist[static_cast<long long>(table->sample_tail(rng))];
  EXPECT_EQ(hist.begin()->first, n0);
  const auto [stat, df] = chi_square(
      hist, [&](long long k) { return std::exp(-static_cast<double>(k * k - n0 * n0) / (2 * s2)) / z; }, n0, n0 + 40, draws);
  EXPECT_LT(stat, chi_square_critical(df)) << stat << " / " << df;
}

TEST(DiscreteGaussian, TableTiesAreDecidedByLaterBitsExactly) {
  const DiscreteGaussian noise(40.0);
  const auto table = noise.bulk_sampler();
  const auto& level = table->level().exact;
  const std::uint32_t r = 37;
  const std::uint64_t hi = level.hi[r], lo = level.lo[r];
  const auto v32 = static_cast<std::uint32_t>(hi >> 32);
  auto resolve = [&](std::deque<std::uint64_t> after) {
    ScriptedRandom rng(std::move(after));
    return table->resolve(v32, rng);
  };
  const std::uint64_t w = (hi << 32) | (lo >> 32);
  EXPECT_EQ(resolve({w, (lo << 32) | 0xFFFFFFFFu}), r);
  EXPECT_EQ(resolve({w, ((lo - 1) << 32) | 0xFFFFFFFFu}), r - 1);
  EXPECT_EQ(resolve({w + 1}), r);
  EXPECT_EQ(resolve({w - (std::uint64_t{1} << 32)}), r - 1);
  const auto words = table->precise_words(r);
  const std::uint64_t x = (lo << 32) | (words[0] >> 32);
  EXPECT_EQ(resolve({w, x, (words[0] << 32) | (words[1] >> 32), ((words[1] + 1) << 32)}), r);
  EXPECT_EQ(resolve({w, x, (words[0] << 32) | (words[1] >> 32), ((words[1] - 1) << 32) | 0xFFFFFFFFu}), r - 1);
  // The precise words continue the table's: C(r) at 1152 bits agrees with the 128-bit entry
  // (checked inside precise_words' computation through the same first two words).
  EXPECT_EQ(words.size(), 14u);
}

TEST(DiscreteGaussian, BulkBlocksAreThreadInvariantAndEachBlockIsItsOwnStream) {
  // Seeded: the same counts for 1, 2 and 3 threads, and block b equal to add_to from
  // SeededRandom(derive_seed(seed, b)) (3 whole blocks and a partial one). The CSPRNG path
  // draws the same distribution (its variance within 1% of sigma2's: sd of the estimate 0.25%).
  const DiscreteGaussian noise(272.0);
  const auto table = noise.bulk_sampler();
  const std::size_t cells = 3 * DiscreteGaussian::kNoiseBlock + 12345;
  std::vector<std::vector<std::int64_t>> runs;
  const int saved = omp_get_max_threads();
  for (const int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<std::int64_t> counts(cells, 7);
    noise.add_to_blocks(counts, table.get(), 99);
    runs.push_back(std::move(counts));
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  std::vector<std::int64_t> serial(cells, 7);
  for (std::size_t b = 0; b * DiscreteGaussian::kNoiseBlock < cells; ++b) {
    SeededRandom rng(derive_seed(99, b));
    const std::size_t at = b * DiscreteGaussian::kNoiseBlock;
    noise.add_to(std::span<std::int64_t>(serial).subspan(at, std::min(DiscreteGaussian::kNoiseBlock, cells - at)), rng,
                 table.get());
  }
  EXPECT_EQ(runs[0], serial);
  std::vector<std::int64_t> fresh(cells, 0);
  noise.add_to_blocks(fresh, table.get(), std::nullopt);
  double sum2 = 0;
  for (const auto v : fresh) sum2 += static_cast<double>(v) * static_cast<double>(v);
  EXPECT_NEAR(sum2 / static_cast<double>(cells) / noise.sigma2(), 1.0, 0.01);
  EXPECT_FALSE(DiscreteGaussian(1e6).bulk_sampler());  // above kMaxTableSigma: the rejection sampler
}
