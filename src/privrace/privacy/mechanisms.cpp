#include "privrace/privacy/mechanisms.hpp"

#include <array>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/poisson_distribution.hpp>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "privrace/core/error.hpp"

namespace privrace {

bool bernoulli_exp(RandomSource& rng, std::uint64_t num, std::uint64_t den) {
  // gamma = num / den. For gamma <= 1: the parity of the first K with Bernoulli(gamma / K) = 0
  // is Bernoulli(exp(-gamma)). For gamma > 1: exp(-gamma) = exp(-1)^floor(gamma) exp(-frac).
  while (num > den) {
    if (!bernoulli_exp(rng, 1, 1)) return false;
    num -= den;
  }
  std::uint64_t k = 1;
  for (;;) {
    unsigned __int128 denk = static_cast<unsigned __int128>(den) * k;
    if (denk > std::numeric_limits<std::uint64_t>::max()) throw Error("bernoulli_exp: denominator overflow");
    if (!rng.bernoulli(num, static_cast<std::uint64_t>(denk))) break;  // Bernoulli(num / (den k)) = 0
    ++k;
  }
  return (k % 2) == 1;
}

namespace {
// The source as a UniformRandomBitGenerator of 64-bit words, for Boost.Random's distributions.
struct WordEngine {
  using result_type = std::uint64_t;
  RandomSource& rng;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return rng.next(); }
};
}  // namespace

DiscreteLaplace::DiscreteLaplace(double scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) throw UsageError("discrete Laplace scale must be positive and finite");
  // Represent the scale as t / 2^k with t in [2^12, 2^13) (or k = 0 for large scales), rounding
  // t up: the realised epsilon is at most the requested one, relatively smaller by < 2^-12.
  // A small t keeps the uniform draw U in [0, t) short: the sampler is bound by CSPRNG bits.
  constexpr double kMaxScale = 0x1.0p50;
  if (scale > kMaxScale) throw UsageError("noise scale above 2^50: epsilon is too small for this sketch");
  int k = 0;
  double scaled = scale;
  while (scaled < 0x1.0p12 && k < 60) {
    scaled *= 2.0;
    ++k;
  }
  t_ = static_cast<std::uint64_t>(std::ceil(scaled));
  s_ = std::uint64_t{1} << k;
}

std::int64_t DiscreteLaplace::sample(RandomSource& rng) const {
  // CKS 2020, Algorithm 2: X = U + t V is geometric with P(X = x) ~ exp(-x / t); Y = floor(X / s)
  // is then geometric with parameter exp(-s / t); a random sign, rejecting "-0", makes it two-sided.
  for (;;) {
    const std::uint64_t u = rng.below(t_);
    if (!bernoulli_exp(rng, u, t_)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp(rng, 1, 1)) ++v;
    const unsigned __int128 x = static_cast<unsigned __int128>(u) + static_cast<unsigned __int128>(t_) * v;
    const auto y = static_cast<std::int64_t>(x / s_);
    const bool negative = rng.bit();
    if (negative && y == 0) continue;
    return negative ? -y : y;
  }
}

std::shared_ptr<const ExactGeometric> DiscreteLaplace::bulk_sampler() const { return ExactGeometric::shared(t_, s_); }

namespace {

// counts[i] += +-M with M = ExactGeometric::sample_compact's draw (its word order), a sign bit
// per draw and "-0" rejected. `counts` is restrict: its stores do not alias the batch.
template <bool Divide>
void add_two_sided(std::int64_t* __restrict counts, std::size_t size, CompactWordBatch& batch, RandomSource& rng,
                   const ExactGeometric& g) {
  const auto& levels = g.compact_levels();
  const std::size_t n = levels.size();
  std::array<CompactLevelView, 32> views{};
  if (n == 0 || n > views.size()) throw Error("discrete Laplace: unexpected bulk sampler levels");
  for (std::size_t i = 0; i < n; ++i) views[i] = CompactLevelView(levels[i]);
  const CompactLevelView top = views[n - 1];
  const auto slow = [&](const ExactGeometric::CompactLevel& level, std::uint32_t v) {
    return g.sample_compact_slow(level, v, rng);
  };
  const std::uint32_t top_size = levels[n - 1].exact.size;
  const unsigned top_shift = static_cast<unsigned>(8 * (n - 1));
  const std::uint64_t divisor = g.divisor();
  for (std::size_t k = 0; k < size; ++k) {
    for (;;) {
      std::uint64_t m = 0;
      for (std::size_t i = 0; i + 1 < n; ++i) m += static_cast<std::uint64_t>(views[i].draw(batch, slow)) << (8 * i);
      std::uint64_t tail = top.draw(batch, slow);
      if (tail >= top_size) [[unlikely]] {  // M >= m: restart with m added (memorylessness)
        tail = top_size;
        for (;;) {
          const std::uint32_t r = top.draw(batch, slow);
          if (r < top_size) {
            tail += r;
            break;
          }
          tail += top_size;
        }
        if ((tail >> (63 - top_shift)) != 0)
          throw std::overflow_error("exact geometric sampler: sample beyond 2^63 (probability below 2^-10000)");
      }
      m += tail << top_shift;
      if constexpr (Divide) m /= divisor;
      const std::uint64_t negative = batch.bit();
      if (negative && m == 0) [[unlikely]]
        continue;
      counts[k] += static_cast<std::int64_t>((m ^ (0 - negative)) + negative);  // branch-free +-m
      break;
    }
  }
}

}  // namespace

void DiscreteLaplace::add_to(std::span<std::int64_t> counts, RandomSource& rng, const ExactGeometric* magnitude) const {
  if (!magnitude) {
    for (auto& c : counts) c += sample(rng);
    return;
  }
  // |Y| geometric with parameter a = exp(-s / t) (P(M = k) = (1 - a) a^k), a fair sign, and
  // "-0" rejected: P(Y = y) is then proportional to a^|y|, as in the construction above.
  CompactWordBatch batch(rng);
  if (magnitude->divisor() == 1) add_two_sided<false>(counts.data(), counts.size(), batch, rng, *magnitude);
  else add_two_sided<true>(counts.data(), counts.size(), batch, rng, *magnitude);
}

std::int64_t DiscreteLaplace::sample_sum(std::uint64_t n, RandomSource& rng) const {
  if (n == 0) return 0;
  const double r = static_cast<double>(s_) / static_cast<double>(t_);  // 1 / scale
  const double a = std::exp(-r), one_minus_a = -std::expm1(-r);
  WordEngine words{rng};
  auto negative_binomial = [&] {
    boost::random::gamma_distribution<double> gamma(static_cast<double>(n), a / one_minus_a);
    const double mean = gamma(words);
    if (!(mean > 0)) return std::int64_t{0};
    if (mean > 0x1.0p62) throw UsageError("discrete Laplace sum: n * scale too large for 64-bit counts");
    boost::random::poisson_distribution<std::int64_t, double> poisson(mean);
    return poisson(words);
  };
  const std::int64_t g1 = negative_binomial();
  return g1 - negative_binomial();
}

double DiscreteLaplace::variance() const {
  const double a = std::exp(-1.0 / scale());
  return 2.0 * a / ((1.0 - a) * (1.0 - a));
}

double floored_laplace_variance(double scale) {
  const double a = std::exp(-1.0 / scale);
  return 2.0 * a / ((1.0 - a) * (1.0 - a)) + 0.25;
}

double DiscreteLaplace::pmf(std::int64_t y) const {
  const double a = std::exp(-1.0 / scale());
  return (1.0 - a) / (1.0 + a) * std::pow(a, std::abs(static_cast<double>(y)));
}

double sample_laplace(RandomSource& rng, double scale) {
  // Inversion: a uniform sign times an Exp(1) magnitude.
  const double magnitude = -std::log(rng.open_unit()) * scale;
  return (rng.next() & 1) ? magnitude : -magnitude;
}

double sample_normal(RandomSource& rng) {
  const double u1 = rng.open_unit(), u2 = rng.unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}


void fill_normal(RandomSource& rng, double* out, std::size_t n) {
  WordEngine words{rng};
  boost::random::normal_distribution<double> normal;
  for (std::size_t i = 0; i < n; ++i) out[i] = normal(words);
}

namespace {
double std_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// delta achieved by Gaussian noise of std sigma at sensitivity l2 (Balle & Wang 2018, Thm 8).
double gaussian_delta(double epsilon, double l2, double sigma) {
  const double a = l2 / (2.0 * sigma), b = epsilon * sigma / l2;
  return std_normal_cdf(a - b) - std::exp(epsilon) * std_normal_cdf(-a - b);
}
}  // namespace

double analytic_gaussian_sigma(double epsilon, double delta, double l2) {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) throw UsageError("epsilon must be positive and finite");
  if (!(delta > 0.0 && delta < 1.0)) throw UsageError("delta must be in (0, 1) for the Gaussian mechanism");
  if (!(l2 > 0.0)) throw UsageError("L2 sensitivity must be positive");
  // delta(sigma) decreases in sigma: bracket, then bisect to the smallest admissible sigma
  // (rounding the answer up keeps the guarantee).
  double lo = 1e-12 * l2, hi = l2;
  while (gaussian_delta(epsilon, l2, hi) > delta) hi *= 2.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (gaussian_delta(epsilon, l2, mid) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
}

}  // namespace privrace
