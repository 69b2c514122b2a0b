#include "privrace/ldp/randomizers.hpp"

#include <string>

#include "privrace/core/error.hpp"

namespace privrace::ldp {

void check_epsilon(double eps, const char* what) {
  if (!(eps > 0))
    throw UsageError(std::string(what) + " = " + std::to_string(eps) +
                     ": a local randomiser needs epsilon > 0 (infinity for no noise)");
}

BitRandomizer::BitRandomizer(double eps) {
  check_epsilon(eps);
  const std::uint64_t one = std::uint64_t{1} << kFractionBits;
  if (std::isinf(eps)) {
    hi_ = one;
    lo_ = 0;
    return;
  }
  // p_hi = 1 / (1 + e^-eps), rounded down to k / 2^52 and one step further for safety against
  // the long double rounding of expl: p_hi only shrinks, so log(p_hi / (1 - p_hi)) <= eps.
  const long double p = 1.0L / (1.0L + std::exp(-static_cast<long double>(eps)));
  std::uint64_t hi = static_cast<std::uint64_t>(std::floor(std::ldexp(p, kFractionBits)));
  if (hi > 0) --hi;
  if (hi <= one / 2) hi = one / 2 + 1;  // eps below 2^-50: the smallest representable gap
  hi_ = hi;
  lo_ = one - hi;
}

double BitRandomizer::effective_epsilon() const {
  if (lo_ == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(std::log(static_cast<long double>(hi_) / static_cast<long double>(lo_)));
}

double BitRandomizer::report_variance(double u) const {
  const double q = prob_one(u), gap = p_hi() - p_lo();
  return q * (1 - q) / (gap * gap);
}

LaplaceRandomizer::LaplaceRandomizer(double eps, std::uint64_t reports, std::uint64_t levels) : levels_(levels) {
  check_epsilon(eps);
  if (reports == 0) throw UsageError("LaplaceRandomizer: a player must send at least one report");
  if (levels == 0 || levels > (std::uint64_t{1} << 30))
    throw UsageError("LaplaceRandomizer: levels must be in [1, 2^30], got " + std::to_string(levels));
  if (std::isinf(eps)) return;
  // Sensitivity of one lattice report: L. Each of `reports` reports spends eps / reports.
  noise_ = std::make_unique<DiscreteLaplace>(static_cast<double>(levels) * static_cast<double>(reports) / eps);
  table_ = noise_->bulk_sampler();
}

void LaplaceRandomizer::report(std::span<const double> u, std::span<std::int64_t> out, RandomSource& rng) const {
  const double L = static_cast<double>(levels_);
  for (std::size_t j = 0; j < u.size(); ++j) {
    double x = u[j] < 0 ? 0 : (u[j] > 1 ? 1 : u[j]);
    x *= L;
    const double f = std::floor(x);
    // Unbiased stochastic rounding: up with probability x - floor(x) (53-bit uniform).
    out[j] = static_cast<std::int64_t>(f) + (rng.unit() < x - f ? 1 : 0);
  }
  if (noise_) noise_->add_to(out.subspan(0, u.size()), rng, table_.get());
}

double LaplaceRandomizer::report_variance() const {
  const double L = static_cast<double>(levels_);
  const double rounding = 0.25;  // Bernoulli rounding variance, at most 1/4 lattice step^2
  return (rounding + (noise_ ? noise_->variance() : 0.0)) / (L * L);
}

}  // namespace privrace::ldp
