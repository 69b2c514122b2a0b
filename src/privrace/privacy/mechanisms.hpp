#pragma once
// Noise mechanisms. Integer counts get integer noise: the default is the discrete Laplace
// (two-sided geometric) distribution drawn by an exact sampler that uses only uniform
// integers (Canonne, Kamath & Steinke 2020), so there is no floating-point Laplace whose
// low-order bits leak the true value (Mironov 2012).
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "privrace/core/random.hpp"
#include "privrace/privacy/exact_geometric.hpp"

namespace privrace {

// Bernoulli(exp(-num/den)) exactly, for integers num >= 0, den > 0 (CKS 2020, Algorithm 1).
bool bernoulli_exp(RandomSource& rng, std::uint64_t num, std::uint64_t den);

// Discrete Laplace with P(Y = y) proportional to exp(-|y| / scale), scale = t / s rational.
// The requested scale is rounded UP to the rational t / 2^k (never less noise than asked).
class DiscreteLaplace {
 public:
  explicit DiscreteLaplace(double scale);
  // The Bernoulli(exp) construction: no set-up cost, about 150 ns a draw.
  std::int64_t sample(RandomSource& rng) const;
  // The table-inversion sampler of |Y| (exact_geometric.hpp) for add_to: same distribution,
  // tens of milliseconds to set up, about ten nanoseconds a draw, at every scale.
  std::shared_ptr<const ExactGeometric> bulk_sampler() const;
  // counts[i] += a fresh sample, for every i; the table sampler when `magnitude` is given.
  void add_to(std::span<std::int64_t> counts, RandomSource& rng, const ExactGeometric* magnitude) const;
  // The sum of n independent draws, in O(1): a draw is G1 - G2 with G1, G2 independent
  // geometric (P(G = k) = (1 - a) a^k), so the sum is NB(n, 1 - a) - NB(n, 1 - a), each negative
  // binomial drawn as Poisson(Gamma(n, a / (1 - a))) with Boost.Random's samplers (exact in
  // distribution to double precision). For simulations of many players' summed reports.
  std::int64_t sample_sum(std::uint64_t n, RandomSource& rng) const;
  double scale() const { return static_cast<double>(t_) / static_cast<double>(s_); }  // the scale used
  double variance() const;  // 2a / (1 - a)^2 with a = exp(-1/scale)
  double pmf(std::int64_t y) const;  // (1 - a) / (1 + a) a^|y|

 private:
  std::uint64_t t_, s_;
};

// Continuous Laplace(0, scale) by inversion of a CSPRNG uniform. Used only where a method
// releases real numbers (baselines) and for the paper's floor(S + Lap) fidelity option.
double sample_laplace(RandomSource& rng, double scale);
// Exact variance of floor(c + Lap(scale)) for an integer count c: floor(L) + 1/2 is +-(G + 1/2)
// with G geometric of ratio a = exp(-1/scale), so 2a / (1 - a)^2 + 1/4 (docs/privacy.md). The
// usual 2 scale^2 + 1/12 is 0.4% low at scale 1, where the thorough audit tells them apart.
double floored_laplace_variance(double scale);
// Standard normal by Box-Muller.
double sample_normal(RandomSource& rng);
// Standard normals in bulk: Boost.Random's ziggurat (exact in distribution to double precision,
// a table look-up and a compare for most draws), about 8x the speed of Box-Muller's log and cos
// (bench_ldp_mean, BM_Normal*). A different stream from sample_normal's for the same seed.
void fill_normal(RandomSource& rng, double* out, std::size_t n);

// Smallest sigma for which Gaussian noise on a query with L2 sensitivity `l2` is
// (epsilon, delta)-DP: the analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8), valid
// for every epsilon > 0, unlike the classic sqrt(2 ln(1.25/delta)) bound that needs epsilon < 1.
double analytic_gaussian_sigma(double epsilon, double delta, double l2);

}  // namespace privrace
