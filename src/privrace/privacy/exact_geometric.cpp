#include "privrace/privacy/exact_geometric.hpp"

#include <limits>

// <cstdint> before mpfr.h declares mpfr_get_uj.
#include <cstdint>
#include <gmp.h>
#include <mpfr.h>

#include <cmath>
#include <map>
#include <mutex>
#include <numbers>
#include <string>
#include <utility>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mpfr_words.hpp"

namespace privrace {
namespace {

using mpfr_words::check_margin;
using mpfr_words::kPrecisePrecision;
using mpfr_words::kPreciseWords;
using mpfr_words::kTablePrecision;
using mpfr_words::Mpfr;
using mpfr_words::next_word;

constexpr unsigned kLevelBits = 16;        // m = 2^16 on truncated levels
constexpr unsigned kCompactLevelBits = 8;  // m = 2^8 in the bulk form


// rate = s 2^shift / t = -ln(a_level), rounded to nearest at the variable's precision.
void set_rate(mpfr_ptr rate, std::uint64_t s, unsigned shift, std::uint64_t t) {
  mpfr_set_ui(rate, s, MPFR_RNDN);  // unsigned long is 64 bits on the supported platforms
  mpfr_mul_2ui(rate, rate, shift, MPFR_RNDN);
  mpfr_div_ui(rate, rate, t, MPFR_RNDN);
}



// C(r) at high precision, directly: -expm1(-r x) for the full geometric, and
// expm1(-r x) / expm1(-m x) truncated to [0, m).
void precise_cdf(mpfr_ptr out, std::uint64_t t, std::uint64_t s, const ExactGeometric::Level& level, std::uint32_t r) {
  Mpfr rate(kPrecisePrecision), y(kPrecisePrecision), denom(kPrecisePrecision);
  set_rate(rate.get(), s, level.shift, t);
  mpfr_mul_ui(y.get(), rate.get(), r, MPFR_RNDN);
  mpfr_neg(y.get(), y.get(), MPFR_RNDN);
  mpfr_expm1(out, y.get(), MPFR_RNDN);  // expm1(-r x) < 0
  if (level.truncated) {
    mpfr_mul_ui(y.get(), rate.get(), level.size, MPFR_RNDN);
    mpfr_neg(y.get(), y.get(), MPFR_RNDN);
    mpfr_expm1(denom.get(), y.get(), MPFR_RNDN);
    mpfr_div(out, out, denom.get(), MPFR_RNDN);
  } else {
    mpfr_neg(out, out, MPFR_RNDN);
  }
}

ExactGeometric::Level build_level(std::uint64_t t, std::uint64_t s, unsigned shift, std::uint32_t size, bool truncated) {
  ExactGeometric::Level level;
  level.shift = shift;
  level.size = size;
  level.truncated = truncated;
  const std::uint32_t last = truncated ? size - 1 : size;  // the full geometric keeps C(m): the restart point
  level.hi.resize(last + 1);
  level.lo.resize(last + 1);

  Mpfr rate(kTablePrecision), a(kTablePrecision), power(kTablePrecision), denom(kTablePrecision),
      c(kTablePrecision), y(kTablePrecision);
  set_rate(rate.get(), s, shift, t);
  mpfr_neg(y.get(), rate.get(), MPFR_RNDN);
  mpfr_exp(a.get(), y.get(), MPFR_RNDN);  // a = exp(-rate)
  if (truncated) {                         // denom = 1 - a^m, in (2^-35, 1) for the scales allowed
    mpfr_mul_ui(y.get(), rate.get(), size, MPFR_RNDN);
    mpfr_neg(y.get(), y.get(), MPFR_RNDN);
    mpfr_expm1(denom.get(), y.get(), MPFR_RNDN);
    mpfr_neg(denom.get(), denom.get(), MPFR_RNDN);
  }
  // a^r by repeated multiplication: relative error below r 2^-383 <= 2^-366 for r <= 2^17.
  mpfr_set_ui(power.get(), 1, MPFR_RNDN);
  for (std::uint32_t r = 0; r <= last; ++r) {
    if (r == 0) {  // C(0) = 0 exactly
      level.hi[0] = level.lo[0] = 0;
    } else {
      mpfr_ui_sub(c.get(), 1, power.get(), MPFR_RNDN);
      if (truncated) mpfr_div(c.get(), c.get(), denom.get(), MPFR_RNDN);
      level.hi[r] = next_word(c.get());
      level.lo[r] = next_word(c.get());
      check_margin(c.get(), "exact geometric sampler", "a CDF entry");
      // Strictly increasing first words: a tie with V == hi[r] then leaves only r and r - 1.
      if (level.hi[r] <= level.hi[r - 1])
        throw Error("exact geometric sampler: CDF entries closer than 2^-64 (scale outside the supported range)");
    }
    mpfr_mul(power.get(), power.get(), a.get(), MPFR_RNDN);
  }

  // The fewest guide buckets (they should stay in cache) that leave at most 1/8 of the
  // probability in buckets holding several boundaries.
  for (unsigned bits = 1;; ++bits) {
    level.guide_bits = bits;
    level.guide.assign(std::size_t{1} << bits, {});
    std::size_t scanned = 0;
    std::uint32_t r = 0;
    for (std::size_t j = 0; j < level.guide.size(); ++j) {
      const std::uint64_t start = static_cast<std::uint64_t>(j) << (64 - bits);
      const std::uint64_t end_minus_one = start + ((std::uint64_t{1} << (64 - bits)) - 1);
      while (r < last && level.hi[r + 1] <= start) ++r;
      const std::uint64_t next = r < last ? level.hi[r + 1] : ~std::uint64_t{0};
      const bool scan = r + 1 < last && level.hi[r + 2] <= end_minus_one;
      level.guide[j] = {next, r, scan ? 1u : 0u};
      scanned += scan;
    }
    if (scanned * 8 <= level.guide.size() || bits == 20) break;
  }
  return level;
}


// M = D_0 + m D_1 + ... + m^k T (m = 2^bits): truncated levels while a level's parameter keeps
// a^m above 2^-10, then the full geometric.
std::vector<ExactGeometric::Level> build_levels(std::uint64_t t, std::uint64_t s, unsigned bits) {
  constexpr double kLn2 = std::numbers::ln2;
  std::vector<ExactGeometric::Level> levels;
  for (unsigned shift = 0;; shift += bits) {
    const double rate = std::ldexp(static_cast<double>(s), static_cast<int>(shift)) / static_cast<double>(t);
    if (rate * std::ldexp(1.0, static_cast<int>(bits)) >= 10 * kLn2) {
      // Last level: the full geometric over [0, m), m the smallest power of two with
      // a^m <= 2^-20 (restart probability), at most 2^bits (then a^m <= 2^-10).
      std::uint32_t m = 2;
      while (m < (1u << bits) && rate * m < 20 * kLn2) m *= 2;
      levels.push_back(build_level(t, s, shift, m, false));
      break;
    }
    if (shift > 128) throw UsageError("exact geometric sampler: scale too large");
    levels.push_back(build_level(t, s, shift, 1u << bits, true));
  }
  return levels;
}

}  // namespace

ExactGeometric::ExactGeometric(std::uint64_t t, std::uint64_t s) : t_(t), s_(s) {
  if (t == 0 || s == 0) throw UsageError("exact geometric sampler: t and s must be positive");
  // The tables need a scale t / s of at least 1 (at most 2^50 is enforced by the mechanism):
  // below 1 the CDF would reach 1 - 2^-64 within a few entries. A smaller scale samples the
  // geometric of the finer parameter b = exp(-s / (c t)), c = ceil(s / t), whose scale c t / s
  // is at least 1, and returns floor(Y / c): P(floor(Y / c) = m) = (1 - b) b^(mc) (1 + b + ...
  // + b^(c-1)) = (1 - b^c) (b^c)^m, the geometric of parameter b^c = exp(-s / t), exactly.
  if (s > t) {
    divisor_ = s / t + (s % t != 0 ? 1 : 0);
    if (t > std::numeric_limits<std::uint64_t>::max() / divisor_)
      throw UsageError("exact geometric sampler: scale t / s too small");
    t_ = t * divisor_;
  }
  levels_ = build_levels(t_, s_, kLevelBits);
  // Guides of at most 2^12 buckets leaving at most 1/64 of the probability to scanned buckets.
  for (Level& level : build_levels(t_, s_, kCompactLevelBits)) compact_.push_back(compact(std::move(level), 12, 6));
}

ExactGeometric::CompactLevel ExactGeometric::compact(Level level, unsigned max_bits, unsigned scan_share_log2) {
  ExactGeometric::CompactLevel out;
  const auto last = static_cast<std::uint32_t>(level.hi.size() - 1);
  if (last >= 0x7FFFFFFFu || max_bits > 31) throw Error("exact CDF table: a compact level is too large");
  out.hi32.resize(level.hi.size());
  for (std::size_t r = 0; r < level.hi.size(); ++r) out.hi32[r] = static_cast<std::uint32_t>(level.hi[r] >> 32);
  const std::uint32_t* hi = out.hi32.data();
  for (unsigned bits = 1;; ++bits) {
    out.guide_bits = bits;
    out.guide.assign(std::size_t{1} << bits, {});
    std::size_t scanned = 0;
    std::uint32_t r = 0;
    for (std::size_t j = 0; j < out.guide.size(); ++j) {
      const std::uint64_t start = static_cast<std::uint64_t>(j) << (32 - bits);
      const std::uint64_t end = start + (std::uint64_t{1} << (32 - bits)) - 1;  // inclusive
      while (r < last && hi[r + 1] < start) ++r;  // r = max{r : r == 0 or hi32[r] < start}
      const std::uint32_t next = r < last ? hi[r + 1] : 0xFFFFFFFFu;
      const bool scan = r + 1 < last && hi[r + 2] <= end;
      out.guide[j] = {next, r, scan ? 1u : 0u};
      scanned += scan;
    }
    if ((scanned << scan_share_log2) <= out.guide.size() || bits >= max_bits) break;
  }
  out.exact = std::move(level);
  return out;
}

std::uint32_t ExactGeometric::sample_level_slow(const Level& level, std::uint64_t v, RandomSource& rng) const {
  return resolve_tie(level, v, rng, [&](std::uint32_t r) { return precise_words(level, r); });
}

std::uint32_t ExactGeometric::sample_compact_slow(const CompactLevel& level, std::uint32_t v32, RandomSource& rng) const {
  return resolve_compact_tie(level.exact, v32, rng, [&](std::uint32_t r) { return precise_words(level.exact, r); });
}

std::vector<std::uint64_t> ExactGeometric::precise_words(const Level& level, std::uint32_t r) const {
  Mpfr c(kPrecisePrecision);
  precise_cdf(c.get(), t_, s_, level, r);
  next_word(c.get());  // words 0 and 1 are in the table
  next_word(c.get());
  std::vector<std::uint64_t> words(kPreciseWords);
  for (auto& w : words) w = next_word(c.get());
  check_margin(c.get(), "exact geometric sampler", "a CDF value at 1024 bits");
  return words;
}

std::shared_ptr<const ExactGeometric> ExactGeometric::shared(std::uint64_t t, std::uint64_t s) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const ExactGeometric>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& entry = cache[{t, s}];
  if (!entry) entry = std::make_shared<const ExactGeometric>(t, s);
  return entry;
}

}  // namespace privrace
