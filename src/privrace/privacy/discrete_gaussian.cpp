#include "privrace/privacy/discrete_gaussian.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

// <cstdint> before mpfr.h declares mpfr_get_uj.
#include <cstdint>
#include <gmp.h>
#include <mpfr.h>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mpfr_words.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace {

double zcdp_rho(double epsilon, double delta) {
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    throw UsageError("zCDP: epsilon " + std::to_string(epsilon) + " is invalid; expected a finite epsilon > 0");
  if (!(delta > 0 && delta < 1)) throw UsageError("zCDP: delta " + std::to_string(delta) + " is outside (0, 1)");
  const double l = std::log(1.0 / delta);
  // sqrt(rho) = sqrt(l + eps) - sqrt(l), computed as eps / (sqrt(l + eps) + sqrt(l)): no
  // cancellation for small epsilon.
  const double root = epsilon / (std::sqrt(l + epsilon) + std::sqrt(l));
  return root * root;
}

double zcdp_epsilon(double rho, double delta) { return rho + 2.0 * std::sqrt(rho * std::log(1.0 / delta)); }

namespace {

using mpfr_words::check_margin;
using mpfr_words::Mpfr;
using mpfr_words::next_word;

using u128 = unsigned __int128;

// Bernoulli(a / b) exactly for 0 <= a <= b, 0 < b < 2^127: a uniform integer below b by
// rejection from the next power of two, compared with a.
bool bernoulli_ratio(RandomSource& rng, u128 a, u128 b) {
  int bits = 0;
  for (u128 v = b - 1; v != 0; v >>= 1) ++bits;
  for (;;) {
    u128 r = (static_cast<u128>(rng.next()) << 64) | rng.next();
    r = bits == 0 ? 0 : (bits >= 128 ? r : (r & ((static_cast<u128>(1) << bits) - 1)));
    if (r < b) return r < a;
  }
}

// Bernoulli(exp(-num / den)) exactly, for num < den <= 2^100 (CKS 2020, Algorithm 1: the parity
// of the first K with Bernoulli(gamma / K) = 0).
bool bernoulli_exp_fraction(RandomSource& rng, u128 num, u128 den) {
  for (std::uint64_t k = 1;; ++k) {
    if (k > (std::uint64_t{1} << 27)) throw Error("discrete Gaussian: Bernoulli(exp) ran past 2^27 steps");
    if (!bernoulli_ratio(rng, num, den * k)) return (k % 2) == 1;
  }
}

}  // namespace

DiscreteGaussian::DiscreteGaussian(double sigma) {
  if (!(sigma > 0) || !(sigma <= 1e7))
    throw UsageError("discrete Gaussian: sigma " + std::to_string(sigma) +
                     " is outside (0, 10^7] (the exact sampler's range); expected a larger privacy budget");
  t_ = static_cast<std::uint64_t>(std::floor(sigma)) + 1;
  const double s2 = std::nextafter(sigma * sigma, std::numeric_limits<double>::infinity());
  // The largest q = 2^k (k <= 20) keeping the acceptance test's denominator 2 p q t^2 within 2^100.
  // p = ceil(sigma^2 q) must fit 64 bits: near sigma = 10^7, q = 2^20 gives 1e20, whose cast
  // was undefined (it came out 0, and sample() divided by 2 p q t^2 = 0: SIGFPE).
  for (int k = 20; k >= 0; --k) {
    q_ = std::uint64_t{1} << k;
    if (!(s2 * static_cast<double>(q_) < 0x1p63)) continue;
    p_ = static_cast<std::uint64_t>(std::ceil(s2 * static_cast<double>(q_)));
    const u128 den = static_cast<u128>(2) * p_ * q_ * t_ * t_;
    if (den <= (static_cast<u128>(1) << 100)) return;
  }
  throw UsageError("discrete Gaussian: sigma " + std::to_string(sigma) + " is beyond the exact sampler's range");
}

std::int64_t DiscreteGaussian::sample(RandomSource& rng) const {
  // CKS 2020, Algorithm 3: a discrete Laplace proposal of scale t, accepted with probability
  // exp(-(|z| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|z| q t - p)^2 / (2 p q t^2)).
  const u128 den = static_cast<u128>(2) * p_ * q_ * t_ * t_;
  for (;;) {
    const std::uint64_t u = rng.below(t_);
    if (!bernoulli_exp(rng, u, t_)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp(rng, 1, 1)) ++v;
    const u128 x = static_cast<u128>(u) + static_cast<u128>(t_) * v;
    const bool negative = rng.bit();
    if (negative && x == 0) continue;
    // x >= 2^62 or |a| >= 2^64 means an acceptance probability below exp(-2^28) (x beyond
    // 10^4 sigma): rejected, which moves less than exp(-2^28) of probability. Otherwise
    // x q t < 2^62 2^44 fits.
    if ((x >> 62) != 0) continue;
    const u128 xqt = x * q_ * t_;
    const u128 a = xqt >= p_ ? xqt - p_ : p_ - xqt;
    if ((a >> 64) != 0) continue;
    const u128 num = a * a;
    u128 whole = num / den;
    bool ok = true;
    for (; whole > 0 && ok; --whole) ok = bernoulli_exp(rng, 1, 1);
    if (ok) ok = bernoulli_exp_fraction(rng, num % den, den);
    if (ok) return negative ? -static_cast<std::int64_t>(x) : static_cast<std::int64_t>(x);
  }
}

double DiscreteGaussian::pmf(std::int64_t y) const {
  const double s2 = sigma2();
  const auto reach = static_cast<std::int64_t>(std::ceil(40.0 * std::sqrt(s2))) + 10;
  double z = 0.0;
  for (std::int64_t k = -reach; k <= reach; ++k) z += std::exp(-static_cast<double>(k) * static_cast<double>(k) / (2.0 * s2));
  const auto d = static_cast<double>(y);
  return std::exp(-d * d / (2.0 * s2)) / z;
}

// ---------------------------------------------------------------- the table sampler

namespace {

using mpfr_words::kPreciseWords;
using mpfr_words::kPrecisePrecision;
using mpfr_words::kTablePrecision;




// The terms H(k) = exp(-k^2 c), c = q / (2 p), by H(k + 1) = H(k) r^(2k + 1), r = exp(-c): two
// multiplications a term. After K terms the relative error is below K^2 2^-precision (K <= 2^21
// here), and the argument's rounding moves exp(-k^2 c) by at most k^2 c 2^-precision <= 2^10
// 2^-precision relatively for the k that matter (H(k) >= 2^-precision).
class GaussianTerms {
 public:
  GaussianTerms(std::uint64_t p, std::uint64_t q, mpfr_prec_t precision)
      : r2_(precision), ratio_(precision), h_(precision) {
    Mpfr c(precision);
    mpfr_set_ui(c.get(), q, MPFR_RNDN);
    mpfr_div_ui(c.get(), c.get(), p, MPFR_RNDN);
    mpfr_div_2ui(c.get(), c.get(), 1, MPFR_RNDN);  // c = q / (2p)
    mpfr_neg(c.get(), c.get(), MPFR_RNDN);
    mpfr_exp(ratio_.get(), c.get(), MPFR_RNDN);  // r^1 = H(1) / H(0)
    mpfr_sqr(r2_.get(), ratio_.get(), MPFR_RNDN);
    mpfr_set_ui(h_.get(), 1, MPFR_RNDN);
  }
  mpfr_ptr term() { return h_.get(); }  // H(k)
  void advance() {                      // k -> k + 1
    mpfr_mul(h_.get(), h_.get(), ratio_.get(), MPFR_RNDN);
    mpfr_mul(ratio_.get(), ratio_.get(), r2_.get(), MPFR_RNDN);
  }

 private:
  Mpfr r2_, ratio_, h_;
};

// The magnitude's weights W(0) = 1, W(k) = 2 H(k) for k >= 1 (both signs of Y).
void add_weight(mpfr_ptr sum, GaussianTerms& terms, std::uint64_t k) {
  if (k == 0) mpfr_add_ui(sum, sum, 1, MPFR_RNDN);
  else {
    mpfr_add(sum, sum, terms.term(), MPFR_RNDN);
    mpfr_add(sum, sum, terms.term(), MPFR_RNDN);
  }
}

// Z = sum_{k >= 0} W(k) = sum_y exp(-y^2 c), summed until a term falls below
// 2^-(precision + 40): the rest is below twice that term over 1 - r^(2K + 1), under
// 2^-(precision + 20) for the sigmas tabulated (Z >= 1).
void normaliser(mpfr_ptr z, std::uint64_t p, std::uint64_t q, mpfr_prec_t precision) {
  GaussianTerms terms(p, q, precision);
  mpfr_set_ui(z, 0, MPFR_RNDN);
  const long stop = -static_cast<long>(precision) - 40;
  for (std::uint64_t k = 0; mpfr_cmp_ui_2exp(terms.term(), 1, stop) >= 0; ++k) {
    if (k > (std::uint64_t{1} << 22)) throw Error("discrete Gaussian table: normaliser did not converge");
    add_weight(z, terms, k);
    terms.advance();
  }
}

using u128_t = unsigned __int128;

}  // namespace

DiscreteGaussianTable::DiscreteGaussianTable(const DiscreteGaussian& noise) : p_(noise.p_), q_(noise.q_) {
  if (!(noise.sigma2() <= DiscreteGaussian::kMaxTableSigma * DiscreteGaussian::kMaxTableSigma * (1.0 + 1e-9)))
    throw UsageError("discrete Gaussian table: sigma above " + std::to_string(DiscreteGaussian::kMaxTableSigma));
  // N = the smallest k with k^2 c > 32, i.e. k^2 q > 64 p: H(N - 1) >= e^-32, so consecutive
  // entries differ by at least e^-32 / Z > 2^-64 (Z < 1.3 sigma + 1) and their first words
  // are strictly increasing; P(M >= N) <= e^-32 (1 + ...) goes to the exact tail sampler.
  std::uint64_t n = static_cast<std::uint64_t>(std::floor(8.0 * std::sqrt(noise.sigma2())));
  while (n > 0 && static_cast<u128_t>(n) * n * q_ > static_cast<u128_t>(64) * p_) --n;
  while (!(static_cast<u128_t>(n) * n * q_ > static_cast<u128_t>(64) * p_)) ++n;
  ExactGeometric::Level level;
  level.shift = 0;
  level.size = static_cast<std::uint32_t>(n);
  level.truncated = false;  // r = N means U >= C(N): the tail
  level.hi.resize(n + 1);
  level.lo.resize(n + 1);
  Mpfr z(kTablePrecision), c(kTablePrecision), sum(kTablePrecision);
  normaliser(z.get(), p_, q_, kTablePrecision);
  GaussianTerms terms(p_, q_, kTablePrecision);
  mpfr_set_ui(sum.get(), 0, MPFR_RNDN);
  for (std::uint64_t k = 0; k <= n; ++k) {
    if (k == 0) {
      level.hi[0] = level.lo[0] = 0;  // C(0) = 0 exactly
    } else {
      mpfr_div(c.get(), sum.get(), z.get(), MPFR_RNDN);  // C(k) = (W(0) + ... + W(k - 1)) / Z
      level.hi[k] = next_word(c.get());
      level.lo[k] = next_word(c.get());
      check_margin(c.get(), "discrete Gaussian table", "a CDF entry");
      if (level.hi[k] <= level.hi[k - 1]) throw Error("discrete Gaussian table: CDF entries closer than 2^-64");
    }
    add_weight(sum.get(), terms, k);
    terms.advance();
  }
  // Guides of at most 2^18 buckets leaving at most 1/32 of the probability to scanned buckets.
  level_ = ExactGeometric::compact(std::move(level), 18, 5);
}

std::shared_ptr<const DiscreteGaussianTable> DiscreteGaussianTable::shared(const DiscreteGaussian& noise) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const DiscreteGaussianTable>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& entry = cache[{noise.p_, noise.q_}];
  if (!entry) entry = std::make_shared<const DiscreteGaussianTable>(noise);
  return entry;
}

std::vector<std::uint64_t> DiscreteGaussianTable::precise_words(std::uint32_t r) const {
  Mpfr z(kPrecisePrecision), sum(kPrecisePrecision);
  normaliser(z.get(), p_, q_, kPrecisePrecision);
  GaussianTerms terms(p_, q_, kPrecisePrecision);
  mpfr_set_ui(sum.get(), 0, MPFR_RNDN);
  for (std::uint32_t k = 0; k < r; ++k) {
    add_weight(sum.get(), terms, k);
    terms.advance();
  }
  mpfr_div(sum.get(), sum.get(), z.get(), MPFR_RNDN);
  next_word(sum.get());  // words 0 and 1 are in the table
  next_word(sum.get());
  std::vector<std::uint64_t> words(kPreciseWords);
  for (auto& w : words) w = next_word(sum.get());
  check_margin(sum.get(), "discrete Gaussian table", "a CDF value at 1024 bits");
  return words;
}

std::uint32_t DiscreteGaussianTable::resolve(std::uint32_t v32, RandomSource& rng) const {
  return ExactGeometric::resolve_compact_tie(level_.exact, v32, rng, [this](std::uint32_t r) { return precise_words(r); });
}

std::uint64_t DiscreteGaussianTable::sample_tail(RandomSource& rng) const {
  // P(M = N + g) is proportional to W(N + g) = 2 exp(-(N + g)^2 c) = exp(-N^2 c) exp(-2 N g c) exp(-g^2 c):
  // propose g geometric with parameter exp(-2 N c) = exp(-N q / p) (CKS 2020, Algorithm 2: X
  // geometric of scale p by U + p V, g = floor(X / (N q))) and accept with probability
  // exp(-g^2 q / (2 p)). A g of 2^40 or more (proposal probability below exp(-2^28) for the
  // sigmas tabulated) is rejected outright, as sample() rejects its far proposals.
  const std::uint64_t n = level_.exact.size;
  const std::uint64_t t = p_, s = n * q_;
  const u128_t den = static_cast<u128_t>(2) * p_;
  for (;;) {
    const std::uint64_t u = rng.below(t);
    if (!bernoulli_exp(rng, u, t)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp(rng, 1, 1)) ++v;
    const u128_t g = (static_cast<u128_t>(u) + static_cast<u128_t>(t) * v) / s;
    if ((g >> 40) != 0) continue;
    const u128_t num = g * g * q_;
    bool ok = true;
    for (u128_t whole = num / den; whole > 0 && ok; --whole) ok = bernoulli_exp(rng, 1, 1);
    if (ok) ok = bernoulli_exp_fraction(rng, num % den, den);
    if (ok) return n + static_cast<std::uint64_t>(g);
  }
}

std::shared_ptr<const DiscreteGaussianTable> DiscreteGaussian::bulk_sampler() const {
  if (!(sigma2() <= kMaxTableSigma * kMaxTableSigma)) return nullptr;
  return DiscreteGaussianTable::shared(*this);
}

void DiscreteGaussian::add_to(std::span<std::int64_t> counts, RandomSource& rng, const DiscreteGaussianTable* table) const {
  if (!table) {
    for (auto& c : counts) c += sample(rng);
    return;
  }
  // Y = +-M with M = |Y| from the table (weights W(0) = 1, W(k) = 2 exp(-k^2 c)) and a fair
  // sign (-0 = 0): P(Y = y) = exp(-y^2 c) / Z for every y, as sample()'s. No draw is rejected.
  CompactWordBatch batch(rng);
  const CompactLevelView view(table->level());
  const std::uint32_t n = table->size();
  const auto slow = [&](const ExactGeometric::CompactLevel&, std::uint32_t v) { return table->resolve(v, rng); };
  std::int64_t* __restrict out = counts.data();
  const std::size_t size = counts.size();
  for (std::size_t k = 0; k < size; ++k) {
    std::uint64_t m = view.draw(batch, slow);
    if (m >= n) [[unlikely]]
      m = table->sample_tail(rng);
    const std::uint64_t negative = batch.bit();
    out[k] += static_cast<std::int64_t>((m ^ (0 - negative)) + negative);  // branch-free +-m
  }
}

void DiscreteGaussian::add_to_blocks(std::span<std::int64_t> counts, const DiscreteGaussianTable* table,
                                     std::optional<std::uint64_t> seed) const {
  const std::size_t cells = counts.size();
  const std::size_t blocks = (cells + kNoiseBlock - 1) / kNoiseBlock;
  std::exception_ptr failure;
#pragma omp parallel if (blocks > 1)
  {
    std::unique_ptr<RandomSource> os_rng;
    if (!seed) os_rng = std::make_unique<CryptoRandom>();
#pragma omp for schedule(dynamic, 1)
    for (std::size_t b = 0; b < blocks; ++b) {
      try {
        std::unique_ptr<RandomSource> block_rng;
        if (seed) block_rng = std::make_unique<SeededRandom>(derive_seed(*seed, b));
        const std::size_t at = b * kNoiseBlock;
        add_to(counts.subspan(at, std::min(kNoiseBlock, cells - at)), seed ? *block_rng : *os_rng, table);
      } catch (...) {
#pragma omp critical(privrace_gaussian_noise_error)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace privrace
