#pragma once
// The local-DP ERM task family (Wang, Gaboardi & Xu 2018, "Empirical Risk Minimization in
// Non-interactive Local Differential Privacy"): excess empirical risk against the number of
// simulated players n, for Algorithm 2 (ldp_bernstein), Algorithm 3 (ldp_bernstein_1bit),
// input perturbation, the interactive LDP-SGD of Duchi, Jordan & Wainwright, and the
// non-private optimum. See experiments/README.md and configs/README.md.
#include "experiment.hpp"

namespace privrace::experiments {

// Tasks ldp_erm, ldp_marginals (Section 6: k-way marginals by Chebyshev Algorithm 4, per-query
// randomised response, central histogram) and ldp_highdim (Section 7: sparse linear regression by
// projection + compressed sensing, against full-dimension LDP-SGD), with their methods.
void register_ldp_task(Registry& registry);

// The non-private optimum of an ldp_erm config for every (source, p) its methods sweep, on
// `players` players: theta*, its distance to the boundary of the box [lo, hi]^p and the range
// max_C L - L* of the loss over the box (tests/experiments/test_ldp_erm.cpp checks that theta*
// is interior for the shipped configs).
struct LdpErmOptimum {
  std::string source;
  int p = 1;
  std::size_t players = 0;
  std::vector<double> theta;
  double boundary_distance = 0;
  double loss_range = 0;
  double risk = 0;
};
std::vector<LdpErmOptimum> ldp_erm_optima(const ExperimentConfig& cfg, const RunEnvironment& env, std::size_t players);
// Task ldp_smooth (Section 6.2: Gaussian-kernel smooth queries; trigonometric Algorithm 5,
// per-query LDP averaging) and its methods (ldp_smooth.cpp).
void register_ldp_smooth(Registry& registry);

}  // namespace privrace::experiments
