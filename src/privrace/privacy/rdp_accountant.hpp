#pragma once
// Renyi-DP accountant for the Poisson-subsampled Gaussian mechanism (DP-SGD): Mironov, Talwar
// & Zhang, "Renyi Differential Privacy of the Sampled Gaussian Mechanism" (2019).
//
// One step: each record joins the batch independently with probability q, the sum of the
// batch's (clipped, L2 sensitivity C) contributions gets N(0, sigma^2 C^2 I). For neighbours
// that add or remove one record its RDP at order alpha > 1 is log(A_alpha) / (alpha - 1) with
//   A_alpha = E_{z ~ mu0} [((1 - q) + q mu1(z) / mu0(z))^alpha],  mu0 = N(0, sigma^2),
//   mu1 = N(1, sigma^2)
// (their Theorem 4 / Section 3.3):
//  * integer alpha: A = sum_{k=0..alpha} C(alpha, k) (1 - q)^(alpha - k) q^k exp((k^2 - k) / (2 sigma^2));
//  * fractional alpha: the two convergent series of their Section 3.3, with erfc tails
//    (summed until both terms fall below exp(-30) of the running total).
// Composition: T steps give T times the RDP. Conversion to (epsilon, delta) (Mironov 2017,
// Proposition 3): epsilon = min over alpha of RDP(alpha) + log(1 / delta) / (alpha - 1).
// Everything is in log space (lgamma binomials, log-sum-exp), in double precision.
#include <cstddef>
#include <vector>

namespace privrace {

// Orders used by default: 1.1, 1.2, ..., 10.9, 11, 12, ..., 256 (a superset of the usual
// Opacus / TF Privacy grids) and 17 larger orders up to 8192 for small epsilon targets (more
// orders can only lower epsilon, never raise it).
std::vector<double> default_rdp_orders();

// RDP of ONE step at order alpha > 1 (q in [0, 1], sigma > 0). +inf when it overflows.
double subsampled_gaussian_rdp(double q, double sigma, double alpha);

struct RdpEpsilon {
  double epsilon = 0;
  double order = 0;  // the minimising alpha
};

// (epsilon, delta) of `steps` compositions, minimised over `orders`. UsageError for q outside
// [0, 1], sigma <= 0, delta outside (0, 1), or no order > 1.
RdpEpsilon dp_sgd_epsilon(double q, double sigma, std::size_t steps, double delta,
                          const std::vector<double>& orders = default_rdp_orders());

struct NoiseMultiplierSearch {
  double sigma_min = 0.1, sigma_max = 500.0;  // the search range
  double relative_tolerance = 1e-4;           // on sigma
};

// The smallest noise multiplier (to the tolerance, rounded towards more noise) in
// [sigma_min, sigma_max] whose epsilon is at most target_epsilon: bisection on log sigma
// (epsilon decreases in sigma). UsageError when even sigma_max gives more than the target
// ("epsilon too small for any noise multiplier in [..]", naming both values), or a bad
// argument; sigma_min when it already meets the target.
double find_noise_multiplier(double target_epsilon, double q, std::size_t steps, double delta,
                             const NoiseMultiplierSearch& search = {},
                             const std::vector<double>& orders = default_rdp_orders());

}  // namespace privrace
