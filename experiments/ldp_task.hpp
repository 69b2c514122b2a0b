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
// Task ldp_smooth (Section 6.2: Gaussian-kernel smooth queries; trigonometric Algorithm 5,
// per-query LDP averaging) and its methods (ldp_smooth.cpp).
void register_ldp_smooth(Registry& registry);

}  // namespace privrace::experiments
