#pragma once
// Exact sampling of the geometric distribution P(M = k) = (1 - a) a^k, a = exp(-s / t), by
// inversion of a uniform against CDF tables held to 128 bits, for the bulk noise of large
// sketches (2 x 10^8 counts for R = 2000, W = 100,000).
//
// Why it is exact. The uniform U = 0.b1 b2 b3 ... is drawn 64 bits at a time, lazily. A table
// entry stores floor(C(r) 2^128) of the CDF value C(r), computed with MPFR at 384 bits and
// checked to be far from a rounding boundary, so comparing U's first 64 (or 128) bits with it
// decides U >= C(r) exactly unless the bits agree; then further bits of C(r) are computed with
// MPFR at 1024 bits. The CDF values are irrational (exp of a non-zero rational), so agreement
// on every bit has probability zero; agreement on 960 bits (probability 2^-960) throws instead
// of returning a biased sample. Nothing is rounded that could shift probability mass.
//
// Scales below 1 use the tables of a finer geometric and divide its draw (exact: the .cpp).
//
// Why it is fast. One 64-bit CSPRNG word and a guide-table lookup per level, instead of the
// dozens of Bernoulli trials of the Bernoulli(exp) construction (Canonne, Kamath & Steinke
// 2020), which stays in use for small sketches where building a table would not pay.
//
// Structure. M mod m and floor(M / m) of a geometric M are independent: the first is the
// geometric truncated to [0, m), the second geometric with parameter a^m. Large scales are
// therefore split into levels of m = 2^16 (truncated tables); the last level is the full
// geometric over [0, m) whose tail P(M >= m) = a^m <= 2^-10 restarts the draw with m added,
// which memorylessness makes exact.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace {

class ExactGeometric {
 public:
  // P(M = k) = (1 - a) a^k with a = exp(-s / t); t, s > 0. A scale t / s below 1 is sampled as
  // floor(Y / c) of the geometric Y of scale c t / s >= 1, c = ceil(s / t) (exact: see the .cpp).
  ExactGeometric(std::uint64_t t, std::uint64_t s);
  std::uint64_t sample(RandomSource& rng) const { return sample(rng, rng); }
  // The same, drawing the table words from `words` (anything with next(), e.g. a local batch
  // copied out of `rng`) and the rare tie-breaking words from `rng`. Every word is fresh and
  // used once, so the order in which they are consumed does not change the distribution.
  template <typename Words>
  std::uint64_t sample(Words& words, RandomSource& rng) const;

  // One shared, immutable instance per (t, s) for the life of the process: tables cost
  // tens of milliseconds to build and the experiment runner privatizes thousands of sketches.
  static std::shared_ptr<const ExactGeometric> shared(std::uint64_t t, std::uint64_t s);

  // The guide table: bucket j covers first words [j 2^(64 - bits), (j + 1) 2^(64 - bits)); its
  // entry holds r = max{r : hi[r] <= bucket start} and hi[r + 1] (all ones past the end).
  // Where at most one CDF boundary falls inside a bucket (most of the probability mass: the
  // bucket count is chosen so), a draw needs one guide lookup and one comparison; buckets
  // with more are marked and scanned.
  struct GuideEntry {
    std::uint64_t next_hi;
    std::uint32_t r;
    std::uint32_t scan;  // 1: several boundaries in the bucket
  };
  // For tests: the levels and their table entries.
  struct Level {
    unsigned shift = 0;       // this level's parameter is a^(2^shift) = exp(-s 2^shift / t)
    std::uint32_t size = 0;   // m, a power of two
    bool truncated = false;   // truncated to [0, m), or the full geometric with restarts
    std::vector<std::uint64_t> hi, lo;  // floor(C(r) 2^128) for r = 0 .. last
    std::vector<GuideEntry> guide;
    unsigned guide_bits = 0;
  };
  const std::vector<Level>& levels() const { return levels_; }
  std::uint64_t divisor() const { return divisor_; }  // c above (1 from scale 1 on)
  // Draws r with C(r) <= U < C(r + 1) for one level (r == size means "restart" on the last).
  std::uint32_t sample_level(const Level& level, RandomSource& rng) const { return sample_level(level, rng, rng); }
  template <typename Words>
  std::uint32_t sample_level(const Level& level, Words& words, RandomSource& rng) const;
  // The same, from U's first word v, without the guide's shortcut: every tie goes through here.
  std::uint32_t sample_level_slow(const Level& level, std::uint64_t v, RandomSource& rng) const;
  // Words 2 .. 15 of C(r)'s binary expansion (bits 128 .. 1023), computed on demand.
  std::vector<std::uint64_t> precise_words(const Level& level, std::uint32_t r) const;

  // The bulk form (DiscreteLaplace::add_to): the same M, split into levels of m = 2^8 instead
  // of 2^16, each level's uniform U read 32 bits first. Its tables are small enough to stay in
  // L1 (a few KiB per level, against 256 KiB of guide and 512 KiB of entries for one level of
  // 2^15 entries at scale 2000), and one 64-bit CSPRNG word serves two levels. Exact for the
  // same reason as above: U's first 32 bits decide unless they equal a table entry's first 32
  // bits; then U's next bits are drawn (fresh words) and the 128-bit entries and the MPFR
  // expansion decide, as in sample_level_slow. A different use of the words than sample():
  // seeded bulk outputs differ from the 2^16-level form's, the distribution is the same.
  struct Guide32 {
    std::uint32_t next;      // first 32 bits of C(r + 1) (all ones past the end: a tie, slow path)
    std::uint32_t r : 31;    // r = max{r : r == 0 or hi32[r] < bucket start}
    std::uint32_t scan : 1;  // 1: a second boundary inside the bucket
  };
  struct CompactLevel {
    Level exact;                     // shift, size, truncated, the 128-bit entries (slow path)
    std::vector<std::uint32_t> hi32;  // exact.hi[r] >> 32
    std::vector<Guide32> guide;
    unsigned guide_bits = 0;
  };
  const std::vector<CompactLevel>& compact_levels() const { return compact_; }
  // Draws from `words` (next32(): 32-bit halves of fresh words, next(): whole words) and, for
  // ties only, from `rng`.
  template <typename Words>
  std::uint64_t sample_compact(Words& words, RandomSource& rng) const;
  template <typename Words>
  std::uint32_t sample_compact_level(const CompactLevel& level, Words& words, RandomSource& rng) const;
  // U's first 32 bits are v32 and tie with an entry (or fall in a scanned bucket): U's next
  // bits from fresh words of `rng`, then the 64-bit logic of sample_level_slow.
  std::uint32_t sample_compact_slow(const CompactLevel& level, std::uint32_t v32, RandomSource& rng) const;

  // Shared with other CDF tables held the same way (the discrete Gaussian's, discrete_gaussian.hpp).
  // The 32-bit guide of a level: the fewest buckets (at most 2^max_bits) that leave at most
  // 2^-scan_share_log2 of the probability in buckets holding a second boundary.
  static CompactLevel compact(Level level, unsigned max_bits, unsigned scan_share_log2);
  // Decides C(r) <= U < C(r + 1) from U's first word v and, on a tie with an entry's first
  // word, U's further words from `more` against the entry's second word and then against
  // precise(r), C(r)'s words 2 .. 15 (bits 128 .. 1023, computed on demand).
  template <typename More, typename Precise>
  static std::uint32_t resolve_tie(const Level& level, std::uint64_t v, More& more, const Precise& precise);
  // The same from U's first 32 bits v32 (a compact draw's tie), U's next bits from fresh words of rng.
  template <typename Precise>
  static std::uint32_t resolve_compact_tie(const Level& level, std::uint32_t v32, RandomSource& rng, const Precise& precise);

 private:
  std::uint64_t sample_tail(std::uint64_t tail, unsigned shift) const;
  std::uint64_t t_, s_;        // the tables' parameter: t_ = c t for a scale below 1
  std::uint64_t divisor_ = 1;  // c
  std::vector<Level> levels_;
  std::vector<CompactLevel> compact_;
};

template <typename Words>
[[gnu::always_inline]] inline std::uint32_t ExactGeometric::sample_compact_level(const CompactLevel& level, Words& words,
                                                                                 RandomSource& rng) const {
  const std::uint32_t v = words.next32();  // U's first 32 bits
  const Guide32& e = level.guide[v >> (32 - level.guide_bits)];
  if (e.scan) [[unlikely]] {
    const std::uint32_t* hi = level.hi32.data();
    const auto last = static_cast<std::uint32_t>(level.hi32.size() - 1);
    std::uint32_t r = e.r;
    while (r < last && hi[r + 1] < v) ++r;  // hi32[r] < v (or r = 0)
    if (r < last && hi[r + 1] == v) [[unlikely]]
      return sample_compact_slow(level, v, rng);
    return r;  // C(r) <= U < C(r + 1): hi32[r] < v < hi32[r + 1]
  }
  // The bucket's only boundary is next: v > next decides C(r + 1) <= U exactly, v < next the
  // opposite; v == next (probability 2^-32 a level) takes the slow path.
  if (v == e.next) [[unlikely]]
    return sample_compact_slow(level, v, rng);
  return e.r + static_cast<std::uint32_t>(v > e.next);
}

template <typename Words>
std::uint64_t ExactGeometric::sample_compact(Words& words, RandomSource& rng) const {
  std::uint64_t total = 0;
  unsigned shift = 0;
  const std::size_t n = compact_.size();
  for (std::size_t i = 0; i + 1 < n; ++i) {
    total += static_cast<std::uint64_t>(sample_compact_level(compact_[i], words, rng)) << shift;
    shift += 8;
  }
  const CompactLevel& top = compact_[n - 1];
  std::uint64_t tail = 0;
  for (;;) {
    const std::uint32_t r = sample_compact_level(top, words, rng);
    if (r < top.exact.size) [[likely]] {
      tail += r;
      break;
    }
    tail += top.exact.size;
  }
  const std::uint64_t y = total + sample_tail(tail, shift);
  return divisor_ == 1 ? y : y / divisor_;
}

template <typename Words>
std::uint32_t ExactGeometric::sample_level(const Level& level, Words& words, RandomSource& rng) const {
  const std::uint64_t v = words.next();  // U's first 64 bits
  const GuideEntry& e = level.guide[v >> (64 - level.guide_bits)];
  if (e.scan) [[unlikely]] {
    // Several boundaries in this bucket (the geometric's thin tail): scan them here; only an
    // exact tie on the first word (hi[r] == v) needs the slow path's further bits.
    const std::uint64_t* hi = level.hi.data();
    const auto last = static_cast<std::uint32_t>(level.hi.size() - 1);
    std::uint32_t r = e.r;
    while (r < last && hi[r + 1] <= v) ++r;
    if (hi[r] == v && r != 0) [[unlikely]]
      return sample_level_slow(level, v, rng);
    return r;
  }
  // v >= next_hi: C(r + 1) <= U exactly unless v == next_hi; hi[r] < v unless v is the bucket
  // start. Both exceptions (probability about 2^-50) take the slow path, which also handles
  // the all-ones sentinel past the last entry.
  if ((v == e.next_hi) | ((v << level.guide_bits) == 0)) [[unlikely]]
    return sample_level_slow(level, v, rng);
  return e.r + static_cast<std::uint32_t>(v > e.next_hi);
}

template <typename Words>
std::uint64_t ExactGeometric::sample(Words& words, RandomSource& rng) const {
  // M = D_0 + m_0 (D_1 + m_1 (... + T)): independent truncated digits, then the full geometric T.
  std::uint64_t total = 0;
  unsigned shift = 0;
  const std::size_t n = levels_.size();
  for (std::size_t i = 0; i + 1 < n; ++i) {
    total += static_cast<std::uint64_t>(sample_level(levels_[i], words, rng)) << shift;
    shift += 16;
  }
  const Level& top = levels_[n - 1];
  std::uint64_t tail = 0;
  for (;;) {
    const std::uint32_t r = sample_level(top, words, rng);
    if (r < top.size) [[likely]] {
      tail += r;
      break;
    }
    tail += top.size;  // U >= C(m) = 1 - a^m: M >= m, and M - m is again geometric
  }
  const std::uint64_t y = total + sample_tail(tail, shift);
  return divisor_ == 1 ? y : y / divisor_;
}

template <typename More, typename Precise>
std::uint32_t ExactGeometric::resolve_tie(const Level& level, std::uint64_t v, More& more, const Precise& precise) {
  const std::uint32_t last = static_cast<std::uint32_t>(level.hi.size() - 1);
  std::uint32_t r = 0;
  if (level.guide.empty())  // a table without a 64-bit guide: r = max{r : hi[r] <= v}
    r = static_cast<std::uint32_t>(std::upper_bound(level.hi.begin(), level.hi.end(), v) - level.hi.begin() - 1);
  else
    r = level.guide[v >> (64 - level.guide_bits)].r;
  while (r < last && level.hi[r + 1] <= v) ++r;
  // hi[r] <= v < hi[r + 1]. If hi[r] < v then C(r) < (hi[r] + 1) 2^-64 <= U and
  // C(r + 1) >= hi[r + 1] 2^-64 > U: r is the answer. C(0) = 0 <= U always.
  if (level.hi[r] != v || r == 0) return r;
  // Tie on the first word: U >= C(r) decides between r and r - 1 (hi[r - 1] < v).
  const std::uint64_t w = more.next();
  if (w != level.lo[r]) return w > level.lo[r] ? r : r - 1;
  for (const std::uint64_t word : precise(r)) {
    const std::uint64_t x = more.next();
    if (x != word) return x > word ? r : r - 1;
  }
  throw Error("exact CDF table: a uniform agreed with a CDF value on 1024 bits (probability 2^-960)");
}

template <typename Precise>
std::uint32_t ExactGeometric::resolve_compact_tie(const Level& level, std::uint32_t v32, RandomSource& rng,
                                                  const Precise& precise) {
  // U = 0.v32 w x ... with w, x, ... fresh words: its 64-bit words are (v32, high half of w),
  // (low half of w, high half of x), ...
  struct Shifted {
    RandomSource& rng;
    std::uint64_t carry;  // the low 32 bits of the last word drawn
    std::uint64_t next() {
      const std::uint64_t x = rng.next();
      const std::uint64_t out = (carry << 32) | (x >> 32);
      carry = x & 0xFFFFFFFFu;
      return out;
    }
  } more{rng, v32};
  const std::uint64_t v = more.next();
  return resolve_tie(level, v, more, precise);
}

// The bulk kernels' word source (DiscreteLaplace::add_to, DiscreteGaussian::add_to): table
// words and sign bits from a local batch, so the loop keeps its stream position in registers
// instead of the generator's members (a store-to-load chain per word). Compact levels read
// 32-bit halves: the low half of a word first, then its high half.
struct CompactWordBatch {
  RandomSource& rng;
  std::array<std::uint64_t, 256> words;
  std::uint32_t pos = 256;  // 32-bit members: an int64 store to the counts cannot alias them
  std::uint32_t half = 0;
  std::uint32_t half_ready = 0;
  std::uint32_t signs_left = 0;
  std::uint64_t signs = 0;
  explicit CompactWordBatch(RandomSource& source) : rng(source) {}
  std::uint64_t next() {
    if (pos == words.size()) [[unlikely]] {
      rng.take(words.data(), words.size());
      pos = 0;
    }
    return words[pos++];
  }
  std::uint32_t next32() {
    if (half_ready) {
      half_ready = 0;
      return half;
    }
    const std::uint64_t w = next();
    half = static_cast<std::uint32_t>(w >> 32);
    half_ready = 1;
    return static_cast<std::uint32_t>(w);
  }
  std::uint64_t bit() {
    if (signs_left == 0) [[unlikely]] {
      signs = next();
      signs_left = 64;
    }
    const std::uint64_t b = signs & 1;
    signs >>= 1;
    --signs_left;
    return b;
  }
};

// A compact level's tables in locals (sample_compact_level's logic and word order); `slow`
// (v32) -> r resolves ties and words in scanned buckets that equal an entry's first 32 bits.
struct CompactLevelView {
  const ExactGeometric::Guide32* guide;
  const std::uint32_t* hi32;
  std::uint32_t last;
  unsigned drop;  // 32 - guide bits
  const ExactGeometric::CompactLevel* level;
  explicit CompactLevelView(const ExactGeometric::CompactLevel& l)
      : guide(l.guide.data()), hi32(l.hi32.data()), last(static_cast<std::uint32_t>(l.hi32.size() - 1)),
        drop(32 - l.guide_bits), level(&l) {}
  CompactLevelView() = default;
  template <typename Slow>
  [[gnu::always_inline]] std::uint32_t draw(CompactWordBatch& batch, const Slow& slow) const {
    const std::uint32_t v = batch.next32();
    const ExactGeometric::Guide32 e = guide[v >> drop];
    if (e.scan) [[unlikely]] {
      std::uint32_t r = e.r;
      while (r < last && hi32[r + 1] < v) ++r;
      if (r < last && hi32[r + 1] == v) [[unlikely]]
        return slow(*level, v);
      return r;
    }
    if (v == e.next) [[unlikely]]
      return slow(*level, v);
    return e.r + static_cast<std::uint32_t>(v > e.next);
  }
};

inline std::uint64_t ExactGeometric::sample_tail(std::uint64_t tail, unsigned shift) const {
  if ((tail >> (63 - shift)) != 0) [[unlikely]]
    throw std::overflow_error("exact geometric sampler: sample beyond 2^63 (probability below 2^-10000)");
  return tail << shift;
}

}  // namespace privrace
