#pragma once
// The discrete Gaussian mechanism and the zCDP budget conversions (MST, AIM and their audit
// path). Derivations: docs/privacy-baselines.md, "MST and AIM".
#include <cstdint>

#include "privrace/core/random.hpp"

namespace privrace {

// rho with rho + 2 sqrt(rho log(1/delta)) = epsilon (the zCDP -> (epsilon, delta) conversion of
// Bun & Steinke 2016, Proposition 1.3, solved for rho): (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2.
double zcdp_rho(double epsilon, double delta);
// epsilon = rho + 2 sqrt(rho log(1/delta)).
double zcdp_epsilon(double rho, double delta);

// The discrete Gaussian N_Z(0, sigma^2) (Canonne, Kamath & Steinke 2020, Algorithm 3), exact:
// sigma^2 is rounded UP to a rational p / q (never less noise) and every step draws uniform
// integers and Bernoulli(exp(-a/b)) variates. It is (1 / (2 sigma^2))-zCDP for an integer
// query of L2 sensitivity 1, as the continuous Gaussian (CKS 2020, Theorem 4). The acceptance
// test runs in 128-bit integers; proposals beyond about 10^4 sigma (acceptance probability below
// exp(-2^28)) are rejected outright. UsageError for a sigma outside (0, 10^7] (beyond, those
// integers would overflow).
class DiscreteGaussian {
 public:
  explicit DiscreteGaussian(double sigma);
  std::int64_t sample(RandomSource& rng) const;
  double sigma2() const { return static_cast<double>(p_) / static_cast<double>(q_); }  // used

 private:
  std::uint64_t p_, q_, t_;
};

}  // namespace privrace
