#include "privrace/privacy/discrete_gaussian.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "privrace/core/error.hpp"
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

}  // namespace privrace
